"""Normal and Student t quantiles and tail areas in pure Python.

``import scipy.special`` costs about as long as reading a 100k-row file, and ``scipy.stats``
twice that; a mean or a comparison needs only these two distributions. The normal comes from
the standard library. The t tail is the regularized incomplete beta function by its continued
fraction (modified Lentz; Press et al., *Numerical Recipes*, §6.4), the t quantile Newton's
method on it from the Cornish-Fisher start (Hill 1970). Both agree with scipy to about
1e-12 (``tests/stats/test_cr1.py``). ``df=None`` means the normal throughout.
"""

from __future__ import annotations

import math
from statistics import NormalDist

_NORMAL = NormalDist()
_EPS = 1e-15
_TINY = 1e-300


def quantile(p: float, df: float | None = None) -> float:
    """The ``p`` quantile of the standard normal (``df=None``) or of Student's t with ``df``."""
    if df is None or math.isinf(df):
        return _NORMAL.inv_cdf(p)
    if p == 0.5:
        return 0.0
    if p > 0.5:
        return -quantile(1.0 - p, df)
    if df == 1:
        return -1.0 / math.tan(math.pi * p)
    if df == 2:
        return (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    t = _cornish_fisher(p, df)
    for _ in range(50):  # Newton on the lower tail; t < 0 throughout
        step = (upper_tail(-t, df) - p) / _density(t, df)
        t_next = t - step
        if t_next >= 0:
            t_next = t / 2
        if abs(t_next - t) <= 1e-14 * max(1.0, abs(t_next)):
            return t_next
        t = t_next
    return t


def _cornish_fisher(p: float, df: float) -> float:
    """Expansion of the t quantile in powers of ``1/df`` (Hill 1970, Eq 3)."""
    z = _NORMAL.inv_cdf(p)
    z2 = z * z
    g1 = (z2 + 1) * z / 4
    g2 = ((5 * z2 + 16) * z2 + 3) * z / 96
    g3 = (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384
    g4 = ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) * z / 92160
    t = z + (g1 + (g2 + (g3 + g4 / df) / df) / df) / df
    return t if t < 0 else z


def _density(t: float, df: float) -> float:
    log = (
        _log_gamma_ratio(df / 2, 0.5)
        - 0.5 * math.log(df * math.pi)
        - (df + 1) / 2 * math.log1p(t * t / df)
    )
    return math.exp(log)


def _stirling_tail(z: float) -> float:
    return 1 / (12 * z) - 1 / (360 * z**3) + 1 / (1260 * z**5) - 1 / (1680 * z**7)


def _log_gamma_ratio(a: float, b: float) -> float:
    """``lgamma(a + b) - lgamma(a)`` without the cancellation of two huge numbers at large a."""
    if a < 50:
        return math.lgamma(a + b) - math.lgamma(a)
    return (
        (a - 0.5) * math.log1p(b / a)
        + b * math.log(a + b)
        - b
        + _stirling_tail(a + b)
        - _stirling_tail(a)
    )


def upper_tail(x: float, df: float | None = None) -> float:
    """``P(T > x)``, accurate far into the tail (no ``1 - cdf`` cancellation)."""
    if df is None or math.isinf(df):
        return 0.5 * math.erfc(x / math.sqrt(2.0))
    if math.isnan(x):
        return math.nan
    if math.isinf(x):
        return 0.0 if x > 0 else 1.0
    if x == 0:
        return 0.5
    t2 = x * x
    # I_w(df/2, 1/2) at w = df / (df + t^2), with w, 1 - w and their logs each computed directly
    w, rest = df / (df + t2), t2 / (df + t2)
    log_w, log_rest = -math.log1p(t2 / df), math.log(t2) - math.log(df + t2)
    a, b = df / 2, 0.5
    log_front = a * log_w + b * log_rest + _log_gamma_ratio(a, b) - math.lgamma(b)
    if w < (a + 1) / (a + b + 2):
        tail = 0.5 * math.exp(log_front) * _beta_fraction(a, b, w) / a
    else:
        tail = 0.5 * (1.0 - math.exp(log_front) * _beta_fraction(b, a, rest) / b)
    return tail if x >= 0 else 1.0 - tail


def _beta_fraction(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, 100_000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c
        c = c if abs(c) > _TINY else _TINY
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c
        c = c if abs(c) > _TINY else _TINY
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < _EPS:
            break
    return h


def two_sided_pvalue(statistic: float, df: float | None = None) -> float:
    """``P(|T| >= |statistic|)``; 1 for NaN (no evidence either way)."""
    if math.isnan(statistic):
        return 1.0
    return min(1.0, 2.0 * upper_tail(abs(statistic), df))


def critical_value(level: float, df: float | None = None) -> float:
    """Half-width multiplier of a two-sided interval at ``level``."""
    return quantile(0.5 + level / 2.0, df)
