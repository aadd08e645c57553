"""Checkpoints: a content-addressed tensor store, written off the training thread.

A checkpoint is three kinds of file under the run's directory:

* ``objects/ab/cdef…``: one tensor's raw bytes, named by their sha256; a tensor that did not
  change between checkpoints (a frozen backbone) is stored once, however many checkpoints
  hold it;
* ``checkpoints/00000040.pkl``: the state's skeleton (state dicts, RNG states, loop positions)
  with every tensor replaced by a :class:`TensorRef`;
* ``checkpoints/00000040.json``: the manifest (step, the skeleton's sha256, the objects it
  needs, bytes); written last, so a checkpoint exists exactly when its manifest does.

Every file is written to a temporary name and renamed, so a run killed with SIGKILL keeps every
checkpoint it finished and no half-written one. Reading checks every hash.

On the training thread a checkpoint only copies the state (tensors to fresh CPU tensors);
hashing, pickling and writing happen on a background :class:`Writer` thread.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import pickle
import queue
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from labcoat.errors import InputError

MANIFEST_VERSION = 1


@dataclass
class TensorRef:
    """Where a tensor of the skeleton went: its bytes' sha256, dtype and shape."""

    dtype: str
    shape: tuple[int, ...]
    digest: str = ""
    nbytes: int = 0
    requires_grad: bool = False
    # the copy waiting to be written (never pickled)
    data: Any = field(default=None, repr=False, compare=False)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["data"] = None
        return state


def snapshot(state: Any) -> tuple[Any, list[TensorRef]]:
    """A copy of ``state`` safe from the training that follows: every tensor becomes a
    :class:`TensorRef` holding a fresh contiguous CPU copy; other values are deep-copied."""
    import torch

    refs: list[TensorRef] = []

    def walk(obj: Any) -> Any:
        if isinstance(obj, torch.Tensor):
            t = obj.detach()
            data = t.to("cpu", copy=True) if t.device.type != "cpu" else t.clone()
            data = data.contiguous()
            ref = TensorRef(
                str(data.dtype).removeprefix("torch."),
                tuple(data.shape),
                requires_grad=bool(obj.requires_grad),
                data=data,
            )
            refs.append(ref)
            return ref
        if isinstance(obj, dict):
            out = {k: walk(v) for k, v in obj.items()}
            if type(obj) is not dict:  # an OrderedDict state_dict: keep its type and _metadata
                out = type(obj)(out) if _rebuildable(obj) else out
                if hasattr(obj, "_metadata"):
                    out._metadata = copy.deepcopy(obj._metadata)  # type: ignore[attr-defined]
            return out
        if type(obj) in _ATOMS:
            return obj
        if isinstance(obj, tuple) and all(type(v) in _ATOMS for v in obj):
            return obj  # immutable already (Python's RNG state: 625 ints)
        if isinstance(obj, list):
            return [walk(v) for v in obj]
        if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
            return tuple(walk(v) for v in obj)
        return copy.deepcopy(obj)

    return walk(state), refs


_ATOMS = frozenset({int, float, str, bytes, bool, type(None)})


def _rebuildable(obj: dict) -> bool:
    import collections

    return type(obj) is collections.OrderedDict


def _tensor_bytes(data: Any) -> memoryview:
    flat = data.reshape(-1)
    return memoryview(flat.view(__import__("torch").uint8).numpy())


