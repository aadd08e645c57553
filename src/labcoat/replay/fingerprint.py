"""An exact fingerprint of a tensor, cheap enough for every step: what ranks compare
(``labcoat divergence RUN --ranks``) and what a checkpoint that references the user's own keeps of
each tensor (:mod:`labcoat.replay.storage`)."""

from __future__ import annotations

from typing import Any

_INT_OF_SIZE = {1: "int8", 2: "int16", 4: "int32", 8: "int64"}


def int_sum(tensor: Any) -> Any:
    """The 0-d int64 tensor behind :func:`fingerprint` (on the tensor's device)."""
    import torch

    t = tensor.detach()
    if t.is_complex():
        t = torch.view_as_real(t)
    if t.dtype == torch.bool:
        t = t.to(torch.int8)
    if t.is_floating_point():
        t = t.view(getattr(torch, _INT_OF_SIZE[t.element_size()]))
    return t.sum(dtype=torch.int64)


def fingerprint(tensor: Any) -> int:
    """An exact fingerprint of a tensor's bytes: the sum of its elements' bit patterns read as
    integers, accumulated in int64 (wrapping). Integer addition is associative, so the value is
    the same on every device, thread count and reduction order, and one pass over memory (a
    fused kernel on an accelerator) costs far less than a hash; any change to one element
    changes it."""
    return int(int_sum(tensor))
