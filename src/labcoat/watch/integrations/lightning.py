"""A PyTorch Lightning callback that watches training with :func:`labcoat.watch`.

    from labcoat.watch.integrations.lightning import LabcoatWatch
    trainer = lightning.Trainer(callbacks=[LabcoatWatch(every=10, events="run/events.jsonl")])

The watch starts when training starts (the optimizers exist by then), observes every training
batch with the loss the ``training_step`` returned (and the batch, for ``repeat_batch``), and closes
when training ends or fails.
Lightning calls ``optimizer.step(closure)``; the watch reads gradients after the closure ran.
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
        self.watcher = watch(pl_module, optimizers[self.optimizer_index], **self.options).start()

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
