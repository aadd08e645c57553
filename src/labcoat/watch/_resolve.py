"""Which parameters every rank holds an identical copy of, for ``desync``.

Under data parallelism that is all of them. Under tensor parallelism a rank holds its own
shard of some weights, so those are left out by default: a DTensor whose placements shard or
partially hold it, and a parameter marked the way Megatron-style libraries mark their shards
(``tensor_model_parallel=True``, or a ``partition_dim`` of 0 or more). A replicated DTensor is
compared through its local copy. Parameters marked ``sequence_parallel`` stay in: they are
full copies on every rank (layer norms), whose gradients need an extra all-reduce, so a
missing one is exactly the drift ``desync`` exists to catch.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch import nn

from labcoat.params import resolve


def select_replicated(model: nn.Module, replicated: Any) -> dict[str, torch.Tensor]:
    """The replicated parameters (see the module docstring); ``replicated`` narrows them with
    a predicate ``(name, param) -> bool`` or a list of modules, parameters, names or globs."""
    params = {n: p for n, p in model.named_parameters() if not is_sharded(p)}
    if replicated is None:
        chosen = params
    elif callable(replicated) and not isinstance(replicated, (nn.Module, torch.Tensor)):
        predicate: Callable[[str, torch.Tensor], bool] = replicated
        chosen = {n: p for n, p in params.items() if predicate(n, p)}
    else:
        named = resolve(model, replicated, "replicated", with_buffers=False)
        chosen = {n: p for n, p in named.items() if n in params}
    return {n: _local(p) for n, p in chosen.items()}


def is_sharded(param: torch.Tensor) -> bool:
    """Whether ``param`` is one rank's shard rather than a full copy."""
    placements = getattr(param, "placements", None)
    if placements is not None and hasattr(param, "to_local"):  # a DTensor
        return not all(type(p).__name__ == "Replicate" for p in placements)
    if getattr(param, "tensor_model_parallel", False):
        return True
    dim = getattr(param, "partition_dim", None)
    return isinstance(dim, int) and not isinstance(dim, bool) and dim >= 0


def _local(param: torch.Tensor) -> torch.Tensor:
    to_local = getattr(param, "to_local", None)
    if getattr(param, "placements", None) is not None and callable(to_local):
        return to_local()
    return param
