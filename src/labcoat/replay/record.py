"""``labcoat.replayable``: a training run recorded so that any stretch of it replays exactly.

>>> with labcoat.replayable(model=model, optimizer=opt) as rec:        # doctest: +SKIP
...     for epoch in rec.loop("epoch", range(3)):
...         for x, y in rec.loop("step", loader):
...             loss = train_step(x, y)
...             rec.log(loss=loss)

The same object runs in two modes. Recording (the default) writes, under ``rec.dir``:
``run.json`` (command, provenance, determinism settings, loops), ``log.jsonl`` (every
``rec.log``) and checkpoints (see :mod:`labcoat.replay.checkpoint`). Replaying (when
``labcoat replay`` starts the script with ``LABCOAT_REPLAY`` pointing at a plan) restores the
checkpoint, fast-forwards the loops to its position (:mod:`labcoat.replay.loops`), runs the
steps asked for with the probes attached, and writes what was logged for the parent to compare.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from labcoat._jsonable import jsonable
from labcoat.errors import InputError
from labcoat.logs.capture import RECORD, note_step
from labcoat.replay import rng
from labcoat.replay.loops import Frame, run_loop
from labcoat.replay.runs import ENV_RUNS as ENV_RUNS  # where runs go, re-exported
from labcoat.replay.runs import runs_root

#: the environment variable through which ``labcoat replay`` hands the plan to the script
ENV_REPLAY = "LABCOAT_REPLAY"
#: the share of step time checkpoints may take when ``every`` is chosen automatically
BUDGET = 0.02
#: checkpoints kept besides the log-spaced history (``keep=None``: all)
DEFAULT_KEEP = 10
#: 2: DataLoader batches are no longer reseeded (workers' states travel with the batches)
RUN_VERSION = 2


class ReplayStop(SystemExit):
    """Raised at the end of the replayed window: the replay is done, the script stops."""


class ReplayError(InputError):
    """The script no longer matches its recording (raised in the replaying process)."""


def _named(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return {str(k): v for k, v in value.items() if v is not None}
    return {what: value}


def _command() -> list[str]:
    argv = list(getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv])
    argv[0] = sys.executable
    if len(argv) > 1 and not argv[1].startswith("-") and os.path.exists(argv[1]):
        argv[1] = os.path.abspath(argv[1])
    return argv


_PLAIN = frozenset({bool, int, float, str, type(None)})


def _value(value: Any, name: str) -> Any:
    if type(value) in _PLAIN:
        return value
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):  # the usual case: a loss
        return value.item() if value.numel() == 1 else value.detach().cpu().tolist()
    if isinstance(value, (bool, int, float, str)):
        return value
    item = getattr(value, "item", None)
    numel = getattr(value, "numel", None)
    if callable(numel) and callable(item):  # a tensor
        value = value.detach()
        return value.item() if value.numel() == 1 else value.cpu().tolist()
    if callable(item) and getattr(value, "size", 2) == 1:  # a numpy scalar
        return item()
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return tolist()
    if isinstance(value, (list, tuple)):
        return [_value(v, name) for v in value]
    raise InputError(
        f"rec.log({name}=…): expected a number, a string, a tensor or an array; got "
        f"{type(value).__name__}; log float(x) or str(x)"
    )


def _taken(value: Any, name: str) -> Any:
    """``value`` safe to convert later: a CPU tensor's number now, an accelerator tensor's
    copy (no wait for the device), anything else converted now."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        if value.numel() != 1:
            return value.detach().cpu().tolist()
        return value.item() if value.is_cpu else value.detach().clone()
    return _value(value, name)


def _line(entry: tuple[int, int, dict[str, Any]]) -> str:
    seq, step, values = entry
    clean = {k: _value(v, k) for k, v in values.items()}
    return json.dumps({"seq": seq, "step": step, "values": clean}) + "\n"