def materialize(skeleton: Any, store: "Store") -> Any:
    """The skeleton with every :class:`TensorRef` read back (hash-checked) as a CPU tensor."""
    import torch

    def walk(obj: Any) -> Any:
        if isinstance(obj, TensorRef):
            raw = store.read_object(obj.digest)
            dtype = getattr(torch, obj.dtype)
            if raw:
                flat = torch.frombuffer(bytearray(raw), dtype=torch.uint8)
            else:
                flat = torch.empty(0, dtype=torch.uint8)
            return flat.view(dtype).reshape(obj.shape)
        if isinstance(obj, dict):
            return {k: walk(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [walk(v) for v in obj]
        if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
            return tuple(walk(v) for v in obj)
        return obj

    return walk(skeleton)


def write_atomic(path: Path, data: bytes | memoryview) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename."""
    tmp = path.with_name(f".tmp-{path.name}-{os.getpid()}-{threading.get_ident()}")
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


class Store:
    """The files of one run's checkpoints (see the module docstring)."""

    def __init__(self, run_dir: str | os.PathLike[str]):
        self.root = Path(run_dir)
        self.objects = self.root / "objects"
        self.checkpoints = self.root / "checkpoints"
        self._known: set[str] = set()

    def create(self) -> None:
        self.objects.mkdir(parents=True, exist_ok=True)
        self.checkpoints.mkdir(parents=True, exist_ok=True)

    def object_path(self, digest: str) -> Path:
        return self.objects / digest[:2] / digest[2:]

    def put_object(self, data: bytes | memoryview) -> tuple[str, int]:
        """Store bytes under their sha256 (once); returns (digest, bytes newly written)."""
        digest = hashlib.sha256(data).hexdigest()
        if digest in self._known:
            return digest, 0
        path = self.object_path(digest)
        written = 0
        if not path.exists():
            path.parent.mkdir(exist_ok=True)
            write_atomic(path, data)
            written = len(data) if isinstance(data, bytes) else data.nbytes
        self._known.add(digest)
        return digest, written

    def read_object(self, digest: str) -> bytes:
        path = self.object_path(digest)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raise InputError(
                f"checkpoint object {digest[:12]} of run {self.root.name} is missing ({path}); "
                "the run directory lost files; replay from another checkpoint with --from"
            ) from None
        if hashlib.sha256(raw).hexdigest() != digest:
            raise InputError(
                f"checkpoint object {digest[:12]} of run {self.root.name} fails its hash (the "
                f"file {path} was changed or truncated); replay from an earlier checkpoint with "
                "--from"
            )
        return raw

    def manifest_path(self, step: int) -> Path:
        return self.checkpoints / f"{step:08d}.json"

    def steps(self) -> list[int]:
        """Steps of the finished checkpoints, in order."""
        if not self.checkpoints.is_dir():
            return []
        out = []
        for path in self.checkpoints.glob("*.json"):
            if path.stem.isdigit():
                out.append(int(path.stem))
        return sorted(out)

    def manifest(self, step: int) -> dict[str, Any]:
        path = self.manifest_path(step)
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise InputError(
                f"checkpoint {step} of run {self.root.name}: its manifest {path} cannot be read "
                f"({exc}); replay from another checkpoint with --from"
            ) from None

    def skeleton(self, step: int) -> Any:
        """Checkpoint ``step``'s skeleton (its tensors as :class:`TensorRef`), hash-checked."""
        manifest = self.manifest(step)
        path = self.checkpoints / manifest["skeleton"]
        try:
            raw = path.read_bytes()
        except OSError:
            raw = b""
        if hashlib.sha256(raw).hexdigest() != manifest["skeleton_sha256"]:
            raise InputError(
                f"checkpoint {step} of run {self.root.name} fails its hash ({path} was changed, "
                "truncated or lost); replay from an earlier checkpoint with --from"
            )
        return pickle.loads(raw)

    def load(self, step: int) -> dict[str, Any]:
        """The state checkpoint ``step`` holds, every hash checked (and the user's checkpoint
        it references, if any: see :mod:`labcoat.replay.storage`)."""
        skeleton = self.skeleton(step)
        external = self.manifest(step).get("external")
        if external:
            from labcoat.replay.storage import restore_saved

            skeleton = restore_saved(skeleton, external, self.root.name, step)
        return materialize(skeleton, self)

    def verify(self, step: int) -> None:
        """Raise :class:`InputError` when any file of checkpoint ``step`` fails its hash."""
        manifest = self.manifest(step)
        raw = (self.checkpoints / manifest["skeleton"]).read_bytes()
        if hashlib.sha256(raw).hexdigest() != manifest["skeleton_sha256"]:
            raise InputError(
                f"checkpoint {step} of run {self.root.name} fails its hash; replay from an "
                "earlier checkpoint with --from"
            )
        for digest in manifest["objects"]:
            self.read_object(digest)

    # -- writing (the writer thread) -------------------------------------------------------
    def commit(
        self,
        step: int,
        skeleton: Any,
        refs: list[TensorRef],
        info: dict[str, Any],
        verify: Callable[[Any], dict[str, Any]] | None = None,
    ) -> dict:
        """Write the tensors, the skeleton and, last, the manifest of checkpoint ``step``.
        ``verify``: checks the user's checkpoint this one references, before anything is
        written (raising leaves no checkpoint); what it returns goes in the manifest."""
        external = verify(skeleton) if verify is not None else None
        written = 0
        digests = []
        for ref in refs:
            if ref.data is not None:
                view = _tensor_bytes(ref.data)
                ref.digest, n = self.put_object(view)
                ref.nbytes = view.nbytes
                written += n
                ref.data = None
            digests.append(ref.digest)
        raw = pickle.dumps(skeleton, protocol=pickle.HIGHEST_PROTOCOL)
        name = f"{step:08d}.pkl"
        write_atomic(self.checkpoints / name, raw)
        manifest = {
            "version": MANIFEST_VERSION,
            "step": step,
            "skeleton": name,
            "skeleton_sha256": hashlib.sha256(raw).hexdigest(),
            "objects": sorted(set(digests)),
            "bytes_written": written + len(raw),
            "bytes_total": sum(r.nbytes for r in refs) + len(raw),
            **info,
        }
        if external is not None:
            manifest["external"] = external
        write_atomic(self.manifest_path(step), json.dumps(manifest).encode())
        return manifest

    def remove(self, step: int, keep_objects: set[str]) -> None:
        """Delete checkpoint ``step`` (manifest first) and the objects no kept one needs."""
        try:
            manifest = self.manifest(step)
        except InputError:
            return
        self.manifest_path(step).unlink(missing_ok=True)
        (self.checkpoints / manifest["skeleton"]).unlink(missing_ok=True)
        for digest in manifest["objects"]:
            if digest not in keep_objects:
                self.object_path(digest).unlink(missing_ok=True)
                self._known.discard(digest)


def retained(steps: list[int], keep: int | None) -> set[int]:
    """The checkpoints retention keeps: the last ``keep`` and a log-spaced history (the first
    checkpoint, and the first at or after each power of two); ``keep=None`` keeps all."""
    if keep is None or len(steps) <= keep:
        return set(steps)
    ordered = sorted(steps)
    kept = set(ordered[-keep:])
    buckets: set[int] = set()
    for s in ordered:  # the first checkpoint in each [2^j, 2^(j+1))
        if s.bit_length() not in buckets:
            buckets.add(s.bit_length())
            kept.add(s)
    return kept


class Writer:
    """The background thread that commits checkpoints, one at a time, in order."""

    def __init__(self, store: Store, keep: int | None, on_done: Callable[[dict, float], None]):
        self.store = store
        self.keep = keep
        self.on_done = on_done
        self.queue: queue.Queue[Any] = queue.Queue(maxsize=2)
        self.error: BaseException | None = None
        self.committed: dict[int, set[str]] = {s: set() for s in store.steps()}
        self._thread = threading.Thread(target=self._run, name="labcoat-record", daemon=True)
        self._thread.start()

    def submit(
        self,
        step: int,
        skeleton: Any,
        refs: list[TensorRef],
        info: dict,
        verify: Callable[[Any], dict[str, Any]] | None = None,
    ) -> None:
        self.queue.put((step, skeleton, refs, info, verify))

    def _run(self) -> None:
        while True:
            job = self.queue.get()
            if job is None:
                self.queue.task_done()
                return
            start = time.thread_time()
            try:
                manifest = self.store.commit(*job)
                self.committed[manifest["step"]] = set(manifest["objects"])
                self._retain()
                self.on_done(manifest, time.thread_time() - start)
            except BaseException as exc:  # noqa: BLE001 - reported on the training thread
                self.error = exc
            finally:
                self.queue.task_done()

    def _retain(self) -> None:
        keep = retained(list(self.committed), self.keep)
        drop = [s for s in self.committed if s not in keep]
        if not drop:
            return
        needed = set().union(*(self.committed[s] for s in keep)) if keep else set()
        for step in drop:
            self.store.remove(step, needed)
            del self.committed[step]

    def wait(self) -> None:
        """Block until every submitted checkpoint is written."""
        self.queue.join()
        self.raise_error()

    def raise_error(self) -> None:
        if self.error is not None:
            error, self.error = self.error, None
            warnings.warn(
                f"labcoat.replayable: a checkpoint could not be written ({error!r}); training goes "
                "on, replay uses the checkpoints written before",
                RuntimeWarning,
                stacklevel=3,
            )

    def close(self) -> None:
        self.queue.put(None)
        self._thread.join()
        self.raise_error()


def nice_every(required: float) -> int:
    """The smallest of 1, 2, 5, 10, 20, 50, … at or above ``required``."""
    if not math.isfinite(required) or required <= 1:
        return 1
    exp = 10 ** math.floor(math.log10(required))
    for m in (1, 2, 5, 10):
        if m * exp >= required:
            return int(m * exp)
    return int(10 * exp)
