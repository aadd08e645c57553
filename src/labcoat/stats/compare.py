"""Is model A better than model B? (Miller 2024, Eq 5-8)

When both models answered the same questions, the question-level difference ``a_i - b_i``
removes the variance the two share (question difficulty), so the paired standard error is
smaller than the unpaired one by the correlation of the scores. lm-eval-harness and most
leaderboards use the unpaired test and throw that away. Unpaired (Eq 5-6) is right only when
the question sets differ.

Standard errors, intervals and p-values follow :mod:`labcoat.stats.mean`: CR1 with t(G − 1)
or t(n − 1) by default, the paper's Eq 7/8 with z under ``formula="miller"``. Every result
carries the minimum detectable effect of its design (80 % power at ``1 - level``).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from labcoat._validation import BOOL, PROBABILITY, OneOf, renamed, validate_params
from labcoat.errors import InputError
from labcoat.stats._distributions import quantile, two_sided_pvalue
from labcoat.stats._questions import paired_questions, per_question
from labcoat.stats._results import ConfidenceInterval, IntervalResult, StatsResult
from labcoat.stats.mean import (
    FEW_ITEMS,
    FORMULAS,
    cluster_codes,
    cluster_warnings,
    mean,
    standard_error,
    symmetric_interval,
)

#: power at which every comparison reports its minimum detectable effect
MDE_POWER = 0.8


@dataclass(frozen=True)
class CompareResult(StatsResult, IntervalResult):
    """Difference ``A - B`` of mean scores, its standard error and a two-sided test.

    ``statistic`` is t (``df`` set) or z (``df`` None). ``n`` is the number of matched
    questions when paired and ``n_a + n_b`` otherwise; ``n_dropped_a``/``n_dropped_b`` count
    questions found on one side only and left out. ``correlation`` (paired) is the Pearson
    correlation of the two models' question scores (None when undefined: one model scores every
    question the same, or unpaired). ``effect_size`` is Cohen's d: d_z (mean
    difference over the SD of the differences) when paired, the pooled-SD d otherwise. ``mde``
    is the smallest difference this design detects with 80 % power at level ``1 - level``.
    """

    KIND = "stats.compare"

    view = "labcoat.stats.view:compare_view"
    title = "Comparison"

    diff: float
    se: float
    statistic: float
    pvalue: float
    df: float | None
    n: int
    paired: bool
    mean_a: float
    mean_b: float
    correlation: float | None
    n_clusters: int | None
    level: float
    formula: str
    mde: float
    effect_size: float
    n_dropped_a: int = 0
    n_dropped_b: int = 0
    notes: tuple[str, ...] = field(default=())

    def _interval(self, level: float) -> ConfidenceInterval:
        return symmetric_interval(self.diff, self.se, level, self.df)

    def to_dict(self) -> dict[str, Any]:
        return {
            "diff": self.diff,
            "se": self.se,
            "ci": list(self.ci),
            "statistic": self.statistic,
            "pvalue": self.pvalue,
            "df": self.df,
            "correlation": self.correlation,
            "n": self.n,
            "paired": self.paired,
            "mean_a": self.mean_a,
            "mean_b": self.mean_b,
            "n_clusters": self.n_clusters,
            "level": self.level,
            "formula": self.formula,
            "mde": self.mde,
            "effect_size": self.effect_size,
            "n_dropped_a": self.n_dropped_a,
            "n_dropped_b": self.n_dropped_b,
            "warnings": list(self.notes),
        }


@renamed(confidence="level")
@validate_params({"level": PROBABILITY, "formula": OneOf(FORMULAS), "paired": BOOL, "strict": BOOL})
def compare(
    a: Any,
    b: Any,
    cluster: Any = None,
    level: float = 0.95,
    *,
    paired: bool = True,
    ids_a: Any = None,
    ids_b: Any = None,
    cluster_b: Any = None,
    formula: str = "cr1",
    strict: bool = False,
) -> CompareResult:
    """Compare two models' scores: paired on matched questions, or unpaired.

    Parameters
    ----------
    a, b
        Scores as for :func:`labcoat.stats.mean`: ``(n,)``, ``(n, K)``, or one answer per row
        with ``ids_a``/``ids_b``. Paired without ids, position ``i`` is the same question.
    cluster
        Cluster label per question of ``a`` (paired: shared by both; unpaired: ``a`` only,
        with ``cluster_b`` for ``b``).
    paired
        Pair questions. With ids, questions on one side only are left out and counted in
        ``n_dropped_a``/``n_dropped_b`` (a warning says so); ``strict=True`` refuses instead.
    formula
        ``"cr1"`` (default, t intervals) or ``"miller"`` (Eq 5-8 as printed, z intervals).
    """
    if not paired:
        return _unpaired(a, b, cluster, cluster_b, level, ids_a, ids_b, formula)
    qa, qb, index_a, index_b, dropped = paired_questions(a, b, ids_a, ids_b, strict)
    x, y = qa.means[index_a], qb.means[index_b]
    d = x - y
    n = d.size
    centred = d - d.mean()
    codes = None
    if cluster is not None:
        codes = cluster_codes(per_question(cluster, qa, "cluster")[index_a])
    se, df, n_clusters = standard_error(centred, codes, formula, paired=True)
    diff = float(d.mean())
    statistic, p = _test(diff, se, df)
    sd = float(d.std(ddof=1))
    notes = list(_warnings(n, se, n_clusters, formula))
    if dropped[0] or dropped[1]:
        notes.append(
            f"{dropped[0]} question(s) only in A and {dropped[1]} only in B were left out; "
            f"the comparison uses the {n} shared ones"
        )
    return CompareResult(
        diff=diff,
        se=se,
        statistic=statistic,
        pvalue=p,
        df=df,
        n=n,
        paired=True,
        mean_a=float(x.mean()),
        mean_b=float(y.mean()),
        correlation=_pearson(x, y),
        n_clusters=n_clusters,
        level=level,
        formula=formula,
        mde=detectable_effect(se, level, df),
        effect_size=_ratio(diff, sd),
        n_dropped_a=dropped[0],
        n_dropped_b=dropped[1],
        notes=tuple(notes),
    )


def _unpaired(a, b, cluster, cluster_b, level, ids_a, ids_b, formula) -> CompareResult:
    """Eq 5-6: independent samples, ``SE = sqrt(SE_A^2 + SE_B^2)``; Welch df under CR1."""
    ra = mean(a, cluster, level, ids=ids_a, formula=formula)
    rb = mean(b, cluster_b, level, ids=ids_b, formula=formula)
    diff = ra.mean - rb.mean
    se = float(np.hypot(ra.se, rb.se))
    df = _welch_df(ra.se**2, ra.df, rb.se**2, rb.df)
    statistic, p = _test(diff, se, df)
    clusters = None
    if ra.n_clusters is not None or rb.n_clusters is not None:
        clusters = (ra.n_clusters or ra.n) + (rb.n_clusters or rb.n)
    pooled = math.sqrt(
        ((ra.n - 1) * (ra.se_clt**2 * ra.n) + (rb.n - 1) * (rb.se_clt**2 * rb.n))
        / (ra.n + rb.n - 2)
    )
    return CompareResult(
        diff=diff,
        se=se,
        statistic=statistic,
        pvalue=p,
        df=df,
        n=ra.n + rb.n,
        paired=False,
        mean_a=ra.mean,
        mean_b=rb.mean,
        correlation=None,
        n_clusters=clusters,
        level=level,
        formula=formula,
        mde=detectable_effect(se, level, df),
        effect_size=_ratio(diff, pooled),
        notes=tuple(f"A: {w}" for w in ra.notes if "Wilson" not in w)
        + tuple(f"B: {w}" for w in rb.notes if "Wilson" not in w),
    )


def _welch_df(var_a: float, df_a: float | None, var_b: float, df_b: float | None) -> float | None:
    """Welch-Satterthwaite degrees of freedom of ``var_a + var_b``; None (z) under Miller."""
    if df_a is None or df_b is None:
        return None
    den = var_a**2 / df_a + var_b**2 / df_b
    return float((var_a + var_b) ** 2 / den) if den > 0 else float(min(df_a, df_b))


def detectable_effect(se: float, level: float, df: float | None, power: float = MDE_POWER) -> float:
    """Smallest true difference a two-sided test at ``1 - level`` detects with ``power``."""
    return (quantile(0.5 + level / 2, df) + quantile(power, df)) * se


def _test(diff: float, se: float, df: float | None) -> tuple[float, float]:
    if se == 0:
        return (float("nan"), 1.0) if diff == 0 else (float(np.copysign(np.inf, diff)), 0.0)
    statistic = diff / se
    return float(statistic), two_sided_pvalue(statistic, df)


def _ratio(num: float, den: float) -> float:
    if den == 0:
        return 0.0 if num == 0 else float(np.copysign(np.inf, num))
    return num / den


def _pearson(x: np.ndarray, y: np.ndarray) -> float | None:
    if np.all(x == x[0]) or np.all(y == y[0]):
        return None  # undefined when one model scores every question the same (JSON null)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(np.corrcoef(x, y)[0, 1])


def _warnings(n: int, se: float, n_clusters: int | None, formula: str) -> tuple[str, ...]:
    out = []
    if se == 0:
        out.append(
            "the two models score every question identically apart from a constant: the SE is 0"
        )
    if n < FEW_ITEMS:
        out.append(
            f"only {n} matched questions: intervals built on the CLT are unreliable at this size"
        )
    out.extend(cluster_warnings(n_clusters, formula))
    return tuple(out)


@dataclass(frozen=True)
class ExclusionResult(StatsResult):
    """A paired comparison re-scored without some questions (e.g. flagged label errors).

    ``kept`` is the comparison without them, ``full`` the one with every question;
    ``decision_changed`` is True when one finds a significant difference (its interval
    excludes 0) and the other does not, or when the sign of a significant difference flips.
    """

    KIND = "stats.compare.exclude"

    view = "labcoat.stats.view:exclusion_view"
    title = "Comparison without excluded questions"

    kept: CompareResult
    full: CompareResult
    n_ids: int
    n_excluded_a: int
    n_excluded_b: int

    @staticmethod
    def decision(result: CompareResult) -> str:
        """``"A > B"``, ``"A < B"`` or ``"no difference"`` at the result's confidence level."""
        ci = result.ci
        return "A > B" if ci.low > 0 else "A < B" if ci.high < 0 else "no difference"

    @property
    def decision_changed(self) -> bool:
        return self.decision(self.kept) != self.decision(self.full)

    def to_dict(self) -> dict[str, Any]:
        out = self.kept.to_dict()
        out["exclude"] = {
            "n_ids": self.n_ids,
            "n_excluded_a": self.n_excluded_a,
            "n_excluded_b": self.n_excluded_b,
            "decision": self.decision(self.kept),
            "decision_before": self.decision(self.full),
            "decision_changed": self.decision_changed,
            "before": {k: v for k, v in self.full.to_dict().items() if k != "warnings"},
        }
        return out


