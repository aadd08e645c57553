"""``grad_explode``: the total gradient norm jumps far above the run's own recent history.

Judged on a log scale against the median and MAD of the last ``window`` samples rather than a
fixed constant: a norm must be ``factor`` times the recent median *and* ``z`` robust standard
deviations above it. The parameter whose own norm rose most, relative to its history, is named.

A total that rises while no parameter's own norm rises much is parameters joining the total,
not an explosion: a backbone unfrozen on purpose adds its gradients to a converged head's
small ones and the total jumps tenfold. Over a fixed set of parameters the total cannot rise by
``factor`` unless some parameter rises by about as much, so one of them must have risen by at
least ``sqrt(factor)`` against its own recent median (the square root leaves room for medians
taken at different samples). Tuned on the unfreeze loops of
tests/watch/test_false_alarm_classes.py, whose largest own rise was 2.8x at totals 10-20x.

A rise of ``factor`` must last two samples in a row to be reported; one of ``factor`` squared
is reported at once. Healthy training has one-step bursts: a deep LayerNorm MLP under Adam
fitting random labels (a memorisation control) rose 12-36x for a single step, five times in
600 steps, and was back at its median the step after. A corrupted batch (inputs scaled by
1e4) gives a rise of thousands, at once; a run that is blowing up stays up.

A rise is no explosion if the window already holds a *precedent* from before it: a total that
stood out of its own stretch of samples at least half as far, and by at least half the ratio
(see _robust.precedented). Multi-task training that draws a task per batch gives a rarer task
with a larger loss gradients 100-300x the others' (an unweighted regression beside a
classifier, 1 batch in 7), each time it comes back. A run blowing up has no precedent: the
samples of the rise itself are left out.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from labcoat.watch.invariants._grad_history import GradWindowInvariant, window_options
from labcoat.watch.invariants._robust import (
    NEIGHBOURS,
    center_scale,
    local_deviations,
    precedented,
)
from labcoat.watch.invariants.base import INVARIANTS, Violation
from labcoat.watch.sample import Sample


@INVARIANTS.register
class GradExplode(GradWindowInvariant):
    kind = "grad_explode"
    falsifies = "the optimisation is stable"
    predicts = "the total gradient norm stays below `factor` times its recent median"
    options = window_options(10.0)

    def setup(self, context) -> None:
        super().setup(context)
        self.add_state("rising", None)  # the first step of the rise the last sample was part of
        self.add_state("risen", 0)  # the samples of that rise so far

    def load_state_dict(self, state) -> None:
        # checkpoints from before these were kept
        super().load_state_dict({"rising": None, "risen": 0, **state})

    def update(self, sample: Sample) -> None:
        if sample.grad_norms is None:
            return  # no optimizer step at this sample (e.g. skipped by a GradScaler)
        row, total = self.history.row(sample.grad_norms)
        if math.isnan(total) and sample.grad_norms:
            return  # non-finite gradients: the nonfinite invariant's business
        # (a sample with no gradient at all joins the window, as in grad_vanish, which needs it)
        self.found = None
        rise = None
        if self.history.filled >= self.min_history and math.isfinite(total):
            rise = self._judge(row, total, sample.step, self.rising)
        # one step's burst is healthy; a rise that lasts, or a huge one, is not (see above)
        lasting = self.rising is not None
        if rise is not None and (lasting or rise.evidence["ratio"] >= self.factor**2):
            self.found = rise
        self.rising = None if rise is None else self.rising if lasting else sample.step
        self.risen = 0 if rise is None else self.risen + 1
        self.history.push(row, total)

    def _judge(
        self, row: list[float] | np.ndarray, total: float, step: int, since: int | None
    ) -> Violation | None:
        # a rise of `factor` above the median is also one above the smallest value: cheap screen
        if not self.history.may_explode(total, math.log10(self.factor)):
            return None
        center, scale = center_scale(self.history.past_total())
        c, s = float(center), float(scale)
        if not math.isfinite(c):
            return None
        rise = total - c  # log10 units
        z = rise / s
        if rise < math.log10(self.factor) or z < self.z or self._precedented(rise):
            return None
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a column without any gradient
            per_param = np.asarray(row) - np.nanmedian(self.history.past_logs(), axis=0)
        per_param = np.where(np.isfinite(per_param), per_param, -np.inf)
        culprit = self.history.names[int(np.argmax(per_param))]
        culprit_ratio = 10 ** float(per_param.max())
        if culprit_ratio < math.sqrt(self.factor):  # parameters joined the total (see above)
            return None
        also = f" (above {self.factor:g}x since step {since})" if since is not None else ""
        return Violation(
            subject="gradients",
            message=(
                f"total gradient norm {10**total:.3g} at step {step} is {10**rise:.3g}x its "
                f"recent median {10**c:.3g}{also}; {culprit!r} rose most ({culprit_ratio:.3g}x "
                "its own)"
            ),
            value=10**total,
            evidence={
                "culprit": culprit,
                "ratio": 10**rise,
                "since_step": step if since is None else since,
                "culprit_ratio": culprit_ratio,
                "median": 10**c,
                "z_log10": z,
                "history": self.history.filled,
            },
        )

    def _precedented(self, rise: float) -> bool:
        """Whether the window, before this rise began, holds a total that stood out as far."""
        totals = self.history.recent_totals()
        before = totals[: len(totals) - self.risen]
        if len(before) < 2 * NEIGHBOURS + 1:
            return False
        return precedented(rise, local_deviations(before)[-1], math.log10(2))
