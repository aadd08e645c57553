"""Fingerprints of the data a run used: files, directories, arrays and tensors.

A fingerprint depends on content only (never on mtime or path), so a copied dataset keeps its
fingerprint and a touched-but-unchanged file does not look changed. Small inputs are hashed in
full. Large ones are *sampled* by default: the size plus evenly spaced chunks that always
include the first and the last, so fingerprinting a 100 GB shard reads a few MiB. Sampling sees
appends, truncation, re-shuffles and re-encodings, but can miss an edit that falls between two
chunks; ``full=True`` hashes every byte when that matters. The method is part of the record.
"""

from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from labcoat._validation import article
from labcoat.errors import InputError

CHUNK_BYTES = 64 << 10
SAMPLED_CHUNKS = 64
#: at or below this size everything is hashed: sampling would read it all anyway
SAMPLE_ABOVE_BYTES = CHUNK_BYTES * SAMPLED_CHUNKS
READ_BYTES = 1 << 20


@dataclass(frozen=True)
class Fingerprint:
    """What one input was, by content: comparable across runs and machines."""

    name: str
    kind: str  # "file" | "directory" | "array" | "tensor" | "bytes" | "collection"
    digest: str
    size: int  # bytes hashed over (a directory: all its files)
    method: str  # "full" | "sampled"
    shape: tuple[int, ...] | None = None
    dtype: str | None = None
    files: int | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["shape"] = None if self.shape is None else list(self.shape)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Fingerprint":
        shape = data.get("shape")
        return cls(
            name=data["name"],
            kind=data["kind"],
            digest=data["digest"],
            size=int(data["size"]),
            method=data["method"],
            shape=None if shape is None else tuple(shape),
            dtype=data.get("dtype"),
            files=data.get("files"),
        )


def _hasher() -> "hashlib._Hash":
    return hashlib.blake2b(digest_size=32)


def _digest_reader(
    size: int, read_at: Callable[[int, int], bytes], *, full: bool
) -> tuple[str, str]:
    """Hash ``size`` bytes read through ``read_at(offset, n)``: all of them, or a sample."""
    h = _hasher()
    h.update(size.to_bytes(8, "little"))
    if full or size <= SAMPLE_ABOVE_BYTES:
        for offset in range(0, size, READ_BYTES):
            h.update(read_at(offset, min(READ_BYTES, size - offset)))
        return "full", h.hexdigest()
    last = size - CHUNK_BYTES
    for i in range(SAMPLED_CHUNKS):
        offset = (last * i) // (SAMPLED_CHUNKS - 1)
        h.update(offset.to_bytes(8, "little"))
        h.update(read_at(offset, CHUNK_BYTES))
    return "sampled", h.hexdigest()


def fingerprint_file(
    path: str | os.PathLike[str], *, full: bool = False, name: str | None = None
) -> Fingerprint:
    p = Path(path)
    size = p.stat().st_size
    with open(p, "rb") as f:

        def read_at(offset: int, n: int) -> bytes:
            f.seek(offset)
            return f.read(n)

        method, digest = _digest_reader(size, read_at, full=full)
    return Fingerprint(name or str(path), "file", f"blake2b:{digest}", size, method)


def fingerprint_directory(
    path: str | os.PathLike[str], *, full: bool = False, name: str | None = None
) -> Fingerprint:
    """Every regular file under ``path`` by relative name (hidden files too, links followed)."""
    root = Path(path)
    h = _hasher()
    total, count, methods = 0, 0, set()
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        part = fingerprint_file(file, full=full)
        h.update(file.relative_to(root).as_posix().encode())
        h.update(b"\0")
        h.update(part.digest.encode())
        total += part.size
        count += 1
        methods.add(part.method)
    method = "sampled" if "sampled" in methods else "full"
    return Fingerprint(
        name or str(path), "directory", f"blake2b:{h.hexdigest()}", total, method, files=count
    )


def _fingerprint_buffer(
    buf: memoryview, *, kind: str, name: str, full: bool, shape=None, dtype=None
) -> Fingerprint:
    flat = buf.cast("B") if buf.ndim != 1 or buf.format != "B" else buf
    method, digest = _digest_reader(len(flat), lambda o, n: flat[o : o + n], full=full)
    if (
        shape is not None or dtype is not None
    ):  # the same bytes as another dtype/shape are other data
        h = _hasher()
        h.update(f"{dtype}|{shape}|{digest}".encode())
        digest = h.hexdigest()
    return Fingerprint(name, kind, f"blake2b:{digest}", len(flat), method, shape=shape, dtype=dtype)


