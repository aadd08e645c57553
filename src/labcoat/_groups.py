"""Group ids as the audit and the doctor read them: one id per row, compared as text.

Shared by :mod:`labcoat.audit.group_leakage` and :mod:`labcoat.doctor.inputs`, below both.
"""

from __future__ import annotations

import math
from typing import Any

from labcoat.errors import InputError


def group_ids(values: Any, name: str) -> list[str]:
    """One group id per row, as text (``1`` read from JSON matches ``"1"`` from CSV); a
    missing id or an empty list is refused, naming ``name``."""
    if hasattr(values, "detach"):
        values = values.detach().cpu().numpy()
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise InputError(
            f"{name}: expected one group id per row (a list or array); got {type(values).__name__}"
        )
    out = []
    for i, v in enumerate(values):
        if v is None or v == "" or (isinstance(v, float) and math.isnan(v)):
            raise InputError(f"{name}: row {i} has no group id; fill it in or drop the row")
        out.append(id_text(v))
    if not out:
        raise InputError(f"{name}: no rows")
    return out


def id_text(v: Any) -> str:
    """An id as text: numpy scalars unwrapped, whole floats without their ``.0``."""
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)