def _profile(values: list[float]) -> float | None:
    return sorted(values)[len(values) // 2] if values else None


class LogWriter:
    """``log.jsonl``, appended by a background thread: the training thread only queues lines
    (a write can sleep when the machine is writing a lot, a checkpoint for one). Lines reach
    the file within ``interval`` seconds, at every checkpoint and at the end; a run killed
    with SIGKILL may lose the lines of its last ``interval``."""

    def __init__(self, path: Path, interval: float = 0.05):
        import collections
        import threading

        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.lines: Any = collections.deque()
        self.interval = interval
        self.wake = threading.Event()
        self.stopping = False
        self.thread = threading.Thread(target=self._run, name="labcoat-record-log", daemon=True)
        self.thread.start()

    def write(self, entry: tuple[int, int, dict[str, Any]]) -> None:
        """Queue one ``rec.log`` call (seq, step, values); a deque's append is atomic, so the
        training thread takes no lock."""
        self.lines.append(entry)

    def flush(self) -> None:
        self.wake.set()

    def _run(self) -> None:
        while not self.stopping:
            self.wake.wait(self.interval)
            self.wake.clear()
            self._drain()
        self._drain()

    def _drain(self) -> None:
        out = []
        while True:
            try:
                entry = self.lines.popleft()
            except IndexError:
                break
            try:
                out.append(_line(entry))
            except Exception as exc:  # noqa: BLE001 - one bad value must not stop the log
                warnings.warn(
                    f"labcoat.replayable: rec.log at step {entry[1]} could not be written "
                    f"({exc!r})",
                    RuntimeWarning,
                    stacklevel=1,
                )
        if out:
            data = "".join(out).encode("utf-8")
            while data:
                data = data[os.write(self.fd, data) :]

    def close(self) -> None:
        self.stopping = True
        self.wake.set()
        self.thread.join()
        os.close(self.fd)


class Recorder:
    """A recorded (or replayed) training run; made by :func:`record`."""

    def __init__(
        self,
        model: Any = None,
        optimizer: Any = None,
        scheduler: Any = None,
        scaler: Any = None,
        loader: Any = None,
        every: int | None = None,
        dir: str | os.PathLike[str] | None = None,
        ledger: Any = None,
        *,
        generators: Any = None,
        keep: int | None = DEFAULT_KEEP,
        config: Any = None,
        data: Any = None,
        seeds: Any = None,
        deterministic: bool = True,
        name: str | None = None,
    ):
        self.models = _named(model, "model")
        self.optimizers = _named(optimizer, "optimizer")
        self.schedulers = _named(scheduler, "scheduler")
        self.scalers = _named(scaler, "scaler")
        self.loaders = _named(loader, "loader")
        self.generators = _named(generators, "generator")
        for gname, gen in self.generators.items():
            rng.generator_state(gen, gname)  # refuse what cannot be captured, now
        for kind, group in (("model", self.models), ("optimizer", self.optimizers)):
            for key, obj in group.items():
                if not callable(getattr(obj, "state_dict", None)):
                    raise InputError(
                        f"{kind}[{key!r}]: expected an object with state_dict() (a torch module "
                        f"or optimizer); got {type(obj).__name__}"
                    )
        if (
            every is not None
            and every != "saved"
            and (isinstance(every, bool) or not isinstance(every, int) or every < 1)
        ):
            raise InputError(
                f"every: expected a whole number of steps >= 1, None or 'saved' (checkpoint "
                f"only where rec.checkpoint_saved says); got {every!r}"
            )
        # "saved": no checkpoint of the recorder's own; one wherever the user saved theirs
        self.saved_only = every == "saved"
        if self.saved_only:
            every = 10**15
        if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int) or keep < 1):
            raise InputError(f"keep: expected a number of checkpoints >= 1 or None; got {keep!r}")
        self.auto_every = every is None
        self.every = every or 1
        self._every_source: Any = "measured" if every is None else "given"
        self._every_changes: list[list[int]] = []
        self.keep = keep
        self._ledger_arg = ledger
        self._capture = {"config": config, "data": data, "seeds": seeds}
        self.deterministic = deterministic
        self.name = name
        self.plan: dict[str, Any] | None = None
        spec = os.environ.get(ENV_REPLAY, "").strip()
        if spec:
            self.plan = json.loads(Path(spec).read_text())
        self.recording = self.plan is None
        self.run_id: str = ""
        self.dir: Path = Path()
        if self.recording:
            self.run_id = time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)
            self.dir = runs_root(dir) / self.run_id
        else:
            self.dir = Path(self.plan["run_dir"])
            self.run_id = self.dir.name
        self.frames: list[Frame] = []
        self.deepest = 0
        self.step = 0
        self.seq = 0  # rec.log calls so far
        self.arrived = self.recording
        self._entered = False
        self._closed = False
        # recording
        self._log: Any = None
        self._writer: Any = None
        self._store: Any = None
        self._loops: dict[str, dict[str, Any]] = {}
        self._last_ckpt: int | None = None
        self._ckpt_steps: list[int] = []
        self._fg_costs: list[float] = []
        self._bg_costs: list[float] = []
        self._bytes: list[tuple[int, int]] = []
        self._step_time: float | None = None
        self._last_leaf: float | None = None
        self._paused = 0.0
        self._ledger: Any = None
        self._ledger_run: Any = None
        self._group: Any = None  # labcoat.replay.rank.Group under torch.distributed
        self._saved: Any = None  # the user's checkpoint the next boundary references
        self._saved_at: int | None = None
        self._started = time.monotonic()
        self._saved_determinism: dict[str, Any] = {}
        self._abandoned: int | None = None  # the step whose loop was left last, if it was
        self._next_due = 0  # no checkpoint before this step
        self._draws_checked: set[str] = set()  # loops whose items were checked for RNG draws
        self._loaders_seen: set[int] = set()  # DataLoaders whose dataset was fingerprinted
        self._persistent: dict[int, Any] = {}  # loader -> its persistent workers' states
        # replaying
        self._state: dict[str, Any] | None = None
        self._replayed: list[dict[str, Any]] = []
        self._probes: list[Any] = []
        # trainers (labcoat.replay.integrations): state beyond the state dicts, by name (an
        # object with state_dict/load_state_dict, and checkpoint_ok() where a checkpoint must
        # wait), and the hooks that fired
        self.extras: dict[str, Any] = {}
        self.hooked: list[str] = []
        self._attached: Any = None

    # -- lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> "Recorder":
        if self._entered:
            raise InputError("this recorder was already used; make a new labcoat.replayable(...)")
        self._entered = True
        for loader in self.loaders.values():
            from labcoat.replay.loops import is_dataloader
            from labcoat.replay.workers import install

            if is_dataloader(loader):
                install(loader)
        if self.recording:
            self._start_recording()
        else:
            try:
                self._start_replay()
            except InputError as exc:
                self._write_out(error=str(exc))
                raise
        from labcoat.replay.integrations import attach

        self._attached = attach(self)
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        if self._closed:
            return False
        self._closed = True
        self._restore_determinism()
        from labcoat.replay.integrations import detach, warn_unrecorded

        detach(self._attached)
        if exc_type is None and self.recording:
            warn_unrecorded(self)
        if exc_type is not None and self._abandoned is not None:
            self.step = self._abandoned  # the step that raised did not finish
        if self.recording:
            self._finish_recording(failed=exc_type is not None)
            return False
        stopped = exc_type is not None and issubclass(exc_type, ReplayStop)
        error = raised = None
        if isinstance(exc, InputError):
            error = str(exc)
        elif exc_type is not None and not stopped and self.arrived:
            # the window ends where the script fails (as a crashed run did): keep what it logged
            raised = f"{exc_type.__name__}: {exc} (at step {self.step})"
        elif exc_type is not None and not stopped:
            error = (
                f"the script raised {exc_type.__name__}: {exc} before reaching checkpoint "
                f"{self.plan['checkpoint']}"
            )
        elif not self.arrived:
            error = (
                f"the script ended before reaching checkpoint {self.plan['checkpoint']}'s position "
                f"({self._position_text(self._state['positions'])}); its loops no longer match the "
                "recording"
            )
        self._write_out(error=error, raised=raised)
        if exc_type is None:
            # the replay ends with the recorded block: what the script does after it (saving a
            # model, writing results) must not run again
            raise ReplayStop(0)
        return False

    @property
    def replaying(self) -> bool:
        """True in a replay: guard side effects inside the loop (saving files, uploading)."""
        return not self.recording

    # -- the user's side -------------------------------------------------------------------
    def loop(self, name: str, iterable: Iterable[Any], *, steps: bool = True) -> Iterator[Any]:
        """Iterate ``iterable`` as the loop ``name``, recording its position (nestable). A loop
        with no loop inside it counts steps; ``steps=False`` marks one that does not (an
        evaluation loop)."""
        if not self._entered or self._closed:
            raise InputError(
                "rec.loop() was called outside the recording; use it inside `with "
                "labcoat.replayable(...) as rec:`"
            )
        if not isinstance(name, str) or not name:
            raise InputError(f"rec.loop: name must be a non-empty string; got {name!r}")
        return run_loop(self, name, iterable, steps=steps)

    def enumerate(
        self, name: str, iterable: Iterable[Any], *, steps: bool = True
    ) -> Iterator[tuple[int, Any]]:
        """:meth:`loop` yielding ``(index, item)``; unlike ``enumerate(rec.loop(...))`` the
        index stays right on replay, where the loop starts at the checkpoint's position."""
        for item in self.loop(name, iterable, steps=steps):
            yield self.index(name), item

    def index(self, name: str) -> int:
        """The index of the current item of the open loop ``name`` (replays keep it right; a
        counter of the script's own restarts at the checkpoint's position)."""
        for frame in reversed(self.frames):
            if frame.name == name:
                return frame.index - 1
        raise InputError(f"rec.index({name!r}): no loop of that name is open")

    def log(self, **values: Any) -> None:
        """Record values the run reports at this step (replays compare them)."""
        if not self._entered or self._closed:
            raise InputError("rec.log() was called outside the recording")
        seq = self.seq
        self.seq = seq + 1
        if self.recording:
            # the training thread only takes the values (a CPU tensor's number; a copy of an
            # accelerator's, read later): the log thread converts and writes them
            for k, v in values.items():
                if type(v) not in _PLAIN:
                    values[k] = _taken(v, k)
            self._log.write((seq, self.step, values))
            return
        clean = {k: _value(v, k) for k, v in values.items()}
        if self.arrived:
            self._replayed.append({"seq": seq, "step": self.step, "values": clean})
        for probe in self._probes:
            note = getattr(probe, "on_log", None)
            if note is not None:
                note(self.step, clean)

    def checkpoint_saved(
        self, path: str | os.PathLike[str], keys: Mapping[str, str] | None = None
    ) -> None:
        """The training just saved its own checkpoint at ``path`` (a ``torch.save`` file of a
        dict of state dicts, or a ``torch.distributed.checkpoint`` folder): the checkpoint at
        the next loop boundary stores all but what it holds, and refers to it (see
        :mod:`labcoat.replay.storage`). ``keys``: the name given to labcoat.replayable -> the
        file's key; default every model and optimizer under its own name. No-op in a replay."""
        from labcoat.replay.storage import Reference, resolve_keys

        if not self._entered or self._closed:
            raise InputError("rec.checkpoint_saved() was called outside the recording")
        if not self.recording:
            return
        self._saved = Reference(Path(path), resolve_keys(self, keys))
        self._saved_at = self.step

    def alert_evidence(self, step: int) -> dict[str, Any]:
        """What a watch alert at ``step`` adds to its evidence: the nearest checkpoint at or
        before it and the command that replays its window with probes."""
        before = [s for s in self._ckpt_steps if s <= step]
        if not before:
            return {"record_run": self.run_id}
        start = before[-1]
        return {
            "record_run": self.run_id,
            "checkpoint": start,
            "replay": f"labcoat replay {self.dir} --from {start} --to {step} --probe activations",
        }

    # -- recording -------------------------------------------------------------------------
    def _start_recording(self) -> None:
        from labcoat.ledger import Ledger
        from labcoat.provenance import capture_provenance
        from labcoat.replay.checkpoint import Store, Writer
        from labcoat.replay.rank import join_group

        root = self.dir.parent
        root.mkdir(parents=True, exist_ok=True)
        self._group = join_group(self)  # under torch.distributed: <root>/<run>/rank<k>
        ignore = root / ".gitignore"
        if not ignore.exists():  # recorded runs never enter the code's provenance (git diff)
            ignore.write_text("# written by labcoat.replayable: runs are not source\n*\n")
        self._apply_determinism()
        command = _command()
        if self.auto_every:
            from labcoat.replay.runs import previous_every

            earlier = previous_every(root, command)
            if earlier is not None:  # a repeat of a recorded command checkpoints as it did
                self.every, source = earlier
                self._every_source = {"reused_from": source}
        self._ledger = Ledger.for_recording(self._ledger_arg)
        provenance = None
        if self._ledger is not None and hasattr(self._ledger, "start_run"):
            if self._ledger.current_run_id() is None:
                self._ledger_run = self._ledger.start_run(
                    name=self.name or "record", command=command, **self._capture
                )
                provenance = self._ledger_run.provenance
        if provenance is None:
            provenance = capture_provenance(command=command, **self._capture)
        self._provenance = _provenance_dict(provenance)
        from labcoat.replay.status import identity

        self._process = identity()  # a later command tells a killed run from a running one
        from labcoat.replay.datasets import argv_fingerprints

        named = {d["name"] for d in self._provenance["data"]}
        self._provenance["data"] += [
            fp for fp in argv_fingerprints(sys.argv[1:], sys.argv[0]) if fp["name"] not in named
        ]
        self.dir.mkdir(parents=True, exist_ok=False)
        self._store = Store(self.dir)
        self._store.create()
        self._write_manifest(status="running")
        self._log = LogWriter(self.dir / "log.jsonl")
        self._writer = Writer(self._store, self.keep, self._checkpoint_done)
        if self._ledger is not None and hasattr(self._ledger, "record_event"):
            self._ledger.record_event(
                "record",
                run=self._ledger_run.id if self._ledger_run is not None else None,
                source="replay",
                data={"run_id": self.run_id, "dir": str(self.dir.resolve())},
            )

    def _manifest(self, status: str) -> dict[str, Any]:
        import torch

        return {
            "version": RUN_VERSION,
            "run_id": self.run_id,
            "name": self.name,
            "status": status,
            "command": _command(),
            "cwd": os.getcwd(),
            "created": getattr(self, "_created", None) or time.time(),
            "determinism": {
                "deterministic": self.deterministic,
                "torch_threads": torch.get_num_threads(),
                "cuda": bool(torch.cuda.is_available()),
            },
            "process": self._process,
            "every": "saved" if self.saved_only else None if self.auto_every else self.every,
            "every_chosen": self.every,
            # how: "measured" (from this run's costs, changing at these steps), or reused from
            # an earlier recording of the same command, so that repeats checkpoint alike
            "every_source": self._every_source,
            "every_changes": self._every_changes,
            "keep": self.keep,
            "models": sorted(self.models),
            "optimizers": sorted(self.optimizers),
            "loops": self._loops,
            "steps": self.step,
            "ledger_run": None if self._ledger_run is None else self._ledger_run.id,
            "group": None if self._group is None else self._group.to_dict(),
            "provenance": self._provenance,
            "costs": {
                "checkpoint_s": _profile(self._fg_costs),
                "background_s": _profile(self._bg_costs),
                "step_s": self._step_time,
                "bytes_per_checkpoint": _profile([b for _, b in self._bytes]),
            },
        }

    def _write_manifest(self, status: str) -> None:
        from labcoat.replay.checkpoint import write_atomic

        if not hasattr(self, "_created"):
            self._created = time.time()
        data = json.dumps(jsonable(self._manifest(status)), indent=1).encode()
        write_atomic(self.dir / "run.json", data)

    def _finish_recording(self, failed: bool) -> None:
        if self._saved is not None:
            warnings.warn(
                f"labcoat.replayable: rec.checkpoint_saved({str(self._saved.path)!r}) at step "
                f"{self._saved_at} was not followed by a loop boundary, so no checkpoint "
                "refers to it; call it inside rec.loop, after the save",
                RuntimeWarning,
                stacklevel=3,
            )
        try:
            if self._writer is not None:
                self._writer.close()
        finally:
            if self._log is not None:
                self._log.close()
            self._write_manifest(status="failed" if failed else "finished")
            if self._ledger_run is not None:
                self._ledger.finish_run(
                    self._ledger_run,
                    status="failed" if failed else "ok",
                    exit_status=None,
                    duration_s=time.monotonic() - self._started,
                )

    def _checkpoint_done(self, manifest: dict[str, Any], cpu_s: float) -> None:
        self._bg_costs.append(cpu_s)
        self._bytes.append((manifest["step"], manifest["bytes_written"]))

    def _state_now(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "log_count": self.seq,
            "positions": [f.position() for f in self.frames],
            "models": {k: m.state_dict() for k, m in self.models.items()},
            # gradients accumulated but not yet applied (gradient accumulation)
            "grads": {
                k: {n: p.grad for n, p in m.named_parameters() if p.grad is not None}
                for k, m in self.models.items()
                if hasattr(m, "named_parameters")
            },
            "optimizers": {k: o.state_dict() for k, o in self.optimizers.items()},
            "schedulers": {k: s.state_dict() for k, s in self.schedulers.items()},
            "scalers": {k: s.state_dict() for k, s in self.scalers.items()},
            "rng": rng.capture(self.generators),
            "extras": {k: x.state_dict() for k, x in self.extras.items()},
        }

    def checkpoint(self) -> None:
        """Take a checkpoint now (at a loop boundary; :meth:`loop` calls it when due)."""
        from labcoat.replay.checkpoint import snapshot

        start = time.perf_counter()
        state = self._state_now()
        verify = None
        if self._saved is not None:  # the user's checkpoint holds the big part
            from functools import partial

            from labcoat.replay.storage import reference_state, verify_saved

            state = reference_state(state, self._saved)
            verify = partial(verify_saved, self._saved)
            self._saved = None
        skeleton, refs = snapshot(state)
        info = {
            "positions": [[f.name, f.index] for f in self.frames],
            "created": time.time(),
            "log_count": self.seq,
        }
        self._writer.raise_error()
        self._writer.submit(self.step, skeleton, refs, info, verify)
        self._log.flush()
        self._last_ckpt = self.step
        self._ckpt_steps.append(self.step)
        cost = time.perf_counter() - start
        self._fg_costs.append(cost)
        self._paused += cost

    def _choose_every(self) -> int:
        from labcoat.replay.checkpoint import nice_every

        if self._step_time is None or not self._fg_costs:
            return self.every
        fg = self._fg_costs[-1]
        bg = self._bg_costs[-1] if self._bg_costs else fg
        required = (fg + bg) / (BUDGET * max(self._step_time, 1e-9))
        if self._group is not None:  # every rank checkpoints at the same steps
            return self._group.agree_every(required)
        return nice_every(required)

    def wait_for_writes(self) -> None:
        if self._writer is not None:
            start = time.perf_counter()
            self._writer.wait()
            self._paused += time.perf_counter() - start

    # -- the loops' side (labcoat.replay.loops) --------------------------------------------
    def check_loop(self, frame: Frame) -> None:
        self.deepest = max(self.deepest, frame.depth)
        if self.recording:
            known = self._loops.setdefault(
                frame.name, {"depth": frame.depth, "length": frame.length}
            )
            if known["depth"] != frame.depth:
                known["depth"] = min(known["depth"], frame.depth)

    def seek_target(self, frame: Frame) -> dict[str, Any] | None:
        if self.arrived or self._state is None:
            return None
        positions = self._state["positions"]
        if frame.depth >= len(positions):  # pragma: no cover - arrival happens before
            return None
        target = positions[frame.depth]
        if target["name"] != frame.name:
            raise ReplayError(
                f"run {self.run_id}: the script's loops no longer match the recording: at depth "
                f"{frame.depth} the recording has loop {target['name']!r}, the script now opens "
                f"{frame.name!r}; rename the loop back or record a new run"
            )
        recorded = (self._recorded_loops.get(frame.name) or {}).get("length")
        if recorded is not None and frame.length is not None and recorded != frame.length:
            raise ReplayError(
                f"run {self.run_id}: loop {frame.name!r} had {recorded} items when recorded, the "
                f"script now gives {frame.length} (batch size or data changed?); restore them or "
                "record a new run"
            )
        return target

    def is_arrival(self, frame: Frame) -> bool:
        return self._state is not None and frame.depth == len(self._state["positions"]) - 1

    def loop_too_short(self, frame: Frame, needed: int, got: int) -> None:
        raise ReplayError(
            f"run {self.run_id}: loop {frame.name!r} ended after {got} items, but checkpoint "
            f"{self.plan['checkpoint']} was taken after {needed} (the data or the loop changed); "
            "restore them or record a new run"
        )

    def capture_rng(self, iterable: Any) -> Any:
        if not self.recording:
            return None
        state = rng.capture_global()
        loaders = {}
        if iterable is not None:
            for role, gen in rng.loader_generators(iterable).items():
                loaders[role] = gen.get_state()
        return {"global": state, "loader": loaders}

    def restore_rng(self, state: Any, iterable: Any) -> None:
        if state is None:
            return
        rng.restore_global(state["global"])
        if iterable is not None:
            gens = rng.loader_generators(iterable)
            for role, value in (state.get("loader") or {}).items():
                if role in gens:
                    gens[role].set_state(value)

    def note_loader(self, name: str, loader: Any) -> None:
        """Fingerprint a DataLoader's dataset the first time loop ``name`` iterates it, so a
        diff of two runs names a data difference (see :mod:`labcoat.replay.datasets`)."""
        if not self.recording or id(loader) in self._loaders_seen:
            return
        from labcoat.replay.datasets import dataset_fingerprint

        self._loaders_seen.add(id(loader))
        fp = dataset_fingerprint(loader.dataset, name)
        data = self._provenance["data"]
        if fp is not None and all(d["name"] != fp["name"] for d in data):
            data.append(fp)
            self._write_manifest(status="running")

    def worker_states(self, loader: Any, name: str) -> Any:
        """The workers' RNG states of ``loader`` for the epoch starting: new for each epoch,
        but one for all epochs of a loader whose workers persist (their RNGs run on)."""
        from labcoat.replay.workers import WorkerStates

        if not getattr(loader, "persistent_workers", False):
            return WorkerStates(loader, name)
        key = id(loader)
        if key not in self._persistent:
            self._persistent[key] = WorkerStates(loader, name)
        return self._persistent[key]

    def unskippable_unchecked(self, name: str) -> bool:
        return name not in self._draws_checked

    def note_draws(self, name: str, iterable: Any, before: Any, index: int) -> bool:
        """After fetching item ``index`` of loop ``name``: did the fetch draw from the global
        RNGs (said once, naming the iterable)? Returns whether to check the next item too."""
        from labcoat.replay import workers

        if not workers.same_global(before, rng.capture_global()):
            self._draws_checked.add(name)
            workers.note_unskippable(name, iterable)
            return False
        if index >= 1:  # its first two items drew nothing
            self._draws_checked.add(name)
            return False
        return True

    def finish_iteration(self, frame: Frame, *, abandoned: bool = False) -> None:
        """The current item's iteration ended (``abandoned``: the loop was left, by a break or
        an exception, so the step may not have finished)."""
        if not frame.open:
            return
        frame.open = False
        if frame.had_child or frame.extra.get("steps") is False:
            return
        finished = self.step
        self.step += 1
        self._abandoned = finished if abandoned else None
        now = time.perf_counter()
        if self.recording:
            if self._last_leaf is not None:
                dt = now - self._last_leaf - self._paused
                if dt > 0:
                    self._step_time = (
                        dt if self._step_time is None else 0.9 * self._step_time + 0.1 * dt
                    )
            self._last_leaf = now
            self._paused = 0.0
        for probe in self._probes:
            probe.on_step_end(finished)

    def boundary(self, frame: Frame) -> None:
        self._abandoned = None
        self.finish_iteration(frame)
        note_step(self.step, RECORD)  # captured lines carry the step that begins (labcoat.logs)
        if frame.extra.get("steps") is False:
            return
        if self.recording:
            if self._saved is not None and self._last_ckpt != self.step:
                self.checkpoint()  # refers to the checkpoint the user just saved
                return
            if self.saved_only or self.step < self._next_due or self._last_ckpt == self.step:
                return
            if self.auto_every and self.step > 0 and self._every_source == "measured":
                if self._step_time is None:  # not measured yet: no checkpoint but the first
                    return
                chosen = self._choose_every()  # from the latest costs
                if chosen != self.every or not self._every_changes:
                    self._every_changes.append([self.step, chosen])
                self.every = chosen
            if self.step == 0 or self.step % self.every == 0:
                if not self._may_checkpoint():  # a trainer cannot resume here: the next one
                    self._next_due = self.step + 1
                    return
                self.checkpoint()
            # the next step that may checkpoint: the next multiple of `every`
            self._next_due = (self.step // self.every + 1) * self.every
        elif self.arrived and self.step > self.plan["to"]:
            raise ReplayStop(0)

    def _may_checkpoint(self) -> bool:
        return all(x.checkpoint_ok() for x in self.extras.values() if hasattr(x, "checkpoint_ok"))

    # -- replaying -------------------------------------------------------------------------
    def _start_replay(self) -> None:
        from labcoat.replay.checkpoint import Store

        manifest = json.loads((self.dir / "run.json").read_text())
        self.run_id = str(manifest.get("run_id") or self.run_id)  # "<id>/rank1" for a rank
        self._recorded_loops = manifest.get("loops") or {}
        det = manifest.get("determinism") or {}
        self.deterministic = bool(det.get("deterministic", self.deterministic))
        self._apply_determinism()
        threads = det.get("torch_threads")
        if threads:
            import torch

            torch.set_num_threads(int(threads))
        missing = sorted(set(manifest.get("models") or []) - set(self.models)) + sorted(
            set(manifest.get("optimizers") or []) - set(self.optimizers)
        )
        if missing:
            raise ReplayError(
                f"run {self.run_id}: the recording checkpointed {missing}, which the script no "
                "longer passes to labcoat.replayable; pass them again"
            )
        self._state = Store(self.dir).load(int(self.plan["checkpoint"]))

    def arrive(self, frame: Frame) -> None:
        """The loops reached the checkpoint's position: restore the state it holds."""
        state = self._state
        assert state is not None
        for group, objs in (
            ("models", self.models),
            ("optimizers", self.optimizers),
            ("schedulers", self.schedulers),
            ("scalers", self.scalers),
        ):
            for key, obj in objs.items():
                if key in state[group]:
                    obj.load_state_dict(state[group][key])
        for key, model in self.models.items():
            grads = (state.get("grads") or {}).get(key)
            if grads is None or not hasattr(model, "named_parameters"):
                continue
            for pname, param in model.named_parameters():
                grad = grads.get(pname)
                param.grad = None if grad is None else grad.to(param.device, param.dtype)
        rng.restore(state["rng"], self.generators)
        for key, extra in self.extras.items():
            if key in (state.get("extras") or {}):
                extra.load_state_dict(state["extras"][key])
        self.step = int(state["step"])
        self.seq = int(state["log_count"])
        self.arrived = True
        from labcoat.replay.probes import make_probes

        self._probes = make_probes(self.plan.get("probes") or [], self)
        for probe in self._probes:
            probe.start()

    def _write_out(self, error: str | None, raised: str | None = None) -> None:
        if self.plan is None:
            return
        probes = {}
        for probe in self._probes:
            try:
                probes[probe.name] = probe.finish()
            except Exception as exc:  # noqa: BLE001 - a probe must not hide the replay
                probes[probe.name] = {"error": repr(exc)}
        out = {
            "error": error,
            "raised": raised,
            "arrived": self.arrived,
            "checkpoint": self.plan["checkpoint"],
            "last_step": self.step,
            "logs": self._replayed,
            "probes": probes,
        }
        from labcoat.replay.checkpoint import write_atomic

        write_atomic(Path(self.plan["out"]), json.dumps(out).encode())

    @staticmethod
    def _position_text(positions: list[dict[str, Any]]) -> str:
        return ", ".join(f"{p['name']} at {p['index']}" for p in positions) or "start"

    # -- determinism -----------------------------------------------------------------------
    def _apply_determinism(self) -> None:
        """Deterministic kernels where torch has them (warn, never fail, where it has not),
        cuDNN without autotuning, and cuBLAS's fixed workspace; undone on exit."""
        if not self.deterministic:
            return
        import torch

        self._saved_determinism = {
            "algorithms": torch.are_deterministic_algorithms_enabled(),
            "warn_only": torch.is_deterministic_algorithms_warn_only_enabled(),
            "cudnn_deterministic": torch.backends.cudnn.deterministic,
            "cudnn_benchmark": torch.backends.cudnn.benchmark,
        }
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False

    def _restore_determinism(self) -> None:
        saved = self._saved_determinism
        if not saved:
            return
        import torch

        torch.use_deterministic_algorithms(saved["algorithms"], warn_only=saved["warn_only"])
        torch.backends.cudnn.deterministic = saved["cudnn_deterministic"]
        torch.backends.cudnn.benchmark = saved["cudnn_benchmark"]

    def __repr__(self) -> str:
        mode = "recording" if self.recording else "replaying"
        return f"Recorder({mode} {self.run_id}, step={self.step}, every={self.every})"


def _provenance_dict(provenance: Any) -> dict[str, Any]:
    git = provenance.git
    return jsonable(
        {
            "command": provenance.command,
            "cwd": provenance.cwd,
            "host": provenance.host,
            "git": None
            if git is None
            else {
                "commit": git.commit,
                "branch": git.branch,
                "dirty": git.dirty,
                "diff_sha256": __import__("hashlib").sha256(git.diff).hexdigest()
                if git.diff
                else None,
            },
            "config": provenance.config,
            "config_hash": provenance.config_hash,
            "data": [f.to_dict() for f in provenance.data],
            "data_hash": provenance.data_hash,
            "env": provenance.env,
            "env_hash": provenance.env_hash,
            "seeds": provenance.seeds,
        }
    )


def replayable(
    model: Any = None,
    optimizer: Any = None,
    scheduler: Any = None,
    scaler: Any = None,
    loader: Any = None,
    every: int | None = None,
    dir: str | os.PathLike[str] | None = None,
    ledger: Any = None,
    **options: Any,
) -> Recorder:
    """Record a training run so that any stretch of it can be replayed; a context manager.

    Parameters
    ----------
    model, optimizer, scheduler, scaler
        What a checkpoint restores; several (a GAN, an EMA copy) as a dict name -> object.
    loader
        DataLoader(s) to prepare before their first epoch (``rec.loop`` prepares the others
        when it first sees them).
    every
        Checkpoint every this many steps; ``None`` chooses it from measured costs, so
        checkpoints take at most 2 % of the step time.
    dir
        Where runs go (``rec.dir`` is ``dir/<run_id>``); default ``$LABCOAT_RUNS`` or
        ``.labcoat/runs`` at the project root.
    ledger
        A :class:`labcoat.Ledger`, a path, ``None`` (the project's ledger if it exists) or
        ``False``: the ledger run that holds this run's provenance.
    **options
        ``generators`` (user RNGs by name: NumPy Generators, torch Generators,
        ``random.Random``), ``keep`` (checkpoints kept besides a log-spaced history, default
        10; ``None`` keeps all), ``config``, ``data`` and ``seeds`` (provenance, as
        ``Ledger.run`` takes them), ``deterministic`` (default True: deterministic kernels,
        see docs/replay.md) and ``name``.
    """
    return Recorder(
        model=model,
        optimizer=optimizer,
        scheduler=scheduler,
        scaler=scaler,
        loader=loader,
        every=every,
        dir=dir,
        ledger=ledger,
        **options,
    )


def record(*args: Any, **kwargs: Any) -> Recorder:
    """Deprecated: :func:`replayable` (``record`` is how a result is saved in the ledger)."""
    from labcoat._validation import warn_deprecated

    warn_deprecated("labcoat.record()", "labcoat.replayable()")
    return replayable(*args, **kwargs)
