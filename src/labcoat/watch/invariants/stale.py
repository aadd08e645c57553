"""``stale``: a trainable parameter receives gradients but does not move.

The classic causes are a parameter missing from the optimizer, an optimizer built over a copy
of the model, or a layer re-created after the optimizer was. A parameter counts as unchanged
only when both its norm and its in-place version counter are unchanged, so a write too small
to show in the norm is not mistaken for no write. Only optimizer steps that ran are counted:
steps a GradScaler skipped after an overflow are not evidence of staleness.
"""

from __future__ import annotations

import math

from labcoat.watch.invariants.base import INVARIANTS, Bound, Invariant, Violation
from labcoat.watch.sample import Sample, WatchContext


@INVARIANTS.register
class Stale(Invariant):
    kind = "stale"
    falsifies = "every parameter that gets a gradient is being trained"
    predicts = "a parameter with a non-zero gradient changes within `patience` optimizer steps"
    needs = frozenset({"grad_norms", "param_norms"})
    options = {"patience": (10, Bound(int, 1))}

    def setup(self, context: WatchContext) -> None:
        super().setup(context)
        self.add_state("last", {})  # name -> (norm, version) at the previous measurement
        self.add_state("unchanged", {})  # name -> optimizer steps without change, with gradients

    def update(self, sample: Sample) -> None:
        if sample.param_norms is None:
            return
        versions = sample.param_versions or {}
        grads = sample.grad_norms or {}
        current = {n: (v, versions.get(n)) for n, v in sample.param_norms.items()}
        for name, now in current.items():
            before = self.last.get(name)
            if before is None:
                continue
            if now != before:
                self.unchanged.pop(name, None)
            elif sample.applied_steps and grads.get(name, 0.0) > 0 and math.isfinite(grads[name]):
                self.unchanged[name] = self.unchanged.get(name, 0) + sample.applied_steps
        self.last = current

    def compute(self) -> list[Violation]:
        stale = [n for n, count in self.unchanged.items() if count >= self.patience]
        if not stale or self.context is None:
            return []
        order = {n: i for i, n in enumerate(self.context.param_names)}
        stale.sort(key=lambda n: order.get(n, len(order)))
        first = stale[0]
        more = f" ({len(stale) - 1} more parameters likewise)" if len(stale) > 1 else ""
        return [
            Violation(
                subject=first,
                message=(
                    f"{first!r} has had gradients but has not changed for "
                    f"{self.unchanged[first]} optimizer steps; is it still in the optimizer?{more}"
                ),
                value=float(self.unchanged[first]),
                evidence={"stale": stale[:50], "steps_unchanged": self.unchanged[first]},
            )
        ]
