"""Recording and replaying a Hugging Face ``Trainer.train``.

Inside ``with labcoat.replayable(...)``, ``Trainer.train`` adds a callback for that call. A step is
an optimizer step (``state.global_step``: what the Trainer counts, checkpoints and logs by);
the recorded values are the Trainer's logs (``on_log``: loss, grad_norm, learning_rate, epoch
and whatever ``Trainer.log`` is given), at the step they follow, without the wall-clock ones
(``*_runtime``, ``*_per_second``).

A checkpoint is taken when a step begins (``on_step_begin``): the model, optimizer, scheduler,
scaler, the Trainer's accelerator step and every RNG, and the Trainer's state (its
``trainer_state.json``). With ``logging_strategy="steps"`` checkpoints fall on steps where a log
was just written (the Trainer averages the loss since its last log, and a replay that began
between two logs would average fewer). A replay writes the Trainer a checkpoint folder holding
that state and the weights and resumes it (``resume_from_checkpoint``): the Trainer counts on
from the step and skips the data it had used (its seedable sampler makes the order exact);
the rest is restored when the step begins.
"""

from __future__ import annotations

import os
import sys
import tempfile
from typing import TYPE_CHECKING, Any

from labcoat.replay.integrations.driver import Objects, StepDriver, stopped
from labcoat.replay.integrations.hooks import Patch, not_hooked

if TYPE_CHECKING:
    from labcoat.replay.record import Recorder

#: logged values that measure the wall clock, not the run
CLOCK = ("_runtime", "_per_second")


def attach(rec: "Recorder") -> list[Patch]:
    module = sys.modules.get("transformers.trainer")
    if module is None:
        return []
    return [Patch(module.Trainer, "train", lambda train: _train(rec, train, module.Trainer))]


def _train(rec: "Recorder", train: Any, base: type) -> Any:
    def recorded_train(trainer: Any, resume_from_checkpoint: Any = None, *args: Any, **kw: Any):
        if getattr(rec, "_hf_train", False):
            not_hooked(
                "a second Trainer.train in one labcoat.replayable block",
                "is not recorded (a recording holds one train); record each in its own block",
            )
            return train(trainer, resume_from_checkpoint, *args, **kw)
        overridden = [
            name
            for name in ("_inner_training_loop", "_run_epoch")
            if name in base.__dict__ and getattr(type(trainer), name) is not base.__dict__[name]
        ]
        if overridden:
            not_hooked(
                f"{type(trainer).__name__} overrides Trainer.{', '.join(overridden)}",
                "(the training loop): its steps are recorded only if it still calls the "
                "Trainer's callbacks (on_step_begin, on_log), and a replay resumes only if it "
                "still honours resume_from_checkpoint; check the replay's result",
            )
        rec._hf_train = True
        callback = _class(sys.modules["transformers.trainer"].TrainerCallback)(rec, trainer)
        trainer.add_callback(callback)
        folder = None
        try:
            if rec.replaying:
                saved = (rec._state.get("extras") or {}).get("huggingface") or {}
                if saved.get("trainer_state") is not None:
                    folder = tempfile.TemporaryDirectory(prefix="labcoat-hf-resume-")
                    resume_from_checkpoint = _resume_folder(folder.name, saved)
            return train(trainer, resume_from_checkpoint, *args, **kw)
        finally:
            trainer.remove_callback(callback)
            callback.driver.end(failed=_failed())
            if folder is not None:
                folder.cleanup()

    return recorded_train


def _failed() -> bool:
    return not stopped(sys.exc_info()[1])


def _resume_folder(path: str, saved: dict[str, Any]) -> str:
    """A checkpoint folder the Trainer resumes from: its state and the weights (the optimizer,
    scheduler and RNGs are restored by the recorder when the step begins)."""
    import torch

    with open(os.path.join(path, "trainer_state.json"), "w") as fh:
        fh.write(saved["trainer_state"])
    weights = saved["objects"]["models"].get("model")
    if weights is not None:
        torch.save(dict(weights), os.path.join(path, "pytorch_model.bin"))
    return path


class Recording:
    """The callback ``Trainer.train`` gets inside ``labcoat.replayable`` (made a ``TrainerCallback``
    by :func:`_class`)."""

    def __init__(self, rec: "Recorder", trainer: Any):
        self.rec = rec
        self.trainer = trainer
        self.driver = StepDriver(rec, "huggingface.step")
        self.objects = Objects(rec)
        rec.extras["huggingface"] = _Extra(self)

    def every_log(self) -> int | None:
        args = self.trainer.args
        strategy = str(getattr(args.logging_strategy, "value", args.logging_strategy))
        if strategy != "steps":
            return None
        steps = args.logging_steps
        if isinstance(steps, float) and steps < 1:  # a fraction of the run
            steps = max(1, int(steps * max(1, self.trainer.state.max_steps)))
        return int(steps)

    def checkpoint_ok(self) -> bool:
        step = self.rec.step
        n = self.every_log()
        return step == 0 or n is None or step % n == 0

    def saved(self) -> dict[str, Any]:
        import dataclasses
        import json

        state = self.trainer.state
        trainer_state = None
        if state.global_step > 0:
            trainer_state = json.dumps(dataclasses.asdict(state), indent=2, sort_keys=True) + "\n"
        accelerator = getattr(self.trainer, "accelerator", None)
        return {
            "objects": self.objects.state_dict(),
            "trainer_state": trainer_state,
            "accelerator_step": getattr(accelerator, "step", None),
        }

    def restore(self, state: dict[str, Any]) -> None:
        self.objects.load_state_dict(state["objects"])
        accelerator = getattr(self.trainer, "accelerator", None)
        if accelerator is not None and state.get("accelerator_step") is not None:
            accelerator.step = state["accelerator_step"]

    # -- the Trainer's hooks ---------------------------------------------------------------
    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.rec.hooked.append("huggingface")
        model = kwargs.get("model") or self.trainer.model
        self.objects.add("models", model, "model")
        self.objects.add(
            "optimizers", kwargs.get("optimizer") or self.trainer.optimizer, "optimizer"
        )
        self.objects.add(
            "schedulers", kwargs.get("lr_scheduler") or self.trainer.lr_scheduler, "scheduler"
        )
        accelerator = getattr(self.trainer, "accelerator", None)
        self.objects.add("scalers", getattr(accelerator, "scaler", None), "scaler")
        self.driver.start()

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.driver.step_start(int(state.global_step))

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.rec.replaying:
            control.should_save = False  # a replay writes no checkpoint of the Trainer's

    def on_epoch_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.on_step_end(args, state, control)

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
        if not logs or not self.driver.started or self.driver.ended:
            return
        if "train_runtime" in logs:  # the summary after the last step (a mean over the run)
            return
        values = {
            k: v
            for k, v in logs.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and not k.endswith(CLOCK)
        }
        if values:
            self.rec.log(**values)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.driver.end()


_CLASSES: dict[type, type] = {}


def _class(base: type) -> type:
    if base not in _CLASSES:
        _CLASSES[base] = type("LabcoatRecord", (Recording, base), {})
    return _CLASSES[base]


class _Extra:
    """What the recorder checkpoints for the callback (``Recorder.extras``)."""

    def __init__(self, callback: Any):
        self.callback = callback

    def checkpoint_ok(self) -> bool:
        return self.callback.checkpoint_ok()

    def state_dict(self) -> dict[str, Any]:
        return self.callback.saved()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.callback.restore(state)