@renamed(confidence="level")
@validate_params({"level": PROBABILITY})
def compare_excluding(
    a: Any,
    b: Any,
    exclude: Any,
    cluster: Any = None,
    level: float = 0.95,
    *,
    ids_a: Any,
    ids_b: Any,
    **options: Any,
) -> ExclusionResult:
    """:func:`compare` with and without the questions whose id is in ``exclude``.

    Ids are matched as strings, so ``7`` in a flag list matches ``"7"`` in a CSV. ``options``
    go to :func:`compare` (``formula``, ``strict``).
    """
    if ids_a is None or ids_b is None:
        raise InputError("excluding questions needs their ids: give `ids_a` and `ids_b`.")
    drop = {str(v) for v in exclude}
    la = np.array([str(v) for v in np.asarray(ids_a, dtype=object)], dtype=object)
    lb = np.array([str(v) for v in np.asarray(ids_b, dtype=object)], dtype=object)
    keep_a = np.array([v not in drop for v in la], dtype=bool)
    keep_b = np.array([v not in drop for v in lb], dtype=bool)
    full = compare(a, b, cluster, level, ids_a=la, ids_b=lb, **options)
    kept = compare(
        np.asarray(a)[keep_a],
        np.asarray(b)[keep_b],
        None if cluster is None else np.asarray(cluster, dtype=object)[keep_a],
        level,
        ids_a=la[keep_a],
        ids_b=lb[keep_b],
        **options,
    )
    return ExclusionResult(kept, full, len(drop), int((~keep_a).sum()), int((~keep_b).sum()))
