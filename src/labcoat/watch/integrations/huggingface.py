"""A Hugging Face ``TrainerCallback`` that watches training with :func:`labcoat.watch`.

    from labcoat.watch.integrations.huggingface import LabcoatWatchCallback
    trainer = Trainer(..., callbacks=[LabcoatWatchCallback(every=10, events="run/events.jsonl")])

The watch starts at ``on_train_begin`` on the model and optimizer the Trainer built (an
accelerate wrapper is unwrapped, so steps its GradScaler skips are not counted), observes
each optimizer step at ``on_step_end``, and takes the loss from the Trainer's logs: with
``logging_steps=N`` the loss invariants see one averaged loss every N steps.

Each checkpoint the Trainer saves gets the watch's windows and counters beside the model
(``checkpoint-N/labcoat_watch.pt``); ``trainer.train(resume_from_checkpoint=...)`` finds them in
``output_dir/checkpoint-N`` (N: the step it resumes at) and the watch continues from them.
Pass ``resume_from=PATH`` when the checkpoint lives elsewhere.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

from labcoat.extras import import_module
from labcoat.watch.watcher import Watcher, watch

TrainerCallback = import_module(
    "transformers", "huggingface", "labcoat.watch.integrations.huggingface"
).TrainerCallback


class LabcoatWatchCallback(TrainerCallback):
    """Runs ``labcoat.watch(model, optimizer, **options)`` for the length of ``Trainer.train()``."""

    #: the file, in each checkpoint folder, that holds the watch's state
    STATE_FILE = "labcoat_watch.pt"

    def __init__(self, *, resume_from: str | os.PathLike[str] | None = None, **options: Any):
        self.options = options
        self.resume_from = resume_from
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
        watcher = watch(model, optimizer, **self.options)
        saved = self._saved_state(args, state)
        if saved is not None:  # a resumed run: continue the saved windows
            watcher.load_state_dict(saved)
        self.watcher = watcher.start()

    def _saved_state(self, args: Any, state: Any) -> Any:
        """The watch state saved with the checkpoint this run resumes from, if any."""
        step = int(getattr(state, "global_step", 0) or 0)
        folder = self.resume_from
        if folder is None:
            if step == 0:  # a fresh run
                return None
            folder = os.path.join(str(args.output_dir), f"checkpoint-{step}")
        path = os.path.join(os.fspath(folder), self.STATE_FILE)
        if not os.path.isfile(path):
            warnings.warn(
                f"labcoat: resuming at step {step}, but {path} does not exist: the watch starts "
                "with empty windows (pass LabcoatWatchCallback(resume_from=CHECKPOINT_DIR))",
                stacklevel=2,
            )
            return None
        import torch

        return torch.load(path, weights_only=True)

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any):
        """After the Trainer wrote ``output_dir/checkpoint-N``: the watch's state goes in it."""
        if self.watcher is None or self.watcher.sampler is None:
            return
        folder = os.path.join(str(args.output_dir), f"checkpoint-{state.global_step}")
        if os.path.isdir(folder) and getattr(args, "should_save", True):
            import torch

            torch.save(self.watcher.state_dict(), os.path.join(folder, self.STATE_FILE))

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any):
        if self.watcher is not None:
            self.watcher.observe(step=state.global_step)

    def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kwargs: Any):
        if self.watcher is not None and logs and "loss" in logs:
            self.watcher.record_loss(state.global_step, float(logs["loss"]))

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any):
        if self.watcher is not None:
            self.watcher.close()
