"""Honest error bars for evals (``labcoat stats``).

Standard errors that respect clustered questions (CR1 with t intervals, or the paper's
formulas), paired model comparisons, leaderboards with rank intervals, release gates, power
analysis with clusters, small-sample and binary intervals, permutation tests,
multiple-comparison corrections, few-seed summaries, fast bootstraps over sufficient
statistics, and anytime-valid confidence sequences for evals that stop once they know
enough. Everything here needs only numpy and scipy, and imports scipy only where it is used.
"""

from __future__ import annotations

from labcoat.stats._results import BootstrapResult, ConfidenceInterval
from labcoat.stats.bootstrap import (
    CONFUSION_METRICS,
    METRICS,
    SufficientMetric,
    bleu_statistics,
    bootstrap_confusion,
    bootstrap_difference,
    bootstrap_metric,
    classification_statistics,
    corpus_bleu,
    perplexity_statistics,
)
from labcoat.stats.compare import CompareResult, ExclusionResult, compare, compare_excluding
from labcoat.stats.effects import PermutationResult, paired_permutation_test
from labcoat.stats.gate import GateResult, gate
from labcoat.stats.leaderboard import LeaderboardResult, leaderboard
from labcoat.stats.mean import MeanResult, mean
from labcoat.stats.multiple import AdjustedPValues, adjust_pvalues
from labcoat.stats.power import (
    ClusterProjection,
    DesignEffect,
    PowerResult,
    VarianceComponents,
    clustered_mde,
    clustered_power,
    clustered_sample_size,
    design_effect,
    estimate_design_effect,
    minimum_detectable_effect,
    power_at,
    sample_size,
    variance_components,
)
from labcoat.stats.proportions import (
    McNemarResult,
    ProportionResult,
    mcnemar,
    proportion,
    proportion_from_scores,
)
from labcoat.stats.readers import Table, read_table
from labcoat.stats.seeds import (
    MethodsSummary,
    SeedsSummary,
    aggregate,
    iqm,
    optimality_gap,
    probability_of_improvement,
    summarize_runs,
)
from labcoat.stats.sequential import ConfidenceSequence, SequentialResult, replay
from labcoat.stats.tables import (
    FileComparison,
    Sides,
    align_baseline,
    choose_design_effect,
    compare_files,
    mcnemar_applies,
    paired_mcnemar,
    pilot_components,
    read_models,
    read_sides,
    solve_power,
)

__all__ = [
    "solve_power",
    "read_sides",
    "read_models",
    "pilot_components",
    "paired_mcnemar",
    "mcnemar_applies",
    "compare_files",
    "choose_design_effect",
    "align_baseline",
    "Sides",
    "FileComparison",
    "CONFUSION_METRICS",
    "METRICS",
    "AdjustedPValues",
    "BootstrapResult",
    "CompareResult",
    "ConfidenceInterval",
    "ConfidenceSequence",
    "ClusterProjection",
    "DesignEffect",
    "ExclusionResult",
    "GateResult",
    "LeaderboardResult",
    "McNemarResult",
    "MeanResult",
    "MethodsSummary",
    "PermutationResult",
    "PowerResult",
    "ProportionResult",
    "SeedsSummary",
    "SequentialResult",
    "SufficientMetric",
    "Table",
    "VarianceComponents",
    "adjust_pvalues",
    "aggregate",
    "bleu_statistics",
    "bootstrap_confusion",
    "bootstrap_difference",
    "bootstrap_metric",
    "classification_statistics",
    "clustered_mde",
    "clustered_power",
    "clustered_sample_size",
    "compare",
    "compare_excluding",
    "corpus_bleu",
    "design_effect",
    "estimate_design_effect",
    "gate",
    "iqm",
    "leaderboard",
    "mcnemar",
    "mean",
    "minimum_detectable_effect",
    "optimality_gap",
    "paired_permutation_test",
    "perplexity_statistics",
    "power_at",
    "probability_of_improvement",
    "proportion",
    "proportion_from_scores",
    "read_table",
    "replay",
    "sample_size",
    "summarize_runs",
    "variance_components",
]
