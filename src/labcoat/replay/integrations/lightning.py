"""Recording and replaying a Lightning ``Trainer.fit`` (``lightning`` or ``pytorch_lightning``).

Inside ``with labcoat.replayable(...)``, ``Trainer.fit`` adds a callback for that call. A step is a
training batch (as in a hand loop); the recorded values are what ``training_step`` passes to
``self.log``/``self.log_dict`` during a training batch, and the loss it returns (``loss``, unless
it logged a ``loss`` itself). The training DataLoader gets the recorder's batch sampler (which
draws what the bare one draws and skips batches without loading them) and becomes resumable
for Lightning (``state_dict``/``load_state_dict``): its state is the epoch's RNG entry state
and the batches used so far; the main process's RNG states before the batch Lightning
prefetched are checkpointed, so a replay fetches it as recorded.

A checkpoint is taken when a batch starts (``on_train_batch_start``), after a batch on which the
optimizer stepped that was not the epoch's last (the places Lightning resumes from mid-epoch):
the module, optimizers, schedulers, scaler and RNGs then, and Lightning's loop counters (and the
callbacks' states) at the end of the batch before. A replay loads the loop counters when
fitting starts, so Lightning resumes at the checkpoint's batch; the loader restores its
epoch's RNG state and skips the batches used; the rest is restored when that batch starts.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from labcoat.replay.integrations.driver import (
    Objects,
    StepDriver,
    restore_entry,
    rng_entry,
    stopped,
)
from labcoat.replay.integrations.hooks import Patch, not_hooked

if TYPE_CHECKING:
    from labcoat.replay.record import Recorder

#: the Trainer modules of the two package names Lightning has had
PACKAGES = {
    "lightning.pytorch.trainer.trainer": "lightning.pytorch",
    "pytorch_lightning.trainer.trainer": "pytorch_lightning",
}


def attach(rec: "Recorder") -> list[Patch]:
    out = []
    for module_name, package in PACKAGES.items():
        module = sys.modules.get(module_name)
        if module is not None:
            out.append(Patch(module.Trainer, "fit", lambda fit, p=package: _fit(rec, fit, p)))
    return out


def _fit(rec: "Recorder", fit: Any, package: str) -> Any:
    def recorded_fit(trainer: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(rec, "_lightning_fit", False):
            not_hooked(
                "a second Trainer.fit in one labcoat.replayable block",
                "is not recorded (a recording holds one fit); record each fit in its own block",
            )
            return fit(trainer, *args, **kwargs)
        loop_module = sys.modules[f"{package}.loops.fit_loop"]
        if type(trainer.fit_loop) is not loop_module._FitLoop:
            not_hooked(
                f"{type(trainer).__name__}.fit_loop is a {type(trainer.fit_loop).__name__}",
                "(not Lightning's _FitLoop): its steps cannot be recorded; record the loop "
                "inside it with rec.loop",
            )
            return fit(trainer, *args, **kwargs)
        rec._lightning_fit = True
        if rec.replaying and _resumes(rec):
            kwargs.pop("ckpt_path", None)  # the replay resumes at its own checkpoint
        callback = _callback_class(package)(rec, trainer)
        trainer.callbacks.append(callback)
        try:
            return fit(trainer, *args, **kwargs)
        finally:
            if callback in trainer.callbacks:
                trainer.callbacks.remove(callback)
            callback.close(failed=not stopped(sys.exc_info()[1]))

    return recorded_fit


def _resumes(rec: "Recorder") -> bool:
    saved = (rec._state.get("extras") or {}).get("lightning") or {}
    return saved.get("loops") is not None


_CLASSES: dict[str, type] = {}


def _callback_class(package: str) -> type:
    """The callback, subclassing the Callback of the package the Trainer came from."""
    if package not in _CLASSES:
        import importlib

        base = importlib.import_module(f"{package}.callbacks").Callback
        _CLASSES[package] = type("LabcoatRecord", (_Recording, base), {"package": package})
    return _CLASSES[package]


class EpochEntry:
    """The batch sampler of the training DataLoader: the recorder's (which skips batches
    without loading them and keeps the RNG states before its last fetches), plus the epoch's
    RNG entry state, taken when the DataLoader makes its iterator and put back there on
    replay."""

    def __init__(self, loader: Any, inner: Any):
        self.loader = loader
        self.inner = inner
        self.entry: Any = None
        self.fresh = True  # the next iter() begins an epoch (a DataLoader may call it twice)
        self.pending: Any = None
        self.used = 0  # batches of this epoch the finished steps used
        self.fetch: Any = None  # on replay: the fetch states of the batches Lightning prefetched

    def __len__(self) -> int:
        return len(self.inner)

    def __iter__(self) -> Any:
        if self.pending is not None:
            self.entry, skip = self.pending
            self.pending = None
            restore_entry(self.entry, self.loader)
            self.inner.plan = {"skip": skip, "fetch": self.fetch or {}}
            self.fetch = None
        elif self.fresh:
            self.entry = rng_entry(self.loader)
            # without workers the batches draw from the main process's RNGs as Lightning
            # fetches them, one ahead of its steps: the states before each fetch are kept
            self.inner.plan = {"main": not getattr(self.loader, "num_workers", 0)}
        self.fresh = False
        return self._items(iter(self.inner))

    def _items(self, it: Any) -> Any:
        first = True
        for item in it:
            if first:
                self.inner.plan = {}
                self.fresh = True
                first = False
            yield item

    def __getattr__(self, name: str) -> Any:
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    # Lightning's resumable-loader protocol
    def fetch_states(self) -> Any:
        """The fetch states of the batches fetched past the ones the finished steps used."""
        current = self.inner.current
        return None if current is None else current.fetch_states(self.used)

    def state_dict(self) -> dict[str, Any]:
        return {"labcoat_entry": self.entry, "used": self.used}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.pending = (state["labcoat_entry"], int(state["used"]))


def prepare_loader(loader: Any) -> EpochEntry | None:
    """Give a training DataLoader the recorder's batch sampler and make it resumable."""
    from labcoat.replay.loops import is_dataloader
    from labcoat.replay.workers import install

    if not is_dataloader(loader):
        return None
    for slot in ("batch_sampler", "sampler"):
        current = getattr(loader, slot, None)
        if isinstance(current, EpochEntry):
            return current
    sampler = install(loader)
    if sampler is None:
        return None
    slot = "batch_sampler" if loader.batch_sampler is sampler else "sampler"
    entry = EpochEntry(loader, sampler)
    object.__setattr__(loader, slot, entry)
    loader.state_dict = entry.state_dict
    loader.load_state_dict = entry.load_state_dict
    return entry


