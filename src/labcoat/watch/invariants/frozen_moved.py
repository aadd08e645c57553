"""``frozen_moved``: a tensor that should stay put changed.

Covers parameters with ``requires_grad=False`` and everything passed in ``expect_frozen``;
for a declared module that includes its floating-point buffers, so BatchNorm running
statistics drifting in a "frozen" backbone left in train mode are caught too.

A declared tensor must not move at all. A parameter frozen by ``requires_grad=False`` alone is
reported once the optimizer's step has written to it (its version counter moved inside
``step()``): the frozen layer that keeps a zero gradient, which weight decay or momentum then
moves. One the user's own code writes is left alone: that is how a target network is kept (a
momentum encoder as in MoCo and BYOL, a mean teacher, an EMA copy inside the model), updated
under ``no_grad`` with its ``requires_grad`` off, and every one of them warned at every sample
before. Declare such a tensor in ``expect_frozen`` to have any change reported.
"""

from __future__ import annotations

import math

from labcoat.watch.invariants.base import INVARIANTS, Bound, Invariant, Violation
from labcoat.watch.sample import Sample, WatchContext


@INVARIANTS.register
class FrozenMoved(Invariant):
    kind = "frozen_moved"
    falsifies = "frozen parameters and buffers stay frozen"
    predicts = "the norm of every frozen tensor equals its value when the watch started"
    needs = frozenset({"frozen_norms"})
    options = {"rtol": (1e-6, Bound(float, 0.0))}

    def applies(self, context: WatchContext) -> str | None:
        if not context.frozen:
            return "no parameter has requires_grad=False and expect_frozen is empty"
        return None

    def setup(self, context: WatchContext) -> None:
        super().setup(context)
        self.add_state("moved", {})  # name -> (baseline norm, current norm)
        self.add_state("stepped", set())  # undeclared ones an optimizer step has written to

    def load_state_dict(self, state) -> None:
        # checkpoints from before it was kept: any step may have written then
        super().load_state_dict(
            {"stepped": set(self.context.frozen if self.context else ()), **state}
        )

    def update(self, sample: Sample) -> None:
        if sample.frozen_stepped:
            self.stepped |= sample.frozen_stepped
        if sample.frozen_norms is None or self.context is None:
            return
        baseline, reasons = self.context.frozen_baseline, self.context.frozen
        self.moved = {
            name: (baseline[name], now)
            for name, now in sample.frozen_norms.items()
            if (reasons[name] == "declared" or name in self.stepped)
            and _changed(baseline[name], now, self.rtol)
        }

    def compute(self) -> list[Violation]:
        if not self.moved or self.context is None:
            return []
        names = list(self.moved)
        first = names[0]
        before, now = self.moved[first]
        reasons = {n: self.context.frozen[n] for n in names}
        declared = [n for n in names if reasons[n] == "declared"]
        more = f" and {len(names) - 1} more" if len(names) > 1 else ""
        how = "declared frozen" if reasons[first] == "declared" else "requires_grad=False"
        return [
            Violation(
                subject=first,
                message=f"{first!r} ({how}) changed: norm {before:.6g} -> {now:.6g}{more}",
                value=now - before,
                evidence={"moved": names[:50], "reasons": {n: reasons[n] for n in names[:50]}},
                severity="fail" if declared else "warn",
            )
        ]


def _changed(before: float, now: float, rtol: float) -> bool:
    if not math.isfinite(now):
        return True
    return abs(now - before) > rtol * max(abs(before), abs(now))
