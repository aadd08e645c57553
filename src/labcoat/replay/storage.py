"""Checkpoints that reference the user's own: keep only what the user's checkpoint lacks.

A checkpoint of ``labcoat.replayable`` holds the model and optimizer state (about 16 bytes per
parameter with Adam) besides what only the recorder knows: RNG states, DataLoader seeds, loop
positions, logged values. Training at scale already writes its checkpoints. After saving one,
``rec.checkpoint_saved(path)`` tells the recorder; at the next loop boundary it takes a
checkpoint that stores everything but what ``path`` holds, and for those objects only their
structure (the non-tensor values, each tensor's dtype, shape and exact fingerprint, see
:func:`~labcoat.replay.checkpoint.fingerprint`).

Exactness is checked twice, never assumed:

* when recording, the background thread reads the file back and compares every referenced
  tensor's fingerprint (and every other value) with the training's state at the boundary, and
  hashes the file (sha256, every file of a ``torch.distributed.checkpoint`` folder). A file that
  does not hold that state (saved before the optimizer stepped, an EMA update after the save)
  gets no checkpoint and a warning that names the first tensor that differs;
* when replaying, the file's hash is checked again and the state read from it is compared with
  the recorded fingerprints: a file that changed, was truncated or is gone is refused with an
  error naming it, never replayed from.

Two formats are read: a file written by ``torch.save`` holding a dict (``{"model":
model.state_dict(), "optimizer": opt.state_dict()}``), and a ``torch.distributed.checkpoint``
folder (``dcp.save``), read without a process group into tensors shaped as recorded.
"""

from __future__ import annotations

import hashlib
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from labcoat.errors import InputError

GROUPS = ("models", "optimizers", "schedulers", "scalers")
_CHUNK = 1 << 22


@dataclass
class TensorPrint:
    """A tensor of the user's checkpoint, as the recorder knows it: dtype, shape, fingerprint."""

    dtype: str
    shape: tuple[int, ...]
    fingerprint: int


@dataclass
class External:
    """Where an object's state lives in the user's checkpoint (``key`` of its top-level dict),
    with the state's structure (tensors as :class:`TensorPrint`)."""

    key: str
    structure: Any


@dataclass
class Reference:
    """A checkpoint of the user's: where it is and which of the recorder's objects it holds
    (``(group, name)`` -> the key of the file's dict)."""

    path: Path
    keys: dict[tuple[str, str], str]


def resolve_keys(rec: Any, keys: Mapping[str, str] | None) -> dict[tuple[str, str], str]:
    """The objects a user's checkpoint holds: ``keys`` maps a name given to labcoat.replayable
    (or ``"optimizers.body"`` where two groups share one) to the file's key; default: every
    model and optimizer under its own name."""
    groups = {g: getattr(rec, g) for g in GROUPS}
    if keys is None:
        return {(g, n): n for g in ("models", "optimizers") for n in groups[g]}
    out: dict[tuple[str, str], str] = {}
    for name, key in keys.items():
        if "." in name and name.split(".", 1)[0] in groups:
            group, obj = name.split(".", 1)
            hits = [group] if obj in groups[group] else []
        else:
            obj = name
            hits = [g for g in GROUPS if name in groups[g]]
        if len(hits) != 1:
            known = sorted(f"{g}.{n}" for g in GROUPS for n in groups[g])
            what = "no object" if not hits else f"objects in {hits}"
            raise InputError(
                f"rec.checkpoint_saved(keys=…): {name!r} names {what} given to labcoat.replayable "
                f"(known: {', '.join(known) or 'none'}); name one as 'group.name'"
            )
        out[(hits[0], obj)] = str(key)
    return out


def _tensors_of(state: Any, out: list[Any]) -> None:
    import torch

    if isinstance(state, torch.Tensor):
        out.append(state)
    elif isinstance(state, Mapping):
        for v in state.values():
            _tensors_of(v, out)
    elif isinstance(state, (list, tuple)):
        for v in state:
            _tensors_of(v, out)