class _Recording:
    """The callback ``Trainer.fit`` gets inside ``labcoat.replayable`` (made per package)."""

    package = "lightning.pytorch"

    def __init__(self, rec: "Recorder", trainer: Any):
        super().__init__()
        self.rec = rec
        self.trainer = trainer
        self.driver = StepDriver(rec, "lightning.batch")
        self.objects = Objects(rec)
        self.entries: list[EpochEntry] = []
        self.fetched: list[Any] = []  # on replay: each entry's fetch states at the checkpoint
        self.unskippable: list[str] = []
        self.loops: Any = None  # Lightning's loop counters after the last batch
        self.resumable = False  # that batch had an optimizer step and was not the epoch's last
        self.in_batch = False
        self.logged: set[str] = set()
        self._undo: list[Any] = []
        rec.extras["lightning"] = _Extra(self)

    # -- the recorder's side (through _Extra: Lightning reads a callback's own state_dict) ---
    def checkpoint_ok(self) -> bool:
        if self.rec.step == 0:
            return True
        return self.resumable and not self.unskippable

    def saved(self) -> dict[str, Any]:
        return {
            "objects": self.objects.state_dict(),
            "loops": None if self.rec.step == 0 else self.loops,
            "callbacks": self._call()._call_callbacks_state_dict(self.trainer),
            "fetched": [entry.fetch_states() for entry in self.entries],
        }

    def restore(self, state: dict[str, Any]) -> None:
        self.objects.load_state_dict(state["objects"])

    def _call(self) -> Any:
        import importlib

        return importlib.import_module(f"{self.package}.trainer.call")

    # -- Lightning's hooks -----------------------------------------------------------------
    def on_fit_start(self, trainer: Any, pl_module: Any) -> None:
        rec = self.rec
        rec.hooked.append("lightning")
        self.objects.add("models", pl_module, "model")
        for i, opt in enumerate(trainer.optimizers):
            self.objects.add("optimizers", opt, "optimizer" if i == 0 else f"optimizer.{i}")
        for i, config in enumerate(trainer.lr_scheduler_configs):
            self.objects.add(
                "schedulers", config.scheduler, "scheduler" if i == 0 else f"scheduler.{i}"
            )
        self.objects.add("scalers", getattr(trainer.precision_plugin, "scaler", None), "scaler")
        self._wrap_data(trainer)
        self._wrap_log(pl_module)
        if rec.replaying:
            for checkpointing in trainer.checkpoint_callbacks:  # a replay writes no checkpoint
                for name, answer in NO_SAVING.items():
                    checkpointing.__dict__[name] = answer
                    self._undo.append(lambda c=checkpointing, n=name: c.__dict__.pop(n, None))
            saved = (rec._state.get("extras") or {}).get("lightning") or {}
            self.fetched = saved.get("fetched") or []
            if saved.get("loops") is not None:  # resume Lightning's counters at the checkpoint
                trainer.fit_loop.load_state_dict(saved["loops"]["fit_loop"])
                if saved.get("callbacks"):
                    state = {"callbacks": saved["callbacks"]}
                    self._call()._call_callbacks_load_state_dict(trainer, state)
        self.driver.start()

    def _wrap_data(self, trainer: Any) -> None:
        source = trainer.fit_loop._data_source
        original = source.dataloader

        def dataloader() -> Any:
            data = original()
            found = list(_loaders(data))
            for loader in found:
                entry = prepare_loader(loader)
                if entry is None:
                    self.unskippable.append(type(getattr(loader, "dataset", loader)).__name__)
                elif all(entry is not e for e in self.entries):
                    if len(self.fetched) > len(self.entries):
                        entry.fetch = self.fetched[len(self.entries)]
                    self.entries.append(entry)
            if self.unskippable:
                not_hooked(
                    f"Lightning's training data ({', '.join(self.unskippable)})",
                    "is not a DataLoader over a map-style dataset: its batches cannot be "
                    "skipped exactly, so this run is checkpointed only at step 0 (a replay "
                    "runs from the start)",
                )
            return data

        source.dataloader = dataloader
        self._undo.append(lambda: source.__dict__.pop("dataloader", None))

    def _wrap_log(self, pl_module: Any) -> None:
        original = pl_module.log
        rec = self.rec

        def log(name: str, value: Any, *args: Any, **kwargs: Any) -> Any:
            out = original(name, value, *args, **kwargs)
            if self.in_batch and _number(value):
                self.logged.add(name)
                rec.log(**{name: value})
            return out

        pl_module.__dict__["log"] = log
        self._undo.append(lambda: pl_module.__dict__.pop("log", None))

    def on_train_batch_start(
        self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int
    ) -> None:
        self.driver.step_start(trainer.fit_loop.epoch_loop.total_batch_idx)
        self.in_batch = True
        self.logged = set()

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        self.in_batch = False
        loss = outputs.get("loss") if isinstance(outputs, Mapping) else outputs
        if "loss" not in self.logged and _number(loss):
            self.rec.log(loss=loss)
        if not self.rec.recording:
            return
        epoch_loop = trainer.fit_loop.epoch_loop
        for entry in self.entries:
            entry.used = batch_idx + 1
        self.resumable = (
            not epoch_loop.batch_progress.is_last_batch and not epoch_loop._should_accumulate()
        )
        self.loops = (
            trainer._checkpoint_connector._get_loops_state_dict() if self.resumable else None
        )

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self.driver.end()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self.driver.end(failed=not stopped(exception))

    def close(self, failed: bool) -> None:
        self.driver.end(failed=failed)
        for undo in reversed(self._undo):
            undo()
        self._undo = []


class _Extra:
    """What the recorder checkpoints for the callback (``Recorder.extras``)."""

    def __init__(self, callback: _Recording):
        self.callback = callback

    def checkpoint_ok(self) -> bool:
        return self.callback.checkpoint_ok()

    def state_dict(self) -> dict[str, Any]:
        return self.callback.saved()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.callback.restore(state)


def _always(*args: Any) -> bool:
    return True


def _never(*args: Any) -> bool:
    return False


#: ModelCheckpoint's methods that decide whether to save, as a replay answers them
NO_SAVING = {"_should_skip_saving_checkpoint": _always, "_should_save_on_exception": _never}


def _loaders(data: Any) -> Any:
    if isinstance(data, Mapping):
        for v in data.values():
            yield from _loaders(v)
    elif isinstance(data, (list, tuple)):
        for v in data:
            yield from _loaders(v)
    else:
        yield data


def _number(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor) and value.numel() == 1
