"""``eval_mode``: optimizer steps taken in eval mode after the run trained in train mode.

An evaluation calls ``model.eval()`` and nothing calls ``model.train()`` again: the loop calls
it once before the epoch loop, or only at the top of each epoch while validation runs
mid-epoch. From then on dropout is off and batch norm normalises with, and no longer updates,
its running statistics; nothing fails, the run trains another network. Judged on
``model.training`` at each optimizer step: the alert needs train-mode steps first, then
``window`` steps in a row in eval mode. A run in eval mode from its first step chose it and is
left alone, as is a model with no dropout or batch norm (both modes compute the same) and a
submodule put in eval mode on purpose (frozen batch norm) while the model trains.
"""

from __future__ import annotations

from labcoat.watch.invariants.base import INVARIANTS, Bound, Invariant, Violation
from labcoat.watch.sample import Sample, WatchContext


@INVARIANTS.register
class EvalMode(Invariant):
    kind = "eval_mode"
    falsifies = (
        "the model trains in train mode (an evaluation switched it to eval mode and nothing "
        "switched it back)"
    )
    predicts = (
        "once a step has run in train mode, no `window` optimizer steps in a row run with the "
        "model in eval mode"
    )
    needs = frozenset({"train_modes"})
    options = {"window": (20, Bound(int, 1))}

    def applies(self, context: WatchContext) -> str | None:
        if not context.mode_dependent:
            return "the model has no dropout or batch norm: train and eval mode compute the same"
        return None

    def setup(self, context: WatchContext) -> None:
        super().setup(context)
        self.add_state("trained", 0)  # steps run in train mode
        self.add_state("in_eval", 0)  # steps in eval mode since the last train-mode step
        self.add_state("found", None)

    def update(self, sample: Sample) -> None:
        for training in sample.train_modes:
            if training:
                self.trained += 1
                self.in_eval = 0
            elif self.trained:
                self.in_eval += 1
        if self.in_eval < self.window:
            self.found = None
            return
        modules = self.context.mode_dependent if self.context is not None else ()
        named = ", ".join(modules[:3]) + (
            f" and {len(modules) - 3} more" if len(modules) > 3 else ""
        )
        self.found = Violation(
            subject="model",
            message=(
                f"the last {self.in_eval} optimizer steps ran with the model in eval mode, after "
                f"{self.trained} in train mode: an evaluation called model.eval() and nothing "
                f"called model.train() again, so {named} run as at inference (dropout off, "
                "batch norm on frozen running statistics); call model.train() after each "
                "evaluation"
            ),
            value=float(self.in_eval),
            evidence={
                "eval_steps_in_a_row": self.in_eval,
                "train_steps_before": self.trained,
                "mode_dependent_modules": list(modules[:20]),
            },
        )

    def compute(self) -> list[Violation]:
        return [] if self.found is None else [self.found]
