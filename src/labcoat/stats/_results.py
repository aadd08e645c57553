"""Result types shared by every function in :mod:`labcoat.stats`.

Results are plain data with named fields, in the manner of ``scipy.stats``: the numbers a
report needs are attributes, the level of an interval is chosen after the fact through
``confidence_interval(confidence_level)``, and resampling results keep their resamples.
Rendering lives in :mod:`labcoat.stats.view`; ``to_dict`` gives the JSON shape.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

from labcoat._validation import deprecated_alias, renamed
from labcoat.findings import Finding
from labcoat.interval import ConfidenceInterval
from labcoat.result import Result
from labcoat.stats._validation import check_probability


class StatsResult(Result):
    """A stats result the ledger keeps: one finding of the check its ``KIND`` names (declared in
    :mod:`labcoat.stats.record`) whose evidence is the result's ``to_dict()``.

    ``notes`` (a field of each subclass) are the plain-language reasons to read the numbers with
    care; they make the finding warn, and :attr:`warnings` (the protocol's) lists that finding.
    """

    engine = "stats"
    section = "labcoat.report.sections.stats:stats_section"

    @property
    def findings(self) -> list[Finding]:
        from labcoat.stats.record import as_finding

        return [as_finding(self)]

    def findings_to_store(self, name: str = "") -> list[Finding]:
        """The one finding of check ``stats.<kind>``; ``name`` labels it (e.g. ``"model-a vs
        model-b"``)."""
        from labcoat.stats.record import as_finding

        return [as_finding(self, name)]


class IntervalResult(ABC):
    """A result with an interval: :attr:`ci` at its own ``level``, any other level through
    :meth:`confidence_interval`, the level checked in this one place."""

    level: float
    #: deprecated: the level is :attr:`level`
    confidence = deprecated_alias("confidence", "level")

    @property
    def ci(self) -> ConfidenceInterval:
        return self.confidence_interval(self.level)

    @renamed(confidence_level="level")
    def confidence_interval(self, level: float = 0.95) -> ConfidenceInterval:
        """The two-sided interval at ``level``."""
        return self._interval(check_probability(level, "level"))

    @abstractmethod
    def _interval(self, level: float) -> ConfidenceInterval:
        """The interval at a checked ``level`` (a number strictly between 0 and 1)."""


@dataclass(frozen=True)
class BootstrapResult(Result, IntervalResult):
    """A statistic on all the data, its bootstrap standard error and percentile interval.

    ``bootstrap_distribution`` keeps every resample's value, so other levels come from
    :meth:`confidence_interval` without resampling again. ``n`` counts the units resampled
    (items, or runs for seed summaries).
    """

    engine = "stats"
    KIND = "stats.bootstrap"
    view = "labcoat.stats.view:bootstrap_view"
    section = "labcoat.report.sections.stats:stats_section"

    statistic: float
    se: float
    bootstrap_distribution: np.ndarray
    metric: str
    n: int
    level: float

    def _interval(self, level: float) -> ConfidenceInterval:
        """Percentile interval of the kept resamples."""
        low, high = np.quantile(self.bootstrap_distribution, [(1 - level) / 2, (1 + level) / 2])
        return ConfidenceInterval(float(low), float(high))

    def to_dict(self) -> dict[str, Any]:
        ci = self.ci
        return {
            "metric": self.metric,
            "statistic": self.statistic,
            "se": self.se,
            "ci": list(ci),
            "n": self.n,
            "n_resamples": int(self.bootstrap_distribution.size),
            "level": self.level,
        }

    @property
    def findings(self) -> list[Finding]:
        """None: this result states numbers, it runs no check of its own."""
        return []
