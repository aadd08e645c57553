"""Statistics computed where the tensors live, and moved to the host in one go.

Norms of many tensors come from one fused ``torch._foreach_norm`` call per (device, dtype)
bucket and land in a single float64 vector on the device; :func:`to_host` then concatenates
every pending vector and calls ``.tolist()`` once per device, so a sampled step costs one
host transfer however many parameters the model has. Half-precision tensors are reduced in
float32, so their norms are precise enough to tell "unchanged" from "barely changed".

On the CPU there is no transfer to save, while every tensor operation costs: right after a
training step the dispatcher's code has left the caches, and a stack or a dtype conversion
then takes tens of microseconds on a busy machine. :func:`norms` therefore returns CPU norms
as Python floats at once, and :func:`to_host` passes such lists through.
"""

from __future__ import annotations

from typing import Sequence

import torch

_LOW_PRECISION = (torch.float16, torch.bfloat16)
#: read CPU tensors at once rather than in the sampled step's one transfer (tests turn it off
#: to take the accelerators' path on the CPU)
READ_CPU_AT_ONCE = True


def read_at_once(t: torch.Tensor) -> bool:
    """Whether ``t`` lives where reading it costs no wait (the CPU)."""
    return t.is_cpu and READ_CPU_AT_ONCE


def fused_norms(tensors: Sequence[torch.Tensor], ord: float = 2.0) -> torch.Tensor:
    """Norms of ``tensors`` as one float64 vector, in input order, on the first tensor's device."""
    if not tensors:
        return torch.zeros(0, dtype=torch.float64)
    buckets: dict[tuple[torch.device, torch.dtype], list[int]] = {}
    for i, t in enumerate(tensors):
        buckets.setdefault((t.device, t.dtype), []).append(i)
    parts: list[tuple[list[int], torch.Tensor]] = []
    for (_, dtype), idx in buckets.items():
        group = [_dense(tensors[i]) if tensors[i].is_sparse else tensors[i].detach() for i in idx]
        kwargs = {"dtype": torch.float32} if dtype in _LOW_PRECISION else {}
        norms = torch._foreach_norm(group, ord, **kwargs)
        parts.append((idx, torch.stack(norms).to(torch.float64)))
    if len(parts) == 1:
        return parts[0][1]
    device = tensors[0].device
    out = torch.empty(len(tensors), dtype=torch.float64, device=device)
    for idx, vec in parts:
        out[torch.tensor(idx, device=device)] = vec.to(device, non_blocking=True)
    return out


def norms(tensors: Sequence[torch.Tensor]) -> torch.Tensor | list[float]:
    """Norms of ``tensors`` in input order: Python floats when every tensor is a dense CPU
    tensor of one dtype (one kernel, no conversions), else :func:`fused_norms`' vector."""
    if not tensors:
        return []
    dtype = tensors[0].dtype
    for t in tensors:
        if not t.is_cpu or t.is_sparse or t.dtype is not dtype or not READ_CPU_AT_ONCE:
            return fused_norms(tensors)
    kwargs = {"dtype": torch.float32} if dtype in _LOW_PRECISION else {}
    with torch.no_grad():  # parameters are read as they are, without an autograd record
        found = torch._foreach_norm(tensors, 2.0, **kwargs)
    return [n.item() for n in found]


def _dense(t: torch.Tensor) -> torch.Tensor:
    # sparse gradients (nn.Embedding(sparse=True)): the norm of the summed values
    return t.detach().coalesce().values()


def to_host(vectors: Sequence[torch.Tensor | list[float]]) -> list[list[float]]:
    """Each 1-D tensor in ``vectors`` as a list of floats, with one transfer per accelerator
    (lists, already on the host, pass through; a CPU tensor needs no transfer to share)."""
    by_device: dict[torch.device, list[int]] = {}
    out: list[list[float]] = [[] for _ in vectors]
    for i, v in enumerate(vectors):
        if isinstance(v, list):
            out[i] = v
        elif read_at_once(v):
            out[i] = v.reshape(-1).tolist()
        else:
            by_device.setdefault(v.device, []).append(i)
    for idx in by_device.values():
        flat = torch.cat([vectors[i].reshape(-1).to(torch.float64) for i in idx]).tolist()
        start = 0
        for i in idx:
            n = vectors[i].numel()
            out[i] = flat[start : start + n]
            start += n
    return out


def stack_scalars(values: Sequence[torch.Tensor | float]) -> torch.Tensor:
    """Losses (tensors or numbers) as one float64 vector; tensors stay on their device."""
    tensors = [v for v in values if isinstance(v, torch.Tensor)]
    if len(tensors) == len(values):
        try:
            return torch.stack([t.reshape(()) for t in tensors]).to(torch.float64)
        except RuntimeError:  # mixed devices or dtypes: fall back to one scalar at a time
            pass
    return torch.tensor(
        [
            float(v.detach().reshape(()).cpu()) if isinstance(v, torch.Tensor) else float(v)
            for v in values
        ],
        dtype=torch.float64,
    )
