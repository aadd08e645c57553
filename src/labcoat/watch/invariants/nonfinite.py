"""``nonfinite``: the loss, a gradient or a parameter became NaN or Inf.

Parameters are read just before the optimizer step, so the tensor named is where the NaN
started rather than everything the next update has already spread it to. The sampler reads
every parameter whenever a gradient is non-finite, and otherwise every ``ALL_PARAMS_EVERY``
samples, no more often than every ``ALL_PARAMS_STEPS`` steps: a parameter that turns NaN
without touching the loss or any gradient is named at the next such read.
"""

from __future__ import annotations

import math

from labcoat.watch.invariants.base import INVARIANTS, Invariant, Violation
from labcoat.watch.sample import Sample, WatchContext


@INVARIANTS.register
class NonFinite(Invariant):
    kind = "nonfinite"
    falsifies = "the run's numbers stay finite"
    predicts = "every loss, gradient norm and parameter norm is a finite number"
    needs = frozenset({"losses", "grad_norms", "param_norms"})

    def setup(self, context: WatchContext) -> None:
        super().setup(context)
        self.add_state("found", None)

    def update(self, sample: Sample) -> None:
        bad_params = _nonfinite(sample.param_norms)
        bad_grads = _nonfinite(sample.grad_norms)
        bad_losses = [(s, v) for s, v in sample.losses if not math.isfinite(v)]
        if not (bad_params or bad_grads or bad_losses):
            if _all_read(sample):  # everything is finite again
                self.found = None
            return
        if self.found is not None:
            return  # keep naming where it started while it persists
        evidence = {
            "nonfinite_params": [n for n, _ in bad_params][:50],
            "nonfinite_grads": [n for n, _ in bad_grads][:50],
            "nonfinite_loss_steps": [s for s, _ in bad_losses][:50],
        }
        # where it started: a loss that went bad before this sampled step came first; then a
        # parameter (read before the update), then the loss (gradients derive from it)
        loss_first = bool(bad_losses) and (bad_losses[0][0] < sample.step or not bad_params)
        if loss_first:
            step, value = bad_losses[0]
            name = "loss"
            where = f"the loss is {_word(value)} at step {step}"
        elif bad_params:
            name, value = bad_params[0]
            where = f"parameter {name!r} is {_word(value)} before the optimizer step"
        else:
            name, value = bad_grads[0]
            where = f"the gradient of {name!r} is {_word(value)}"
        others = len(bad_params) + len(bad_grads) + bool(bad_losses) - 1
        also = f" ({others} more non-finite: see evidence)" if others > 0 else ""
        self.found = Violation(subject=name, message=where + also, value=value, evidence=evidence)

    def compute(self) -> list[Violation]:
        return [] if self.found is None else [self.found]


def _nonfinite(values: dict[str, float] | None) -> list[tuple[str, float]]:
    if not values or math.isfinite(sum(values.values())):  # norms are >= 0: a finite sum
        return []  # means every one is finite
    return [(n, v) for n, v in values.items() if not math.isfinite(v)]


def _all_read(sample: Sample) -> bool:
    """Whether this sample read every parameter's norm (the sampler reads only some of them on
    most sampled steps, and all of them whenever a gradient is non-finite)."""
    norms, versions = sample.param_norms, sample.param_versions
    return norms is not None and versions is not None and len(norms) == len(versions)


def _word(value: float) -> str:
    return "NaN" if math.isnan(value) else "Inf"
