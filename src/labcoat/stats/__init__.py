"""Honest error bars for evals (``labcoat stats``).

Standard errors that respect clustered questions, paired model comparisons, power analysis,
small-sample and binary intervals, multiple-comparison corrections, few-seed summaries, fast
bootstraps over sufficient statistics, and anytime-valid confidence sequences for evals that
stop once they know enough. Everything here needs only numpy and scipy.
"""

from __future__ import annotations

from labcoat.stats._results import ConfidenceInterval
from labcoat.stats.compare import CompareResult, compare
from labcoat.stats.mean import MeanResult, mean
from labcoat.stats.multiple import AdjustedPValues, adjust_pvalues
from labcoat.stats.power import (
    PowerResult,
    VarianceComponents,
    minimum_detectable_effect,
    sample_size,
    variance_components,
)
from labcoat.stats.proportions import McNemarResult, ProportionResult, mcnemar, proportion, proportion_from_scores
from labcoat.stats.sequential import ConfidenceSequence

__all__ = [
    "AdjustedPValues",
    "McNemarResult",
    "ProportionResult",
    "adjust_pvalues",
    "mcnemar",
    "proportion",
    "proportion_from_scores",
    "CompareResult",
    "ConfidenceInterval",
    "ConfidenceSequence",
    "MeanResult",
    "PowerResult",
    "VarianceComponents",
    "compare",
    "mean",
    "minimum_detectable_effect",
    "sample_size",
    "variance_components",
]
