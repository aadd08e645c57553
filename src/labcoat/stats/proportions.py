"""Intervals for a share of correct answers, and McNemar's test for paired 0/1 scores.

The CLT interval ``p ± z sqrt(p(1-p)/n)`` collapses to a point when every answer is right (or
wrong) and under-covers when ``n`` is small or ``p`` is near 0 or 1 (Bowyer et al. 2025).
Wilson, Clopper-Pearson and Jeffreys intervals stay honest there. McNemar's test looks only at
the questions where exactly one model is right; with few of those its exact binomial form is
the one to use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from labcoat._validation import (
    PROBABILITY,
    Interval,
    OneOf,
    deprecated_alias,
    renamed,
    validate_params,
)
from labcoat.errors import InputError
from labcoat.findings import Finding
from labcoat.result import Result
from labcoat.stats._results import ConfidenceInterval
from labcoat.stats._validation import (
    check_choice,
    check_probability,
    check_same_length,
    check_scores,
)

#: interval methods, in the order reports list them
METHODS = ("wilson", "clopper-pearson", "jeffreys", "normal")
#: below this many discordant pairs McNemar's chi-square approximation is replaced by the exact test
EXACT_BELOW = 25


@dataclass(frozen=True)
class ProportionResult(Result):
    """``successes`` out of ``n``; intervals by any method via :meth:`confidence_interval`."""

    #: the interval methods :meth:`confidence_interval` offers
    METHODS: ClassVar[tuple[str, ...]] = METHODS

    engine = "stats"
    KIND = "stats.proportion"
    view = "labcoat.stats.view:intervals_view"
    section = "labcoat.report.sections.stats:stats_section"

    confidence = deprecated_alias("confidence", "level")

    successes: int
    n: int
    level: float
    method: str

    @property
    def proportion(self) -> float:
        return self.successes / self.n

    @property
    def ci(self) -> ConfidenceInterval:
        return self.confidence_interval(self.level, self.method)

    @renamed(confidence_level="level")
    def confidence_interval(
        self, level: float = 0.95, method: str | None = None
    ) -> ConfidenceInterval:
        """Two-sided interval for the true proportion.

        ``wilson`` (score interval) and ``clopper-pearson`` (exact, conservative) come from
        :meth:`scipy.stats.binomtest`; ``jeffreys`` is the equal-tailed Beta(1/2, 1/2)
        posterior interval, with the bound at 0 (all wrong) or 1 (all right) set to that
        value as Brown, Cai & DasGupta (2001) recommend; ``normal`` is the CLT (Wald)
        interval clipped to [0, 1], for comparison.
        """
        from scipy import stats as sps

        level = check_probability(level, "level")
        method = check_choice(self.method if method is None else method, "method", METHODS)
        k, n = self.successes, self.n
        if method == "wilson":
            ci = sps.binomtest(k, n).proportion_ci(level, method="wilson")
            return ConfidenceInterval(float(ci.low), float(ci.high))
        if method == "clopper-pearson":
            ci = sps.binomtest(k, n).proportion_ci(level, method="exact")
            return ConfidenceInterval(float(ci.low), float(ci.high))
        if method == "jeffreys":
            tail = (1 - level) / 2
            posterior = sps.beta(k + 0.5, n - k + 0.5)
            low = 0.0 if k == 0 else float(posterior.ppf(tail))
            high = 1.0 if k == n else float(posterior.isf(tail))
            return ConfidenceInterval(low, high)
        p = k / n
        half = float(sps.norm.ppf(0.5 + level / 2)) * np.sqrt(p * (1 - p) / n)
        return ConfidenceInterval(max(p - half, 0.0), min(p + half, 1.0))

    def to_dict(self) -> dict[str, Any]:
        intervals = {m: list(self.confidence_interval(self.level, m)) for m in METHODS}
        return {
            "successes": self.successes,
            "n": self.n,
            "proportion": self.proportion,
            "level": self.level,
            "intervals": intervals,
        }

    @property
    def findings(self) -> list[Finding]:
        """None: this result states numbers, it runs no check of its own."""
        return []


@renamed(confidence="level")
@validate_params(
    {
        "successes": Interval(int, 0),
        "n": Interval(int, 1),
        "level": PROBABILITY,
        "method": OneOf(METHODS),
    }
)
def proportion(
    successes: Any, n: Any, level: float = 0.95, method: str = "wilson"
) -> ProportionResult:
    """Proportion ``successes / n`` with a small-sample-safe interval (Wilson by default)."""
    n, successes = int(n), int(successes)
    if successes > n:
        raise InputError(f"`successes` cannot exceed `n`; got successes={successes}, n={n}.")
    return ProportionResult(successes, n, float(level), method)


@renamed(confidence="level")
@validate_params({"level": PROBABILITY, "method": OneOf(METHODS)})
def proportion_from_scores(
    scores: Any, level: float = 0.95, method: str = "wilson"
) -> ProportionResult:
    """:func:`proportion` for a vector of 0/1 scores."""
    x = check_binary(scores, "scores")
    return proportion(int(x.sum()), int(x.size), level, method)


@dataclass(frozen=True)
class McNemarResult(Result):
    """McNemar's test of equal accuracy on paired 0/1 scores.

    ``only_a``/``only_b`` count questions that only A/only B got right. With ``exact`` the
    statistic is ``min(only_a, only_b)`` and the p-value the two-sided binomial one; otherwise
    it is the continuity-corrected chi-square ``(|b - c| - 1)^2 / (b + c)``.
    """

    engine = "stats"
    KIND = "stats.mcnemar"
    section = "labcoat.report.sections.stats:stats_section"

    statistic: float
    pvalue: float
    only_a: int
    only_b: int
    n: int
    exact: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "statistic": self.statistic,
            "pvalue": self.pvalue,
            "only_a": self.only_a,
            "only_b": self.only_b,
            "n": self.n,
            "exact": self.exact,
        }

    @property
    def findings(self) -> list[Finding]:
        """None: this result states numbers, it runs no check of its own."""
        return []


def mcnemar(a: Any, b: Any, *, exact: bool | None = None) -> McNemarResult:
    """McNemar's test for two models' 0/1 scores on the same questions (position = question).

    ``exact=None`` picks the exact binomial test when there are fewer than 25 discordant pairs.
    """
    from scipy import stats as sps

    x = check_binary(a, "a")
    y = check_binary(b, "b")
    check_same_length(x, y, ("a", "b"))
    only_a = int(np.sum((x == 1) & (y == 0)))
    only_b = int(np.sum((x == 0) & (y == 1)))
    discordant = only_a + only_b
    if exact is None:
        exact = discordant < EXACT_BELOW
    if discordant == 0:
        return McNemarResult(0.0, 1.0, 0, 0, x.size, bool(exact))
    if exact:
        stat = min(only_a, only_b)
        p = float(sps.binomtest(stat, discordant, 0.5).pvalue)
        return McNemarResult(float(stat), p, only_a, only_b, x.size, True)
    stat = (abs(only_a - only_b) - 1.0) ** 2 / discordant
    return McNemarResult(float(stat), float(sps.chi2.sf(stat, 1)), only_a, only_b, x.size, False)


def check_binary(values: Any, name: str) -> np.ndarray:
    x = check_scores(values, name)
    if not np.isin(x, (0.0, 1.0)).all():
        bad = x[~np.isin(x, (0.0, 1.0))][0]
        raise InputError(
            f"`{name}` must be 0/1 scores (wrong/right); found {bad:g}. Threshold or round them "
            "first."
        )
    return x
