"""``no_step``: the loop goes on but the optimizer no longer steps.

A condition around ``optimizer.step()`` that stops being true (a step counter past its end,
an accumulation modulus that is never hit), or a GradScaler that finds inf gradients at every
step and so skips every update: the loss is still computed and observed, nothing trains, and
the hooks that sample tensors never run. Judged on observe() calls: gradient accumulation
applies one step every k calls, so the alert needs ``factor`` times the run's usual number of
calls per applied step, and at least ``window`` calls, without one. A GradScaler that skips a
step now and then, or a few in a row while it calibrates its scale, stays well inside that.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from labcoat.watch.invariants.base import INVARIANTS, Bound, Invariant, Violation
from labcoat.watch.sample import Sample, WatchContext


@INVARIANTS.register
class NoStep(Invariant):
    kind = "no_step"
    falsifies = "every observed step (or accumulation cycle) updates the parameters"
    predicts = (
        "an optimizer step is applied within max(`window`, `factor` x the usual observe() "
        "calls per step) observe() calls"
    )
    needs = frozenset({"step_gaps"})
    options = {"window": (50, Bound(int, 2)), "factor": (4.0, Bound(float, 1.0))}

    def setup(self, context: WatchContext) -> None:
        super().setup(context)
        self.add_state("gaps", deque(maxlen=50))  # observe() calls per applied step, recent
        self.add_state("steps", 0)
        self.add_state("found", None)

    def update(self, sample: Sample) -> None:
        self.gaps.extend(sample.step_gaps)
        self.steps += len(sample.step_gaps)
        if sample.unapplied < self.window:  # the limit is never below the window
            self.found = None
            return
        usual = float(np.median(self.gaps)) if self.gaps else 1.0
        limit = max(self.window, self.factor * usual)
        if sample.unapplied < limit:
            self.found = None
            return
        if self.steps:
            since = (
                f"since the last applied step ({self.steps} applied so far, usually one every "
                f"{usual:g} calls)"
            )
        else:
            since = "and none has been applied since the watch started"
        self.found = Violation(
            subject="optimizer",
            message=(
                f"{sample.unapplied} observe() calls without an optimizer step {since}: is "
                "optimizer.step() behind a condition that no longer holds, or is a GradScaler "
                "skipping every step on inf gradients?"
            ),
            value=float(sample.unapplied),
            evidence={
                "observes_without_step": sample.unapplied,
                "usual_gap": usual,
                "limit": limit,
                "applied_steps": self.steps,
            },
        )

    def compute(self) -> list[Violation]:
        return [] if self.found is None else [self.found]
