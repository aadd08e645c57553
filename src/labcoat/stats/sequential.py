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
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from labcoat._validation import PROBABILITY, Interval, deprecated_alias, renamed, validate_params
from labcoat.errors import InputError
from labcoat.findings import Finding
from labcoat.result import Result
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
    contain the true mean, at any step, is at most ``1 - level``. Values must be i.i.d.
    draws (or, more generally, have a constant conditional mean) and must lie in the stated
    bounds; tighter bounds give tighter intervals.

    Parameters
    ----------
    lower, upper
        Bounds every value is known to respect (``0`` and ``1`` for accuracy).
    level
        Probability that the whole sequence of intervals covers the mean.
    grid_size
        Number of candidate means the bounds are split into; the interval is exact up to one
        grid step, ``(upper - lower) / grid_size``.
    """

    confidence = deprecated_alias("confidence", "level")

    @renamed(confidence="level")
    def __init__(self, lower: float, upper: float, level: float = 0.95, *, grid_size: int = 2000):
        lower, upper = _check_bounds(lower, upper)
        self.lower = lower
        self.upper = upper
        self.level = check_probability(level, "level")
        grid_size = check_count(grid_size, "grid_size", minimum=10)
        self._alpha = 1.0 - self.level
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
        log_up = self._log_wealth_up + np.cumsum(
            np.log1p(np.minimum(bet, self._cap_up) * diff), axis=0
        )
        log_down = self._log_wealth_down + np.cumsum(
            np.log1p(-np.minimum(bet, self._cap_down) * diff), axis=0
        )
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

    def _grid_bounds(self) -> tuple[int, int]:
        """The interval as grid steps ``(i_low, i_high)``: ``lower + span * i / grid_size``."""
        standing = self._max_log_wealth < self._log_threshold
        if standing.any():
            idx = np.flatnonzero(standing)
            lo, hi = int(idx[0]) - 1, int(idx[-1]) + 1
        else:  # every grid point rejected: the set is narrower than one step, around the minimum
            best = int(np.argmin(self._max_log_wealth))
            lo, hi = best - 1, best + 1
        size = self._grid.size - 1
        return max(lo, 0), min(hi, size)

    def _exact_bound(self, step: int) -> Fraction:
        return Fraction(self.lower) + (Fraction(self.upper) - Fraction(self.lower)) * Fraction(
            step, self._grid.size - 1
        )

    @property
    def interval(self) -> ConfidenceInterval:
        """The current anytime-valid interval (the bounds themselves before any data).

        Its floats are rounded outwards from the exact grid bounds, so the printed interval
        always contains the one the decisions use.
        """
        lo, hi = (self._exact_bound(i) for i in self._grid_bounds())
        return ConfidenceInterval(_round(lo, down=True), _round(hi, down=False))

    def excludes(self, value: float) -> bool:
        """True when ``value`` lies outside the interval, decided on exact rationals.

        A bound that equals ``value`` exactly does not exclude it: 0 at the edge of a
        difference's interval is not evidence of a difference, whatever float rounding says.
        """
        v = Fraction(check_finite(value, "value"))
        lo, hi = (self._exact_bound(i) for i in self._grid_bounds())
        return v < lo or v > hi

    def narrower_than(self, width: float) -> bool:
        """True when the interval's exact width is below ``width``."""
        lo, hi = self._grid_bounds()
        return self._exact_bound(hi) - self._exact_bound(lo) < Fraction(
            check_positive(width, "width")
        )

    def done(self, width: float | None = None, threshold: float | None = None) -> bool:
        """True once the interval is narrower than ``width`` or excludes ``threshold``.

        Give either or both; with both, either condition suffices.
        """
        if width is None and threshold is None:
            raise InputError("`done` needs `width`, `threshold` or both; got neither.")
        if width is not None and self.narrower_than(width):
            return True
        return threshold is not None and self.excludes(threshold)

    def to_dict(self) -> dict[str, Any]:
        ci = self.interval
        return {
            "mean": self.mean,
            "ci": list(ci),
            "n": self.n,
            "level": self.level,
            "bounds": [self.lower, self.upper],
        }

    def __repr__(self) -> str:
        ci = self.interval
        return (
            f"ConfidenceSequence(n={self.n}, mean={self.mean:.6g}, "
            f"interval=({ci.low:.6g}, {ci.high:.6g}), level={self.level:g})"
        )


