"""Turn evidence (numpy scalars, tensors, paths, dataclasses) into plain JSON values."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import PurePath
from typing import Any


def jsonable(obj: Any, *, max_items: int = 1000) -> Any:
    """Return ``obj`` as nested dicts, lists, str, int, float, bool or None.

    Non-finite floats become the strings ``"nan"``, ``"inf"`` and ``"-inf"`` so the output is
    strict JSON. Large arrays are cut to ``max_items`` entries rather than dumped whole.
    """
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        return _float(obj)
    if isinstance(obj, dict):
        return {str(k): jsonable(v, max_items=max_items) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        items = list(obj)[:max_items]
        return [jsonable(v, max_items=max_items) for v in items]
    if isinstance(obj, PurePath):
        return str(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        if hasattr(obj, "to_dict"):
            return jsonable(obj.to_dict(), max_items=max_items)
        return jsonable(dataclasses.asdict(obj), max_items=max_items)
    # numpy and torch without importing either eagerly
    tolist = getattr(obj, "tolist", None)
    if callable(tolist):
        if hasattr(obj, "detach"):
            obj = obj.detach().cpu()
        size = getattr(obj, "size", None)
        if callable(size):  # torch.Tensor.size is a method
            n = obj.numel()
        else:
            n = int(size) if size is not None else 0
        if n > max_items:
            obj = obj.reshape(-1)[:max_items]
        return jsonable(obj.tolist(), max_items=max_items)
    item = getattr(obj, "item", None)
    if callable(item):
        return jsonable(item(), max_items=max_items)
    return str(obj)


def dumps(obj: Any) -> str:
    """Canonical JSON text of a plain value: sorted keys, no spaces, UTF-8 kept, NaN refused.

    The one encoding for what is stored and hashed (the ledger, provenance digests): the same
    value always gives the same text. Pass ``jsonable(x)`` for values that are not plain yet.
    """
    return json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def _float(x: float) -> float | str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x
