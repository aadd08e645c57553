"""Honest error bars for evals (``labcoat stats``).

Standard errors that respect clustered questions, paired model comparisons, power analysis,
small-sample and binary intervals, multiple-comparison corrections, few-seed summaries, fast
bootstraps over sufficient statistics, and anytime-valid confidence sequences for evals that
stop once they know enough. Everything here needs only numpy and scipy.
"""

from __future__ import annotations

from labcoat.stats._results import ConfidenceInterval
from labcoat.stats.sequential import ConfidenceSequence

__all__ = ["ConfidenceInterval", "ConfidenceSequence"]