def _round(value: Fraction, *, down: bool) -> float:
    """``value`` as the nearest float on the safe side (below for a low bound, above for a high)."""
    x = float(value)
    if down and Fraction(x) > value:
        return math.nextafter(x, -math.inf)
    if not down and Fraction(x) < value:
        return math.nextafter(x, math.inf)
    return x


@dataclass(frozen=True)
class SequentialResult(Result):
    """A replayed sequential eval: where it stopped and why.

    ``n_used`` items were needed of ``n_total``; ``stopped`` is False when no condition was met
    before the data ran out. ``ci`` is the anytime-valid interval at that point.
    """

    engine = "stats"
    KIND = "stats.sequential"
    view = "labcoat.stats.view:sequential_view"
    section = "labcoat.report.sections.stats:stats_section"

    confidence = deprecated_alias("confidence", "level")

    mean: float
    ci: ConfidenceInterval
    n_used: int
    n_total: int
    stopped: bool
    reason: str
    level: float
    bounds: tuple[float, float]
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "mean": self.mean,
            "ci": list(self.ci),
            "n_used": self.n_used,
            "n_total": self.n_total,
            "stopped": self.stopped,
            "reason": self.reason,
            "level": self.level,
            "bounds": list(self.bounds),
            "warnings": list(self.notes),
        }

    @property
    def findings(self) -> list[Finding]:
        """None: this result states numbers, it runs no check of its own."""
        return []


@renamed(confidence="level")
@validate_params(
    {
        "lower": Interval(float),
        "upper": Interval(float),
        "width": Interval(float, 0.0, low_open=True, none=True),
        "threshold": Interval(float, none=True),
        "batch": Interval(int, 1),
        "level": PROBABILITY,
    }
)
def replay(
    scores: Any,
    *,
    baseline: Any = None,
    lower: float = 0.0,
    upper: float = 1.0,
    width: float | None = None,
    threshold: float | None = None,
    batch: int = 1,
    level: float = 0.95,
) -> SequentialResult:
    """Stream ``scores`` in order (``scores - baseline`` when a baseline's matched scores are
    given) through a :class:`ConfidenceSequence`, checking after every ``batch`` items whether
    the interval is narrower than ``width`` or excludes ``threshold``."""
    if width is None and threshold is None:
        raise InputError(
            "give `width`, `threshold` or both: the condition that lets the eval stop."
        )
    values = check_scores(scores, "scores")
    lower, upper = _check_bounds(lower, upper)
    if baseline is not None:
        other = check_scores(baseline, "baseline")
        if other.size != values.size:
            raise InputError(
                f"`baseline` must score the same items; got {other.size} for {values.size}."
            )
        values = values - other
        lower, upper = lower - upper, upper - lower
    cs = ConfidenceSequence(lower, upper, level)
    stopped = False
    for start in range(0, values.size, batch):
        if cs.update(values[start : start + batch]).done(width=width, threshold=threshold):
            stopped = True
            break
    if stopped and threshold is not None and cs.excludes(threshold):
        reason = f"interval excludes {threshold:g} after {cs.n} of {values.size} items"
    elif stopped:
        reason = f"interval narrower than {width:g} after {cs.n} of {values.size} items"
    else:
        reason = f"not decided after all {values.size} items"
    return SequentialResult(
        cs.mean, cs.interval, cs.n, int(values.size), stopped, reason, cs.level, (lower, upper)
    )


def _check_bounds(lower: Any, upper: Any) -> tuple[float, float]:
    try:
        lo, hi = float(lower), float(upper)
    except (TypeError, ValueError):
        raise InputError(
            f"`lower` and `upper` must be numbers; got {lower!r} and {upper!r}."
        ) from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise InputError(
            f"`lower` must be finite and below `upper`; got lower={lower!r}, upper={upper!r}. "
            "Pass the range every value is guaranteed to lie in (0 and 1 for accuracy)."
        )
    return lo, hi
