"""Fingerprints of input batches, so the ``repeat_batch`` invariant can tell when the same
batch comes back (DataLoader workers forked with the same random state, an IterableDataset
that every worker yields in full).

A fingerprint is the structure of the batch (the shape and dtype of each tensor, the keys of
each mapping) plus a digest of a strided sample of at most :data:`SAMPLE` elements of each
tensor, spread over the whole tensor so every row is sampled. Host tensors and arrays are
digested at once (CRC-32 of the sampled bytes, a few microseconds); a tensor on an
accelerator is reduced on its device to two float64 numbers (the plain and a randomly weighted
sum of the sample, exact for integer token ids) that travel with the sampled step's one
transfer, so fingerprinting never waits for the device.
"""

from __future__ import annotations

import hashlib
import zlib
from typing import Any, Mapping

import numpy as np
import torch

#: elements of each tensor that go into its fingerprint
SAMPLE = 2048
_weights: dict[tuple[torch.device, int], torch.Tensor] = {}


class Fingerprint:
    """A batch's structure and host digests now, its device digests once they reach the host."""

    __slots__ = ("structure", "digests", "device")

    def __init__(self) -> None:
        self.structure: list[Any] = []
        self.digests: list[int] = []
        self.device: list[torch.Tensor] = []  # one [2] float64 tensor per accelerator tensor

    def key(self, device_values: list[float]) -> str:
        """The fingerprint as a hex string, given this batch's device digests as host numbers."""
        text = repr((self.structure, self.digests, device_values)).encode()
        return hashlib.blake2b(text, digest_size=12).hexdigest()


def fingerprint(batch: Any) -> Fingerprint:
    """The fingerprint of ``batch``: a tensor, an array, or lists, tuples and mappings of them."""
    fp = Fingerprint()
    _add(batch, fp, depth=0)
    return fp


def _add(obj: Any, fp: Fingerprint, depth: int) -> None:
    if depth > 8:
        fp.structure.append(type(obj).__name__)
    elif isinstance(obj, torch.Tensor):
        _add_tensor(obj.detach(), fp)
    elif isinstance(obj, np.ndarray):
        fp.structure.append((obj.shape, str(obj.dtype)))
        flat = obj.reshape(-1)
        fp.digests.append(_digest(np.ascontiguousarray(flat[:: _stride(flat.size)]).tobytes()))
    elif isinstance(obj, Mapping):
        fp.structure.append(("map", len(obj)))
        for k in obj:
            fp.structure.append(str(k))
            _add(obj[k], fp, depth + 1)
    elif isinstance(obj, (list, tuple)):
        fp.structure.append(("seq", len(obj)))
        for item in obj:
            _add(item, fp, depth + 1)
    else:  # strings, numbers, anything else the batch carries
        fp.digests.append(_digest(repr(obj).encode()))


def _add_tensor(t: torch.Tensor, fp: Fingerprint, on_host: bool | None = None) -> None:
    fp.structure.append((tuple(t.shape), str(t.dtype)))
    if t.numel() == 0:
        return
    flat = t.reshape(-1)[:: _stride(t.numel())]
    if t.device.type == "cpu" if on_host is None else on_host:
        sample = flat.contiguous()
        raw = sample.view(torch.uint8) if sample.element_size() == 1 else sample.view(torch.int16)
        fp.digests.append(_digest(raw.numpy().tobytes()))
        return
    values = flat.to(torch.float64)
    weights = _weights_for(values.device, values.numel())
    fp.device.append(torch.stack([values.sum(), values.dot(weights)]))


def _stride(numel: int) -> int:
    return max(1, -(-numel // SAMPLE))


def _digest(data: bytes) -> int:
    # CRC-32 (hardware-assisted, a few microseconds for 16 KB): a cryptographic hash costs
    # ten times more per batch, and a chance collision within a window of a few dozen
    # batches (about 1 in 10^8) would still need a second one to raise an alert
    return zlib.crc32(data)


def _weights_for(device: torch.device, n: int) -> torch.Tensor:
    w = _weights.get((device, n))
    if w is None:
        gen = torch.Generator().manual_seed(n)
        w = torch.rand(n, generator=gen, dtype=torch.float64).add_(0.5).to(device)
        _weights[(device, n)] = w
    return w
