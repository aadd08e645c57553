"""Robust location and spread shared by the invariants that judge a value against the run's
own recent history (spike, grad_explode, grad_vanish): median and normal-consistent MAD, so a
few outliers in the history do not hide the next one; and *precedents*, values of the history
that already stood out as far, so a second population that recurs (a rarer task's batches in
multi-task training) is not taken for outliers of the first.

Written with numpy's nan-aware medians rather than ``scipy.stats.median_abs_deviation``: the
result is the same (``scale="normal"``), but scipy's argument handling costs about half a
millisecond per call, which a per-step watch cannot afford.
"""

from __future__ import annotations

import warnings
from typing import Iterable, Sequence

import numpy as np
from scipy.stats import norm

#: MAD -> standard deviation for normal data (scipy's ``scale="normal"``)
_MAD_TO_SD = float(1.0 / norm.ppf(0.75))
#: a value's local deviation is taken from the median of itself and this many neighbours on
#: each side, so a learning curve's early, higher values do not stand out of their own stretch
NEIGHBOURS = 4
#: below this spread, z-scores are taken against it instead, so a flat history is not "infinitely"
#: surprised by rounding noise
_MIN_SCALE = 1e-12


def median_of(sorted_values: list[float]) -> float:
    n = len(sorted_values)
    mid = n // 2
    return sorted_values[mid] if n % 2 else 0.5 * (sorted_values[mid - 1] + sorted_values[mid])


def robust_scale(values: list[float], center: float) -> float:
    """MAD around ``center`` scaled to a normal's standard deviation, for a short list of
    finite floats: sorting a few dozen numbers in Python beats numpy's per-call overhead."""
    return max(median_of(sorted(abs(v - center) for v in values)) * _MAD_TO_SD, _MIN_SCALE)


def center_scale(
    values: Iterable[float] | np.ndarray, axis: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Median and MAD (scaled to a normal's standard deviation), ignoring NaN."""
    x = np.asarray(values if isinstance(values, np.ndarray) else list(values), dtype=float)
    median = np.nanmedian if np.isnan(x).any() else np.median  # the plain one is much faster
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns give NaN, as intended
        center = median(x, axis=axis)
        mad = median(
            np.abs(x - (center if axis is None else np.expand_dims(center, axis))), axis=axis
        )
    return np.asarray(center), np.maximum(np.asarray(mad * _MAD_TO_SD, dtype=float), _MIN_SCALE)


def local_deviations(values: Sequence[float]) -> list[float]:
    """How far each of ``values`` (finite, in time order) lies above the median of its
    stretch (itself and :data:`NEIGHBOURS` values on each side), sorted."""
    k = NEIGHBOURS
    return sorted(
        v - median_of(sorted(values[max(0, i - k) : i + k + 1])) for i, v in enumerate(values)
    )


def precedented(deviation: float, largest: float, half_ratio: float | None) -> bool:
    """Whether a history whose largest local deviation is ``largest`` already holds a value
    that stood out at least half as far as ``deviation`` does. On a log scale
    (``half_ratio``: the log of 2 in its base) it must also have stood out by at least half
    the ratio, so a value 300x the median needs one 150x its stretch, not 17x."""
    half = deviation / 2 if half_ratio is None else max(deviation / 2, deviation - half_ratio)
    return largest >= half