def prints(tensors: list[Any]) -> list[int]:
    """:func:`~labcoat.replay.checkpoint.fingerprint` of each tensor, read back in one
    transfer per device (no wait per tensor on an accelerator)."""
    import torch

    from labcoat.replay.fingerprint import fingerprint, int_sum

    if not tensors:
        return []
    by_device: dict[Any, list[int]] = {}
    for i, t in enumerate(tensors):
        by_device.setdefault(t.device, []).append(i)
    out = [0] * len(tensors)
    for device, idx in by_device.items():
        if device.type == "cpu":
            for i in idx:
                out[i] = fingerprint(tensors[i])
            continue
        sums = torch.stack([int_sum(tensors[i]) for i in idx]).cpu().tolist()
        for i, v in zip(idx, sums):
            out[i] = int(v)
    return out


def structure(state: Any) -> Any:
    """``state`` with every tensor replaced by its :class:`TensorPrint` (computed now, on the
    training thread: one pass over the tensors, no copy)."""
    import torch

    tensors: list[Any] = []
    _tensors_of(state, tensors)
    fps = iter(prints(tensors))

    def walk(obj: Any) -> Any:
        if isinstance(obj, torch.Tensor):
            return TensorPrint(str(obj.dtype).removeprefix("torch."), tuple(obj.shape), next(fps))
        if isinstance(obj, Mapping):
            return {k: walk(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [walk(v) for v in obj]
        if isinstance(obj, tuple):
            return tuple(walk(v) for v in obj)
        import copy

        return copy.deepcopy(obj)

    return walk(state)


def reference_state(state: dict[str, Any], ref: Reference) -> dict[str, Any]:
    """The checkpoint's state with the objects ``ref`` holds replaced by :class:`External`."""
    out = dict(state)
    for group in GROUPS:
        out[group] = dict(state[group])
    for (group, name), key in ref.keys.items():
        if name in out[group]:
            out[group][name] = External(key, structure(state[group][name]))
    return out


def externals(skeleton: Any) -> list[tuple[str, str, External]]:
    return [
        (group, name, value)
        for group in GROUPS
        for name, value in (skeleton.get(group) or {}).items()
        if isinstance(value, External)
    ]


# -- reading the user's checkpoint ---------------------------------------------------------------
def file_digest(path: Path) -> tuple[str, int]:
    """sha256 and size of a file, or of a folder's files (names and bytes, in order)."""
    digest = hashlib.sha256()
    total = 0
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for f in files:
        if path.is_dir():
            digest.update(str(f.relative_to(path)).encode() + b"\0")
        with open(f, "rb") as fh:
            while chunk := fh.read(_CHUNK):
                digest.update(chunk)
                total += len(chunk)
    return digest.hexdigest(), total


def _template(obj: Any) -> Any:
    """Empty tensors shaped as recorded, for ``torch.distributed.checkpoint`` to load into."""
    import torch

    if isinstance(obj, TensorPrint):
        return torch.empty(obj.shape, dtype=getattr(torch, obj.dtype))
    if isinstance(obj, Mapping):
        return {k: _template(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_template(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_template(v) for v in obj)
    return obj


def read_user(path: Path, wanted: list[External]) -> dict[str, Any]:
    """The file's key -> state for every ``wanted`` object (CPU tensors)."""
    import torch

    if path.is_dir():
        import torch.distributed.checkpoint as dcp

        state = {e.key: _template(e.structure) for e in wanted}
        with warnings.catch_warnings():  # "assuming … a single process": what no_dist asks
            warnings.simplefilter("ignore", UserWarning)
            dcp.load(state, checkpoint_id=str(path), no_dist=True)
        return state
    loaded = torch.load(path, map_location="cpu", mmap=True, weights_only=True)
    if not isinstance(loaded, Mapping):
        raise InputError(
            f"{path}: a torch.save file of a {type(loaded).__name__}; labcoat.replayable reads a "
            "dict of state dicts ({'model': model.state_dict(), ...})"
        )
    missing = [e.key for e in wanted if e.key not in loaded]
    if missing:
        raise InputError(
            f"{path}: no key {missing[0]!r} (it holds {sorted(map(str, loaded))[:8]}); pass "
            "rec.checkpoint_saved(path, keys={name given to labcoat.replayable: key in the file})"
        )
    return {e.key: loaded[e.key] for e in wanted}


def first_difference(recorded: Any, found: Any, where: str = "") -> str | None:
    """Where ``found`` (a state read from the user's file) differs from ``recorded`` (its
    structure when the checkpoint was taken), or None when it holds exactly that state."""
    import torch

    if isinstance(recorded, TensorPrint):
        if not isinstance(found, torch.Tensor):
            return f"{where or 'the state'}: a tensor then, a {type(found).__name__} in the file"
        dtype = str(found.dtype).removeprefix("torch.")
        if dtype != recorded.dtype or tuple(found.shape) != recorded.shape:
            return (
                f"{where}: {recorded.dtype}{list(recorded.shape)} then, {dtype}"
                f"{list(found.shape)} in the file"
            )
        if prints([found])[0] != recorded.fingerprint:
            return f"{where}: its values differ"
        return None
    if isinstance(recorded, Mapping):
        if not isinstance(found, Mapping) or set(map(str, found)) != set(map(str, recorded)):
            return f"{where or 'the state'}: other keys in the file"
        by_str = {str(k): v for k, v in found.items()}
        for k, v in recorded.items():
            diff = first_difference(v, by_str[str(k)], f"{where}.{k}" if where else str(k))
            if diff:
                return diff
        return None
    if isinstance(recorded, (list, tuple)):
        if not isinstance(found, (list, tuple)) or len(found) != len(recorded):
            return f"{where}: another length in the file"
        for i, (a, b) in enumerate(zip(recorded, found)):
            diff = first_difference(a, b, f"{where}[{i}]")
            if diff:
                return diff
        return None
    return None if recorded == found else f"{where}: {recorded!r} then, {found!r} in the file"


class NotTheState(Exception):
    """The user's checkpoint does not hold the training's state at the recorder's boundary."""


def verify_saved(ref: Reference, skeleton: Any) -> dict[str, Any]:
    """On the writer thread, before the manifest: check the user's file holds exactly what the
    skeleton's :class:`External` entries describe; what the manifest records about it."""
    path = ref.path
    if not path.exists():
        raise NotTheState(f"{path} does not exist")
    wanted = externals(skeleton)
    try:
        state = read_user(path, [e for _, _, e in wanted])
    except InputError as exc:
        raise NotTheState(str(exc)) from None
    for group, name, ext in wanted:
        diff = first_difference(ext.structure, state[ext.key])
        if diff:
            raise NotTheState(
                f"{path} does not hold {group}[{name!r}] as it was at the loop boundary after "
                f"the save ({ext.key}.{diff}); save after the optimizer step and call "
                "rec.checkpoint_saved right after torch.save"
            )
    digest, size = file_digest(path)
    return {
        "path": str(path.resolve()),
        "format": "torch.distributed.checkpoint" if path.is_dir() else "torch.save",
        "sha256": digest,
        "bytes": size,
        "objects": sorted(f"{g}.{n}" for g, n, _ in wanted),
    }


def restore_saved(skeleton: Any, info: dict[str, Any], run: str, step: int) -> Any:
    """At replay: the skeleton with the user's checkpoint read back in, after checking that
    it is the file recorded (hash) holding the state recorded (fingerprints)."""
    path = Path(info["path"])
    what = f"checkpoint {step} of run {run} references {path}"
    fix = "restore the file, or replay from another checkpoint with --from"
    if not path.exists():
        raise InputError(f"{what}, which is gone; {fix}")
    digest, _ = file_digest(path)
    if digest != info["sha256"]:
        raise InputError(
            f"{what}, which changed since it was recorded (sha256 {digest[:12]}, recorded "
            f"{info['sha256'][:12]}); {fix}"
        )
    wanted = externals(skeleton)
    state = read_user(path, [e for _, _, e in wanted])
    out = dict(skeleton)
    for group, name, ext in wanted:
        diff = first_difference(ext.structure, state[ext.key])
        if diff:
            raise InputError(f"{what}, which no longer holds {group}[{name!r}] ({diff}); {fix}")
        out[group] = dict(out[group])
        out[group][name] = state[ext.key]
    return out


__all__ = ["External", "Reference", "TensorPrint", "restore_saved", "verify_saved"]
