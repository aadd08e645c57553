"""``frozen_moved``: a tensor that should stay put changed.

Covers parameters with ``requires_grad=False`` and everything passed in ``expect_frozen``;
for a declared module that includes its floating-point buffers, so BatchNorm running
statistics drifting in a "frozen" backbone left in train mode are caught too.
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

    def update(self, sample: Sample) -> None:
        if sample.frozen_norms is None or self.context is None:
            return
        baseline = self.context.frozen_baseline
        self.moved = {
            name: (baseline[name], now)
            for name, now in sample.frozen_norms.items()
            if _changed(baseline[name], now, self.rtol)
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
