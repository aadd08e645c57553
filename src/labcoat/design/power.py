"""Power of each planned effect's test, and the runs one-factor-at-a-time needs for the same.

An effect is the mean at the high level minus the mean at the low level. With the planned
model's columns stacked over every replicate (and seed blocks, which every replicate contains
whole, so they cost degrees of freedom and no precision), its standard error is
``2·σ·sqrt([(X'X)⁻¹]ⱼⱼ)``; the test is a two-sided t at ``α / m`` over the ``m`` planned effects
(Bonferroni: the Holm procedure the analysis uses rejects at least as often, so the power
stated is a floor). Power comes from the noncentral t (scipy).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats


def standard_errors(model: np.ndarray, noise: float) -> np.ndarray:
    """The effects' standard errors (high − low) for the model matrix ``model`` (without the
    intercept column, which is added) at seed noise ``noise``."""
    X = np.column_stack([np.ones(len(model)), model])
    cov = np.linalg.inv(X.T @ X)
    return 2.0 * noise * np.sqrt(np.diag(cov)[1:])


def t_power(effect_size: float, se: float, df: int, alpha: float) -> float:
    """Power of a two-sided t test at ``alpha`` for a true effect ``effect_size``."""
    if df < 1 or not se > 0:
        return float("nan")
    crit = stats.t.ppf(1 - alpha / 2, df)
    ncp = abs(effect_size) / se
    upper = float(stats.nct.sf(crit, df, ncp))
    lower = float(stats.nct.cdf(-crit, df, ncp))
    # scipy's far lower tail can come back NaN at a large ncp; it is below P(T < 0) = Φ(−ncp)
    if not np.isfinite(lower):
        lower = min(float(stats.norm.cdf(-ncp)), 1.0 - upper)
    return upper + lower


def ofat_runs(
    k: int, effect_size: float, noise: float, power: float, alpha: float, *, max_seeds: int = 4096
) -> tuple[int, int]:
    """One factor at a time: a baseline and one arm per factor, ``r`` seeds each, each effect
    a difference of two means tested at ``alpha / k``. Returns (total runs, seeds per arm) for
    the fewest seeds that reach ``power``."""
    for r in range(2, max_seeds + 1):
        se = noise * math.sqrt(2.0 / r)
        df = (k + 1) * (r - 1)
        if t_power(effect_size, se, df, alpha / k) >= power:
            return (k + 1) * r, r
    return (k + 1) * max_seeds, max_seeds


__all__ = ["ofat_runs", "standard_errors", "t_power"]
