"""Input checks particular to :mod:`labcoat.stats` (score arrays, paired lengths); the scalar
checks are :mod:`labcoat._validation`'s constraints, re-exported here under the names the stats
modules use.

Each check names the argument, says what it got and what it needed, and raises
:class:`labcoat.errors.InputError` so the CLI prints one line and exits 2.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from labcoat._validation import FINITE, Interval, Seed, check_choice, check_int, check_probability
from labcoat.errors import InputError

__all__ = [
    "check_choice",
    "check_count",
    "check_finite",
    "check_positive",
    "check_probability",
    "check_random_state",
    "check_same_length",
    "check_scores",
]


def check_scores(values: Any, name: str, *, min_size: int = 1) -> np.ndarray:
    """``values`` as a finite 1-D float array of at least ``min_size`` entries."""
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(
            f"`{name}` must be numbers; could not read them as floats ({exc})."
        ) from None
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise InputError(
            f"`{name}` must be one-dimensional (one score per item); got shape {arr.shape}. "
            "Average repeated answers per item first, or pass them as a cluster column."
        )
    if arr.size < min_size:
        raise InputError(f"`{name}` needs at least {min_size} value(s); got {arr.size}.")
    bad = ~np.isfinite(arr)
    if bad.any():
        where = np.flatnonzero(bad)
        raise InputError(
            f"`{name}` has {where.size} non-finite value(s) (NaN or inf), first at position "
            f"{int(where[0])}; drop or score those items before computing statistics."
        )
    return arr


def check_positive(value: Any, name: str, *, allow_zero: bool = False) -> float:
    """A finite real number > 0 (or >= 0 with ``allow_zero``)."""
    return Interval(float, 0.0, low_open=not allow_zero).check(value, name)


def check_finite(value: Any, name: str) -> float:
    """A finite real number."""
    return FINITE.check(value, name)


def check_count(value: Any, name: str, *, minimum: int = 1) -> int:
    """An integer >= ``minimum``."""
    return check_int(value, name, minimum=minimum)


def check_random_state(value: Any, name: str = "seed") -> np.random.Generator:
    """A numpy Generator from a seed (a non-negative integer), a Generator, or None (fresh
    entropy)."""
    return Seed(generator=True).check(value, name)


def check_same_length(first: np.ndarray, second: np.ndarray, names: tuple[str, str]) -> None:
    if first.shape[0] != second.shape[0]:
        raise InputError(
            f"`{names[0]}` and `{names[1]}` must have one entry per item; got "
            f"{first.shape[0]} and {second.shape[0]}."
        )
