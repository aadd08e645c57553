"""``grad_vanish``: a parameter's gradient collapses far below its own recent history.

Judged per parameter, on a log scale, against the median and MAD of its last ``window``
gradient norms: a drop by ``factor`` that is also ``z`` robust standard deviations deep.

A parameter that had a gradient at every recent sample and then goes without one for some
samples in a row (a graph detached mid-run, a module replaced under an optimizer that still
holds the old one) counts as a collapse to zero. One sample is not enough: conditional
computation leaves a parameter without a gradient now and then (a mixture-of-experts layer
whose router sent no example of the batch to an expert: with 8 experts and batches of 16, an
expert that had a gradient for 80 steps in a row went without for one). So the gap must last
:data:`LOST_FOR` samples, and longer after a short clean record: long enough that a parameter
skipped at random, with a rate unknown but consistent with ``n`` samples that all had a
gradient, would make such a gap less likely than :data:`GAP_CHANCE` (Laplace's rule of
succession: ``(n+1)! g! / (n+g+1)!`` for a gap of ``g``): 4 samples after 10, 3 after 20.
Tuned on that router (tests/watch/test_false_alarm_classes.py): with batches of 16 it raised
nothing in six runs; with batches of 8, one run in five reported an expert the router was
leaving (after step 50 it never chose it again). A parameter whose ``requires_grad`` was set
to False was frozen on purpose: its missing gradient is no collapse.

A gradient that is only small (zero included) must stay down for two samples in a row: with
small batches through narrow ReLU layers, one batch now and then finds every unit below a
layer inactive and its gradient drops 1000-100000x for that step only (tuned on
``long_converged_cosine_to_zero`` in tests/watch/test_healthy_loops.py: eight such one-step
drops in 4000 steps, none two samples long). A cut graph or a dead layer stays down.

A sample at which every gradient is exactly zero is not judged: the loss had no slope at all
at that batch, as policy-gradient RL has whenever a batch's rewards are all equal (zero
advantages: a REINFORCE bandit whose policy had become sure warned at every such streak).
That is not gradient failing to reach some parameters; a loss that stops moving is no_trend's.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from labcoat.watch.invariants._grad_history import GradWindowInvariant, window_options
from labcoat.watch.invariants._robust import center_scale
from labcoat.watch.invariants.base import INVARIANTS, Violation
from labcoat.watch.sample import Sample

#: samples in a row without a gradient before a parameter that had one is reported, at least
LOST_FOR = 3
#: and at most this chance that a parameter skipped at random makes the gap (see above)
GAP_CHANCE = 1e-3


def gap_needed(clean: int) -> int:
    """Samples in a row without a gradient that count as lost, after ``clean`` samples that
    all had one (see the module docstring)."""
    gap = LOST_FOR
    while (clean + 1) * math.factorial(gap) * math.factorial(clean) > GAP_CHANCE * math.factorial(
        clean + gap + 1
    ):
        gap += 1
    return gap


@INVARIANTS.register
class GradVanish(GradWindowInvariant):
    kind = "grad_vanish"
    falsifies = "gradient still reaches every trained parameter"
    predicts = "no parameter's gradient norm drops below 1/`factor` of its recent median"
    severity = "warn"
    options = window_options(1000.0)

    def setup(self, context) -> None:
        super().setup(context)
        self.add_state("dropping", [])  # parameters down at the previous sample, unconfirmed
        # parameters that had a gradient at every sample of the window, then none: the step
        # of their first sample without one, the samples in a row since, and how many count
        self.add_state("gone", {})

    def load_state_dict(self, state) -> None:
        # checkpoints from before these were kept
        super().load_state_dict({"dropping": [], "gone": {}, **state})

    def update(self, sample: Sample) -> None:
        if sample.grad_norms is None:
            return
        row, total = self.history.row(sample.grad_norms)
        if math.isnan(total) and sample.grad_norms:
            return  # non-finite gradients: the nonfinite invariant's business
        self.found = None
        down: list[str] = []
        if total == -math.inf:  # every gradient exactly zero (see the module docstring)
            down = self.dropping
        elif self.history.filled >= self.min_history:
            self.found = self._judge(row, sample.step, down, sample.grad_disabled)
        else:
            self.gone = {}
        self.dropping = down
        self.history.push(row, total)

    def _judge(
        self, row: list[float] | np.ndarray, step: int, down: list[str], disabled: Sequence[str]
    ) -> Violation | None:
        """The violation at this sample, if any; ``down`` gets the parameters whose gradient is
        down now (a small one is reported once it is down at two samples in a row)."""
        # a drop of `factor` below the median is also one below the largest value: screen with
        # that cheap bound (and for a gradient gone missing) before anything else
        if not self.gone and not self.history.may_vanish(row, math.log10(self.factor)):
            return None
        past = self.history.past_logs()
        row = np.asarray(row, dtype=float)
        with np.errstate(all="ignore"):
            possible = row <= np.fmax.reduce(past, axis=0) - math.log10(self.factor)
        missing = np.isnan(row)
        seen = np.isfinite(past).sum(axis=0)
        now = row.copy()
        # samples of the window that had any gradient: a parameter missing from none of them
        # that is missing now starts a gap
        informative = int(np.isfinite(past).any(axis=1).sum())
        lost = self._count_gone(missing, seen == informative, informative, step, disabled)
        now[lost] = -np.inf
        possible |= lost
        enough = ((seen >= self.min_history) & possible) | lost
        if not enough.any():
            return None
        center, scale = center_scale(past[:, enough], axis=0)
        drop = np.full(len(now), -np.inf)
        z = np.full(len(now), -np.inf)
        with np.errstate(all="ignore"):
            drop[enough] = center - now[enough]
            z[enough] = drop[enough] / scale
        hit = enough & (drop >= math.log10(self.factor)) & (z >= self.z)
        down.extend(self.history.names[i] for i in np.flatnonzero(hit))
        before = set(self.dropping)
        was_down = np.array([n in before for n in self.history.names], dtype=bool)
        hit &= lost | was_down  # gone long enough, or small at the second sample in a row
        if not hit.any():
            return None
        names = [self.history.names[i] for i in np.flatnonzero(hit)]
        first = int(np.flatnonzero(hit)[0])
        name = self.history.names[first]
        more = f" ({len(names) - 1} more parameters likewise)" if len(names) > 1 else ""
        if lost[first]:
            since, count, _ = self.gone[name]
            what = f"has had no gradient for {count} samples (since step {since})"
            value = 0.0
        else:
            value = 10 ** float(now[first])
            what = f"has gradient norm {value:.3g}" if value > 0 else "has an all-zero gradient"
        median = 10 ** float(center[np.flatnonzero(enough).tolist().index(first)])
        return Violation(
            subject=name,
            message=f"{name!r} {what} at step {step}, against a recent median of {median:.3g}"
            f"{more}",
            value=value,
            evidence={"vanished": names[:50], "median": median, "drop_log10": float(drop[first])},
        )

    def _count_gone(
        self,
        missing: np.ndarray,
        clean: np.ndarray,
        informative: int,
        step: int,
        disabled: Sequence[str],
    ) -> np.ndarray:
        """Carry :attr:`gone` to this sample; True for the parameters gone long enough.
        ``clean``: the parameters that had a gradient at each of the window's ``informative``
        samples."""
        names = self.history.names
        off = set(disabled)
        starts = missing & clean
        gone = {}
        for i in np.flatnonzero(missing).tolist():
            name = names[i]
            if name in off:
                continue
            if name in self.gone:
                since, count, needed = self.gone[name]
                gone[name] = [since, count + 1, needed]
            elif starts[i]:
                gone[name] = [step, 1, gap_needed(informative)]
        self.gone = gone
        lost = np.zeros(len(names), dtype=bool)
        for name, (_, count, needed) in gone.items():
            if count >= needed:
                lost[self.history.index[name]] = True
        return lost
