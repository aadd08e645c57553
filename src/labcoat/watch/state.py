"""Running state as plain data, so a watch can be checkpointed with the model.

:func:`encode` turns an invariant's declared state (deques, numpy arrays, violations, objects
with their own ``state_dict``) into dicts, lists, tuples and numbers only, which
``torch.save`` writes and ``torch.load(weights_only=True)`` (the default) reads back;
:func:`decode` restores it, guided by the freshly set-up value it replaces.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from typing import Any

import numpy as np

from labcoat._validation import article

_TAG = "__labcoat__"


def encode(obj: Any) -> Any:
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj)
    if isinstance(obj, deque):
        return {_TAG: "deque", "items": [encode(v) for v in obj], "maxlen": obj.maxlen}
    if isinstance(obj, (set, frozenset)):
        return {_TAG: "set", "items": [encode(v) for v in obj]}
    if isinstance(obj, list):
        return [encode(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(encode(v) for v in obj)
    if isinstance(obj, dict):
        return {k: encode(v) for k, v in obj.items()}
    if isinstance(obj, np.ndarray):
        return {_TAG: "ndarray", "data": obj.tolist(), "dtype": str(obj.dtype)}
    if callable(getattr(obj, "state_dict", None)):
        return {_TAG: "object", "state": encode(obj.state_dict())}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        fields = {f.name: encode(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
        return {_TAG: "dataclass", "type": type(obj).__name__, "fields": fields}
    raise TypeError(f"cannot checkpoint {article(type(obj).__name__)}")


def decode(data: Any, like: Any = None, types: dict[str, type] | None = None) -> Any:
    """``data`` from :func:`encode` as live objects; ``like`` is the value it replaces (an
    object restored in place keeps its configuration), ``types`` names dataclasses by name."""
    if isinstance(data, dict) and _TAG in data:
        tag = data[_TAG]
        if tag == "deque":
            maxlen = like.maxlen if isinstance(like, deque) else data["maxlen"]
            return deque((decode(v, types=types) for v in data["items"]), maxlen=maxlen)
        if tag == "set":
            return {decode(v, types=types) for v in data["items"]}
        if tag == "ndarray":
            return np.asarray(data["data"], dtype=data["dtype"])
        if tag == "object":
            like.load_state_dict(decode(data["state"], types=types))
            return like
        if tag == "dataclass":
            cls = (types or {})[data["type"]]
            return cls(**{k: decode(v, types=types) for k, v in data["fields"].items()})
    if isinstance(data, list):
        return [decode(v, types=types) for v in data]
    if isinstance(data, tuple):
        return tuple(decode(v, types=types) for v in data)
    if isinstance(data, dict):
        return {k: decode(v, types=types) for k, v in data.items()}
    return data
