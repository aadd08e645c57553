"""``stale``: a trainable parameter receives gradients but does not move.

The classic causes are a parameter missing from the optimizer, an optimizer built over a copy
of the model, or a layer re-created after the optimizer was. A parameter counts as unchanged
only when both its norm and its in-place version counter are unchanged, so a write too small
to show in the norm is not mistaken for no write. The sampler reads a norm only while the
counter stands still, so a parameter the optimizer writes costs no read; the steps it stands
still are counted from that first read, up to one sample later than reading every norm would
count them. Only optimizer steps that ran are counted: steps a GradScaler skipped after an
overflow are not evidence of staleness. A parameter outside the watched optimizer (before and
after) that is seen moving belongs to another optimizer, which may step it every 20 calls (a
second optimizer on the same model): it is left to that one.
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
        # name -> [version, norm or None, optimizer steps since that norm was read, whether it
        # had a gradient at the last sample]: the norm is read only while the version counter
        # stands still (see labcoat.watch.sampler)
        self.add_state("last", {})
        self.add_state("unchanged", {})  # name -> optimizer steps without change, with gradients
        self.add_state("elsewhere", [])  # parameters seen moving while not in this optimizer
        self.add_state("members", None)  # the optimizer's parameters at the previous sample

    def update(self, sample: Sample) -> None:
        versions = sample.param_versions
        if versions is None:
            return
        norms = sample.param_norms or {}
        grads = sample.grad_norms or {}
        known = sample.grad_norms is not None
        members, before = sample.optimizer_params, self.members
        if members is not None:
            self.members = members
        for name, version in versions.items():
            if name in self.elsewhere:
                continue
            norm = norms.get(name)
            seen = self.last.get(name)
            grad = grads.get(name, 0.0)
            graded = grad > 0 and math.isfinite(grad) if known else True
            if (
                seen is None
                or version != seen[0]
                or (norm is not None and seen[1] is not None and norm != seen[1])
            ):  # it moved (or is new): start again from here
                if (
                    seen is not None
                    and members is not None
                    and before is not None
                    and name not in members
                    and name not in before
                ):  # not in this optimizer before or after it moved: another optimizer (or a
                    # rule of the user's) trains it, on its own schedule
                    self.elsewhere.append(name)
                    self.unchanged.pop(name, None)
                    continue
                self.last[name] = [version, norm, 0, graded]
                self.unchanged.pop(name, None)
                continue
            # the steps since the previous sample are evidence only if the parameter had a
            # gradient when they began: one that just got its first (a layer unfrozen on
            # purpose, a branch used for the first time) did not stand still for them
            had_grad = seen[3]
            if known:
                seen[3] = graded
            if seen[1] is None and norm is not None:  # what later reads must match
                seen[1], seen[2] = norm, 0
                continue
            if not had_grad:
                seen[2] = 0  # steps without a gradient are no evidence
                continue
            seen[2] += sample.applied_steps
            if norm is not None and seen[1] is not None:  # else counted at the next read
                self.unchanged[name] = self.unchanged.get(name, 0) + seen[2]
                seen[2] = 0

    def load_state_dict(self, state) -> None:
        # checkpoints from before these two
        super().load_state_dict({"elsewhere": [], "members": None, **state})
        # older checkpoints held (norm, version) pairs
        self.last = {
            n: [v[1], v[0], 0, True] if len(v) == 2 else list(v) for n, v in self.last.items()
        }

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
