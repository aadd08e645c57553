"""``resume_jump``: the losses right after a resume sit far above those before the checkpoint.

A resumed run must continue the run it resumes. When the watch's own state is restored with
:meth:`~labcoat.watch.Watcher.load_state_dict`, this invariant knows the last ``window`` losses
before the checkpoint; the median of the first ``steps`` losses after it must not lie ``z``
robust standard deviations (of that window, on a log scale while losses are positive) and a
fraction ``rel`` above their median. Weights that were not restored (``strict=False`` with a
``module.`` prefix), a checkpoint written from another object, inputs prepared differently on
resume all start the loss again from near the beginning; a fresh optimizer's first large steps
throw it up within a few steps. A median of several steps is judged, so one hard batch right
after the resume is not a jump (``spike`` judges single batches), and a falling curve, whose
window median lies above its latest losses, leaves room to spare. ``labcoat.check_resume``
checks the same before the first step, from the checkpoint itself.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any, Mapping

from labcoat.watch.invariants._robust import median_of, robust_scale
from labcoat.watch.invariants.base import INVARIANTS, Bound, Invariant, Violation
from labcoat.watch.sample import Sample, WatchContext


@INVARIANTS.register
class ResumeJump(Invariant):
    kind = "resume_jump"
    falsifies = "a resumed run continues the run it resumes"
    predicts = (
        "the median of the first `steps` losses after a resume lies within `z` robust standard "
        "deviations, and a fraction `rel`, of the median of the last `window` losses before it"
    )
    needs = frozenset({"losses"})
    options = {
        "window": (50, Bound(int, 5)),
        "steps": (10, Bound(int, 1)),
        "z": (3.0, Bound(float, 0.0, low_open=True)),
        "rel": (0.2, Bound(float, 0.0)),
    }

    def setup(self, context: WatchContext) -> None:
        super().setup(context)
        self.add_state("history", deque(maxlen=self.window))
        self.add_state("last_step", None)
        self.add_state("found", None)
        # not saved: a resume is what loading the saved state is
        self._before: list[float] | None = None
        self._resumed_after: int | None = None
        self._after: list[tuple[int, float]] = []
        self._judged = False

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        super().load_state_dict(state)
        if self.history:
            self._before = list(self.history)
            self._resumed_after = self.last_step
            self._after = []

    def idle_reason(self) -> str | None:
        if not self._judged:
            return "the run was not resumed from a saved watch state (Watcher.load_state_dict)"
        return None

    def update(self, sample: Sample) -> None:
        finite = [(s, v) for s, v in sample.losses if math.isfinite(v)]
        if self._before is not None and finite:
            self._after.extend(finite[: self.steps - len(self._after)])
            if len(self._after) >= self.steps:
                self.found = self._judge(self._before, self._after)
                self._before, self._judged = None, True
        self.history.extend(v for _, v in finite)
        if finite:
            self.last_step = finite[-1][0]

    def _judge(self, before: list[float], after: list[tuple[int, float]]) -> Violation | None:
        log = min(before) > 0 and min(v for _, v in after) > 0
        scale = math.log if log else float
        past = sorted(scale(v) for v in before)
        center = median_of(past)
        sigma = robust_scale(past, center)
        now = median_of(sorted(scale(v) for _, v in after))
        median_before = math.exp(center) if log else center
        median_after = math.exp(now) if log else now
        z = (now - center) / sigma
        if z < self.z or median_after <= median_before + self.rel * abs(median_before):
            return None
        first = after[0][0]
        return Violation(
            subject="loss",
            message=(
                f"after the resume at step {first} the loss's median over {len(after)} steps is "
                f"{median_after:.4g}, against {median_before:.4g} over the last {len(before)} "
                f"steps before the checkpoint ({z:.0f} robust SDs above): the run does not "
                "continue where it stopped; were the weights, the optimizer's state or the "
                "input preparation restored? (labcoat.check_resume names which)"
            ),
            value=median_after,
            evidence={
                "resumed_at_step": first,
                "last_step_before": self._resumed_after,
                "median_before": median_before,
                "median_after": median_after,
                "z": z,
                "scale": "log" if log else "linear",
            },
        )

    def compute(self) -> list[Violation]:
        return [] if self.found is None else [self.found]
