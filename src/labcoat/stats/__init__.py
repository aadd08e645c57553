"""Honest error bars for evals (``labcoat stats``).

Standard errors that respect clustered questions, paired model comparisons, power analysis,
small-sample and binary intervals, multiple-comparison corrections, few-seed summaries, fast
bootstraps over sufficient statistics, and anytime-valid confidence sequences for evals that
stop once they know enough. Everything here needs only numpy and scipy.
"""

from __future__ import annotations

from labcoat.stats._results import BootstrapResult, ConfidenceInterval
from labcoat.stats.bootstrap import (
    METRICS,
    SufficientMetric,
    bleu_statistics,
    bootstrap_difference,
    bootstrap_metric,
    classification_statistics,
    corpus_bleu,
    perplexity_statistics,
)
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
from labcoat.stats.readers import Table, read_table
from labcoat.stats.seeds import SeedsSummary, aggregate, iqm, optimality_gap, probability_of_improvement
from labcoat.stats.sequential import ConfidenceSequence

__all__ = [
    "AdjustedPValues",
    "BootstrapResult",
    "CompareResult",
    "ConfidenceInterval",
    "ConfidenceSequence",
    "METRICS",
    "McNemarResult",
    "MeanResult",
    "PowerResult",
    "ProportionResult",
    "SeedsSummary",
    "SufficientMetric",
    "Table",
    "VarianceComponents",
    "adjust_pvalues",
    "aggregate",
    "bleu_statistics",
    "bootstrap_difference",
    "bootstrap_metric",
    "classification_statistics",
    "compare",
    "corpus_bleu",
    "iqm",
    "mcnemar",
    "mean",
    "minimum_detectable_effect",
    "optimality_gap",
    "perplexity_statistics",
    "probability_of_improvement",
    "proportion",
    "proportion_from_scores",
    "read_table",
    "sample_size",
    "variance_components",
]
