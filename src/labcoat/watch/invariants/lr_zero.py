"""``lr_zero``: a param group trains at a learning rate of zero.

A warm-up that starts at zero makes one or two such steps and is fine; a scheduler that has
run past its end (or an ``lr=0`` typo) keeps it there. The alert comes once a group's rate has
been at or below ``atol`` for ``patience`` consecutive optimizer steps.

A group that a scheduler holds at zero from the start while another group trains is waiting
on purpose (fine-tuning recipes hold the body while the new head warms up): its scheduler's
base rate (``initial_lr``) is positive. It is not counted until it has trained once; a group
whose base rate is zero (the typo), every group held at zero at once (nothing trains), and a
group that trained and dropped back to zero are.
"""

from __future__ import annotations

from labcoat.watch.invariants.base import INVARIANTS, Bound, Invariant, Violation
from labcoat.watch.sample import Sample, WatchContext


@INVARIANTS.register
class LrZero(Invariant):
    kind = "lr_zero"
    falsifies = "the optimizer is allowed to move the parameters"
    predicts = "no param group's learning rate stays at zero for `patience` steps"
    needs = frozenset({"lrs"})
    options = {"patience": (5, Bound(int, 1)), "atol": (0.0, Bound(float, 0.0))}

    def setup(self, context: WatchContext) -> None:
        super().setup(context)
        self.add_state("zero_run", {})  # group index -> consecutive steps at zero
        self.add_state("last_lr", {})
        self.add_state("trained", [])  # groups that have had a positive rate since the start

    def update(self, sample: Sample) -> None:
        if sample.lrs is None:
            return
        steps = max(1, sample.applied_steps)
        base = list(sample.base_lrs or ())
        others_train = any(lr is not None and lr > self.atol for lr in sample.lrs)
        for group, lr in enumerate(sample.lrs):
            if lr is None:
                continue  # optimizers without an lr (e.g. relative-step Adafactor)
            self.last_lr[group] = lr
            held = (
                others_train
                and group not in self.trained
                and group < len(base)
                and (base[group] or 0.0) > self.atol
            )
            if lr > self.atol:
                self.zero_run.pop(group, None)
                if group not in self.trained:
                    self.trained.append(group)
            elif held:  # a scheduler holds it at zero while others train
                self.zero_run.pop(group, None)
            else:
                self.zero_run[group] = self.zero_run.get(group, 0) + steps

    def load_state_dict(self, state) -> None:
        # checkpoints from before `trained`: every group seen so far counts as trained
        super().load_state_dict({"trained": [int(g) for g in state.get("last_lr", {})], **state})

    def compute(self) -> list[Violation]:
        out = []
        for group, run in sorted(self.zero_run.items()):
            if run < self.patience:
                continue
            groups = self.context.group_params if self.context else ()
            names = groups[group] if group < len(groups) else ()  # add_param_group adds
            shown = ", ".join(repr(n) for n in names[:3]) + (", …" if len(names) > 3 else "")
            out.append(
                Violation(
                    subject=f"param group {group}",
                    message=(
                        f"param group {group} ({len(names)} parameters: {shown}) has had "
                        f"learning rate {self.last_lr[group]:g} for {run} steps"
                    ),
                    value=self.last_lr[group],
                    evidence={"group": group, "steps_at_zero": run, "params": list(names[:50])},
                )
            )
        return out
