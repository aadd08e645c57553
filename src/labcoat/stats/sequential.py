"""Anytime-valid confidence sequences: evals that stop once they know enough.

Re-checking a fixed-n confidence interval after every batch and stopping when it looks good
inflates the error rate far beyond the nominal 5 % (optional stopping). A *confidence
sequence* is a sequence of intervals that contains the true mean at every step simultaneously
with the stated probability, so stopping at any data-dependent time is safe.

The method is the hedged-capital betting confidence sequence of Waudby-Smith & Ramdas,
"Estimating means of bounded random variables by betting" (JRSS-B 2023, arXiv 2010.09686):
for every candidate mean ``m`` a gambler bets that the data's mean is above ``m`` and another
that it is below; their averaged wealth is a non-negative martingale when ``m`` is the true
mean, so by Ville's inequality it ever reaches ``1/alpha`` with probability at most ``alpha``.
Candidates whose wealth has ever reached that level are rejected for good (the running
intersection), and the interval is the range of candidates still standing. Bets follow the
paper's predictable plug-in rule, which makes the interval shrink at the empirical-Bernstein
rate: narrow for low-variance streams, never narrower than the data allow.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from labcoat.errors import InputError
from labcoat.stats._results import ConfidenceInterval
from labcoat.stats._validation import (
    check_count,
    check_finite,
    check_positive,
    check_probability,
    check_scores,
)

#: the paper's truncation of the bets (c in Eq. 26); keeps wealth away from zero.
_BET_CAP = 0.5
#: weight of the "mean is above m" gambler in the hedged wealth (theta in the paper).
_HEDGE = 0.5
#: cells of the (rows x grid) work array processed at once, to bound memory on large batches.
_CHUNK_CELLS = 1 << 20


class ConfidenceSequence:
    """Anytime-valid confidence interval for the mean of a stream of values in ``[lower, upper]``.

    Feed values as they arrive with :meth:`update`; read :attr:`interval` whenever you like and
    stop as soon as :meth:`done` says so. The probability that the interval ever fails to
    contain the true mean, at any step, is at most ``1 - confidence``. Values must be i.i.d.
    draws (or, more generally, have a constant conditional mean) and must lie in the stated
    bounds; tighter bounds give tighter intervals.

    Parameters
    ----------
    lower, upper
        Bounds every value is known to respect (``0`` and ``1`` for accuracy).
    confidence
        Probability that the whole sequence of intervals covers the mean.
    grid_size
        Number of candidate means the bounds are split into; the interval is exact up to one
        grid step, ``(upper - lower) / grid_size``.
    """

    def __init__(self, lower: float, upper: float, confidence: float = 0.95, *, grid_size: int = 2000):
        lower, upper = _check_bounds(lower, upper)
        self.lower = lower
        self.upper = upper
        self.confidence = check_probability(confidence, "confidence")
        grid_size = check_count(grid_size, "grid_size", minimum=10)
        self._alpha = 1.0 - self.confidence
        self._log_threshold = math.log(1.0 / self._alpha)
        self._bet_scale = 2.0 * math.log(2.0 / self._alpha)
        self._grid = np.linspace(0.0, 1.0, grid_size + 1)
        with np.errstate(divide="ignore"):
            self._cap_up = _BET_CAP / self._grid
            self._cap_down = _BET_CAP / (1.0 - self._grid)
        self._log_wealth_up = np.zeros_like(self._grid)
        self._log_wealth_down = np.zeros_like(self._grid)
        self._max_log_wealth = np.full_like(self._grid, -np.inf)
        # running sums on the [0, 1] scale for the plug-in bets
        self._n = 0
        self._sum = 0.0
        self._sum_sq_dev = 0.0

    # -- data in ---------------------------------------------------------------------------
    def update(self, values: Any) -> ConfidenceSequence:
        """Add one value or an array of values (in arrival order); returns ``self``."""
        x = check_scores(values, "values", min_size=0)
        outside = (x < self.lower) | (x > self.upper)
        if outside.any():
            first = x[np.flatnonzero(outside)[0]]
            raise InputError(
                f"`values` must lie in [{self.lower:g}, {self.upper:g}], the bounds this "
                f"ConfidenceSequence was built with; got {outside.sum()} outside (e.g. {first:g}). "
                "Widen `lower`/`upper` or clip the scores."
            )
        if x.size == 0:
            return self
        scaled = (x - self.lower) / (self.upper - self.lower)
        rows = max(1, _CHUNK_CELLS // self._grid.size)
        for start in range(0, scaled.size, rows):
            self._update_chunk(scaled[start : start + rows])
        return self

    def _update_chunk(self, x: np.ndarray) -> None:
        t = self._n + np.arange(1, x.size + 1, dtype=float)
        mean_t = (0.5 + self._sum + np.cumsum(x)) / (t + 1.0)
        sq_dev = self._sum_sq_dev + np.cumsum((x - mean_t) ** 2)
        var_t = (0.25 + sq_dev) / (t + 1.0)
        var_before = np.concatenate(([(0.25 + self._sum_sq_dev) / (self._n + 1.0)], var_t[:-1]))
        bet = np.sqrt(self._bet_scale / (var_before * t * np.log1p(t)))[:, None]

        diff = x[:, None] - self._grid[None, :]
        log_up = self._log_wealth_up + np.cumsum(np.log1p(np.minimum(bet, self._cap_up) * diff), axis=0)
        log_down = self._log_wealth_down + np.cumsum(np.log1p(-np.minimum(bet, self._cap_down) * diff), axis=0)
        hedged = np.logaddexp(math.log(_HEDGE) + log_up, math.log(1.0 - _HEDGE) + log_down)

        self._max_log_wealth = np.maximum(self._max_log_wealth, hedged.max(axis=0))
        self._log_wealth_up = log_up[-1]
        self._log_wealth_down = log_down[-1]
        self._n += x.size
        self._sum += float(x.sum())
        self._sum_sq_dev = float(sq_dev[-1])

    # -- results ---------------------------------------------------------------------------
    @property
    def n(self) -> int:
        """Number of values seen."""
        return self._n

    @property
    def mean(self) -> float:
        """Sample mean of the values seen (NaN before the first)."""
        if self._n == 0:
            return math.nan
        return self.lower + (self.upper - self.lower) * self._sum / self._n

    @property
    def interval(self) -> ConfidenceInterval:
        """The current anytime-valid interval; the bounds themselves before any data."""
        standing = self._max_log_wealth < self._log_threshold
        step = self._grid[1] - self._grid[0]
        if standing.any():
            idx = np.flatnonzero(standing)
            lo, hi = self._grid[idx[0]] - step, self._grid[idx[-1]] + step
        else:  # every grid point rejected: the set is narrower than one step, around the minimum
            best = self._grid[int(np.argmin(self._max_log_wealth))]
            lo, hi = best - step, best + step
        span = self.upper - self.lower
        return ConfidenceInterval(
            self.lower + span * max(lo, 0.0), self.lower + span * min(hi, 1.0)
        )

    def done(self, width: float | None = None, threshold: float | None = None) -> bool:
        """True once the interval is narrower than ``width`` or excludes ``threshold``.

        Give either or both; with both, either condition suffices.
        """
        if width is None and threshold is None:
            raise InputError("`done` needs `width`, `threshold` or both; got neither.")
        ci = self.interval
        if width is not None:
            if ci.width < check_positive(width, "width"):
                return True
        if threshold is not None:
            if ci.excludes(check_finite(threshold, "threshold")):
                return True
        return False

    def to_dict(self) -> dict[str, Any]:
        ci = self.interval
        return {
            "mean": self.mean,
            "ci": [ci.low, ci.high],
            "n": self.n,
            "confidence": self.confidence,
            "bounds": [self.lower, self.upper],
        }

    def __repr__(self) -> str:
        ci = self.interval
        return (
            f"ConfidenceSequence(n={self.n}, mean={self.mean:.6g}, "
            f"interval=({ci.low:.6g}, {ci.high:.6g}), confidence={self.confidence:g})"
        )


def _check_bounds(lower: Any, upper: Any) -> tuple[float, float]:
    try:
        lo, hi = float(lower), float(upper)
    except (TypeError, ValueError):
        raise InputError(f"`lower` and `upper` must be numbers; got {lower!r} and {upper!r}.") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise InputError(
            f"`lower` must be finite and below `upper`; got lower={lower!r}, upper={upper!r}. "
            "Pass the range every value is guaranteed to lie in (0 and 1 for accuracy)."
        )
    return lo, hi
