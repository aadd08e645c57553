"""Input checks for :mod:`labcoat.stats`, one place per kind of argument.

Each check names the argument, says what it got and what it needed, and raises
:class:`labcoat.errors.InputError` so the CLI prints one line and exits 2.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from labcoat.errors import InputError


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


def check_probability(value: Any, name: str) -> float:
    """A number strictly between 0 and 1 (a confidence level, alpha or power)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not 0.0 < float(value) < 1.0
    ):
        raise InputError(f"`{name}` must be a number strictly between 0 and 1; got {value!r}.")
    return float(value)


def check_positive(value: Any, name: str, *, allow_zero: bool = False) -> float:
    """A finite real number > 0 (or >= 0 with ``allow_zero``)."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and np.isfinite(value)
    if ok:
        ok = value >= 0 if allow_zero else value > 0
    if not ok:
        need = "non-negative" if allow_zero else "positive"
        raise InputError(f"`{name}` must be a finite {need} number; got {value!r}.")
    return float(value)


def check_finite(value: Any, name: str) -> float:
    """A finite real number."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value):
        raise InputError(f"`{name}` must be a finite number; got {value!r}.")
    return float(value)


def check_count(value: Any, name: str, *, minimum: int = 1) -> int:
    """An integer >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise InputError(f"`{name}` must be an integer >= {minimum}; got {value!r}.")
    return int(value)


def check_random_state(value: Any, name: str = "random_state") -> np.random.Generator:
    """A numpy Generator from a seed (a non-negative integer), a Generator, or None (fresh
    entropy)."""
    if isinstance(value, np.random.Generator):
        return value
    if value is None or (
        isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= 0
    ):
        return np.random.default_rng(value)
    raise InputError(
        f"`{name}` must be a non-negative integer seed, a numpy Generator or None; got {value!r}."
    )


def check_same_length(first: np.ndarray, second: np.ndarray, names: tuple[str, str]) -> None:
    if first.shape[0] != second.shape[0]:
        raise InputError(
            f"`{names[0]}` and `{names[1]}` must have one entry per item; got "
            f"{first.shape[0]} and {second.shape[0]}."
        )


def check_choice(value: Any, name: str, options: tuple[str, ...]) -> str:
    if value not in options:
        raise InputError(f"`{name}` must be one of {', '.join(map(repr, options))}; got {value!r}.")
    return value
