"""Proper scores of prediction intervals: coverage alone rewards width.

An interval that always covers is easy to make (make it wide); the interval score of Gneiting &
Raftery (2007, JASA 102:359, eq. 43) charges the width and, for a miss, ``2/α`` times the
distance by which the observation fell outside, so its expectation is lowest for the true
``α/2`` and ``1 − α/2`` quantiles. Here it is divided by the observed value, so curves of
different scales can be pooled: a score of 0.05 costs as much as an interval 5 % of the value
wide that always covers.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def interval_score(low: Any, high: Any, observed: Any, level: float) -> np.ndarray:
    """Gneiting & Raftery's interval score of ``[low, high]`` at ``level`` for each observation,
    divided by the observation (lower is better)."""
    low, high, y = (np.asarray(v, dtype=float) for v in (low, high, observed))
    alpha = 1.0 - level
    score = (high - low) + (2.0 / alpha) * (np.maximum(low - y, 0.0) + np.maximum(y - high, 0.0))
    return score / np.abs(y)
