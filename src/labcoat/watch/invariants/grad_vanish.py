"""``grad_vanish``: a parameter's gradient collapses far below its own recent history.

Judged per parameter, on a log scale, against the median and MAD of its last ``window``
gradient norms: a drop by ``factor`` that is also ``z`` robust standard deviations deep. A
parameter that had a gradient at every recent sample and now has none (a graph detached
mid-run) counts as a collapse to zero and is reported at once.

A gradient that is only small (zero included) must stay down for two samples in a row: with
small batches through narrow ReLU layers, one batch now and then finds every unit below a
layer inactive and its gradient drops 1000-100000x for that step only (tuned on
``long_converged_cosine_to_zero`` in tests/watch/test_healthy_loops.py: eight such one-step
drops in 4000 steps, none two samples long). A cut graph or a dead layer stays down.
"""

from __future__ import annotations

import math

import numpy as np

from labcoat.watch.invariants._grad_history import GradWindowInvariant, window_options
from labcoat.watch.invariants._robust import center_scale
from labcoat.watch.invariants.base import INVARIANTS, Violation
from labcoat.watch.sample import Sample


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

    def load_state_dict(self, state) -> None:
        super().load_state_dict({"dropping": [], **state})  # checkpoints from before it

    def update(self, sample: Sample) -> None:
        if sample.grad_norms is None:
            return
        row, total = self.history.row(sample.grad_norms)
        if math.isnan(total) and sample.grad_norms:
            return  # non-finite gradients: the nonfinite invariant's business
        self.found = None
        down: list[str] = []
        if self.history.filled >= self.min_history:
            self.found = self._judge(row, sample.step, down)
        self.dropping = down
        self.history.push(row, total)

    def _judge(self, row: list[float] | np.ndarray, step: int, down: list[str]) -> Violation | None:
        """The violation at this sample, if any; ``down`` gets the parameters whose gradient is
        down now (a small one is reported once it is down at two samples in a row)."""
        # a drop of `factor` below the median is also one below the largest value: screen with
        # that cheap bound (and for a gradient gone missing) before anything else
        if not self.history.may_vanish(row, math.log10(self.factor)):
            return None
        past = self.history.past_logs()
        row = np.asarray(row, dtype=float)
        with np.errstate(all="ignore"):
            possible = row <= np.fmax.reduce(past, axis=0) - math.log10(self.factor)
        missing = np.isnan(row)
        seen = np.isfinite(past).sum(axis=0)
        now = row.copy()
        lost = missing & (seen == self.history.filled)  # always had one, now has none
        now[lost] = -np.inf
        possible |= lost
        enough = (seen >= self.min_history) & possible
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
        hit &= lost | was_down  # a gradient gone reports at once, a small one the second time
        if not hit.any():
            return None
        names = [self.history.names[i] for i in np.flatnonzero(hit)]
        first = int(np.flatnonzero(hit)[0])
        name = self.history.names[first]
        more = f" ({len(names) - 1} more parameters likewise)" if len(names) > 1 else ""
        if lost[first]:
            what = "has no gradient any more"
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
