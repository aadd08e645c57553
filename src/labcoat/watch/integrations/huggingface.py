"""A Hugging Face ``TrainerCallback`` that watches training with :func:`labcoat.watch`.

    from labcoat.watch.integrations.huggingface import LabcoatWatchCallback
    trainer = Trainer(..., callbacks=[LabcoatWatchCallback(every=10, events="run/events.jsonl")])

The watch starts at ``on_train_begin`` on the model and optimizer the Trainer built (an
accelerate wrapper is unwrapped, so steps its GradScaler skips are not counted), observes
each optimizer step at ``on_step_end``, and takes the loss from the Trainer's logs: with
``logging_steps=N`` the loss invariants see one averaged loss every N steps.
"""

from __future__ import annotations

from typing import Any

from labcoat.extras import import_module
from labcoat.watch.watcher import Watcher, watch

TrainerCallback = import_module(
    "transformers", "huggingface", "labcoat.watch.integrations.huggingface"
).TrainerCallback


class LabcoatWatchCallback(TrainerCallback):
    """Runs ``labcoat.watch(model, optimizer, **options)`` for the length of ``Trainer.train()``."""

    def __init__(self, **options: Any):
        self.options = options
        self.watcher: Watcher | None = None

    @property
    def alerts(self) -> list:
        return [] if self.watcher is None else self.watcher.alerts

    def on_train_begin(
        self,
        args: Any,
        state: Any,
        control: Any,
        model: Any = None,
        optimizer: Any = None,
        **kwargs: Any,
    ):
        self.watcher = watch(model, optimizer, **self.options).start()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any):
        if self.watcher is not None:
            self.watcher.observe(step=state.global_step)

    def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kwargs: Any):
        if self.watcher is not None and logs and "loss" in logs:
            self.watcher.record_loss(state.global_step, float(logs["loss"]))

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any):
        if self.watcher is not None:
            self.watcher.close()