def _is_tensor(obj: Any) -> bool:
    torch = sys.modules.get("torch")  # a tensor exists only if torch is already imported
    return torch is not None and isinstance(obj, torch.Tensor)


def fingerprint(obj: Any, *, name: str | None = None, full: bool = False) -> Fingerprint:
    """Fingerprint a path (file or directory), bytes, an array (anything with ``__array__``),
    a torch tensor, or a ``TensorDataset``-like object with a ``tensors`` tuple.

    Arrays and tensors are hashed over their raw bytes together with dtype and shape.
    """
    if isinstance(obj, (str, os.PathLike)):
        p = Path(obj)
        try:
            if p.is_dir():
                return fingerprint_directory(p, full=full, name=name)
            if p.is_file():
                return fingerprint_file(p, full=full, name=name)
        except OSError as exc:
            raise InputError(
                f"data: cannot read {exc.filename or os.fspath(obj)!r} ({exc.strerror or exc}); "
                "fix its permissions or leave it out of the data to fingerprint"
            ) from None
        raise InputError(
            f"data: {os.fspath(obj)!r} is not an existing file or directory; "
            "pass paths that exist (relative to the current directory) or the arrays themselves"
        )
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return _fingerprint_buffer(memoryview(obj), kind="bytes", name=name or "bytes", full=full)
    if _is_tensor(obj):
        import torch

        t = obj.detach().to("cpu").contiguous()
        raw = t.reshape(-1).view(torch.uint8) if t.numel() else torch.empty(0, dtype=torch.uint8)
        return _fingerprint_buffer(
            memoryview(raw.numpy()),
            kind="tensor",
            name=name or "tensor",
            full=full,
            shape=tuple(t.shape),
            dtype=str(t.dtype),
        )
    if hasattr(obj, "__array__") and not isinstance(obj, (str, bytes)):  # numpy, pandas, …
        import numpy as np

        a = np.ascontiguousarray(np.asarray(obj))
        if a.dtype.hasobject:
            raise InputError(
                f"data: {name or 'array'} has dtype object, whose bytes are pointers, not data; "
                "convert it to a numeric or string dtype before fingerprinting"
            )
        return _fingerprint_buffer(
            memoryview(a.reshape(-1).view(np.uint8)),
            kind="array",
            name=name or "array",
            full=full,
            shape=tuple(int(s) for s in a.shape),
            dtype=str(a.dtype),
        )
    tensors = getattr(obj, "tensors", None)
    if isinstance(tensors, (tuple, list)) and tensors:
        parts = [
            fingerprint(t, name=f"{name or 'dataset'}[{i}]", full=full)
            for i, t in enumerate(tensors)
        ]
        h = _hasher()
        for part in parts:
            h.update(part.digest.encode())
        return Fingerprint(
            name or type(obj).__name__,
            "collection",
            f"blake2b:{h.hexdigest()}",
            sum(p.size for p in parts),
            "sampled" if any(p.method == "sampled" for p in parts) else "full",
        )
    raise InputError(
        f"data: cannot fingerprint {article(type(obj).__name__)}; pass file or directory paths, "
        "bytes, "
        "numpy arrays, torch tensors or a TensorDataset (or a dict of name -> one of these)"
    )


def fingerprint_all(data: Any, *, full: bool = False) -> list[Fingerprint]:
    """Fingerprints of ``data``: one input, a sequence of inputs, or a dict name -> input."""
    if data is None:
        return []
    if isinstance(data, Mapping):
        return [fingerprint(v, name=str(k), full=full) for k, v in data.items()]
    if (
        isinstance(data, (str, os.PathLike, bytes, bytearray, memoryview))
        or _is_tensor(data)
        or hasattr(data, "shape")
    ):
        return [fingerprint(data, full=full)]
    if isinstance(data, (list, tuple)):
        return [
            fingerprint(
                v, full=full, name=None if isinstance(v, (str, os.PathLike)) else f"data[{i}]"
            )
            for i, v in enumerate(data)
        ]
    return [fingerprint(data, full=full)]
