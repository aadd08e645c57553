"""A PyTorch Lightning callback that watches training with :func:`labcoat.watch`.

    from labcoat.watch.integrations.lightning import LabcoatWatch
    trainer = lightning.Trainer(callbacks=[LabcoatWatch(every=10, events="run/events.jsonl")])

The watch starts when training starts (the optimizers exist by then), observes every training
batch with the loss the ``training_step`` returned (and the batch, for ``repeat_batch``), and closes
when training ends or fails.
Lightning calls ``optimizer.step(closure)``; the watch reads gradients after the closure ran.

The watch's windows and counters go into every checkpoint the Trainer saves (the callback's
``state_dict``), and ``trainer.fit(..., ckpt_path=...)`` restores them, so a resumed run keeps
judging against the history it had instead of starting blind.
"""

from __future__ import annotations

from typing import Any, Mapping

from labcoat.errors import InputError
from labcoat.extras import available, import_module
from labcoat.watch.watcher import Watcher, watch

if not available("lightning") and available("pytorch_lightning"):  # the older package name
    from pytorch_lightning.callbacks import Callback
else:
    Callback = import_module(
        "lightning.pytorch.callbacks", "lightning", "labcoat.watch.integrations.lightning"
    ).Callback


class LabcoatWatch(Callback):
    """Runs ``labcoat.watch(pl_module, trainer.optimizers[optimizer_index], **options)``.

    Alerts are in :attr:`alerts` (and in the events file / ledger when given in ``options``).
    """

    def __init__(self, optimizer_index: int = 0, **options: Any):
        super().__init__()
        self.optimizer_index = optimizer_index
        self.options = options
        self.watcher: Watcher | None = None
        #: the watch state a checkpoint restored, loaded when training starts
        self._restored: Mapping[str, Any] | None = None

    @property
    def alerts(self) -> list:
        return [] if self.watcher is None else self.watcher.alerts

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        optimizers = list(trainer.optimizers)
        if not 0 <= self.optimizer_index < len(optimizers):
            raise InputError(
                f"LabcoatWatch(optimizer_index={self.optimizer_index}) but the trainer has "
                f"{len(optimizers)} optimizer(s); pass an index below {len(optimizers)}."
            )
        watcher = watch(pl_module, optimizers[self.optimizer_index], **self.options)
        if self._restored is not None:  # a resumed run: continue the saved windows
            watcher.load_state_dict(self._restored)
            self._restored = None
        self.watcher = watcher.start()

    def state_dict(self) -> dict[str, Any]:
        """What Lightning saves in each checkpoint: the watch's windows and counters."""
        if self.watcher is not None and self.watcher.sampler is not None:
            return {"watch": self.watcher.state_dict()}
        return {} if self._restored is None else {"watch": self._restored}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Lightning restores a checkpoint (``fit(ckpt_path=...)``) before training starts."""
        self._restored = state_dict.get("watch") if state_dict else None

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        if self.watcher is None:
            return
        loss = outputs.get("loss") if isinstance(outputs, Mapping) else outputs
        self.watcher.observe(step=trainer.global_step, loss=loss, batch=batch)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self._close()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self._close()

    def _close(self) -> None:
        if self.watcher is not None:
            self.watcher.close()
