"""The mean score of an eval with an honest standard error.

Questions are the unit of analysis: answers repeated K times are averaged per question first
(Miller 2024, §3). When questions come in groups that share a passage, a template or a
language, their errors are correlated and the plain standard error is too small.

The default (``formula="cr1"``) is the CR1 cluster-robust sandwich, the standard error of an
OLS regression of the score on a constant with clustered errors (statsmodels, Stata, Inspect
AI), with a t(G − 1) interval for G clusters and t(n − 1) without clusters: it keeps its
coverage at a handful of clusters where the uncorrected z interval does not.
``formula="miller"`` is the paper as printed: Eq 2 and Eq 4 with z intervals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from labcoat._validation import PROBABILITY, OneOf, renamed, validate_params
from labcoat.errors import InputError
from labcoat.stats._distributions import critical_value
from labcoat.stats._questions import Questions, per_question, question_scores
from labcoat.stats._results import ConfidenceInterval, IntervalResult, StatsResult

#: below this many questions (or clusters) the normal approximation is not to be trusted
#: (Bowyer et al. 2025 show CLT intervals under-cover well into the low hundreds).
FEW_ITEMS = 30
#: ``cr1``: cluster-robust sandwich with the G/(G-1) correction and t intervals (default);
#: ``miller``: the paper's Eq 2/4 (mean) and 7/8 (paired difference) with z intervals.
FORMULAS = ("cr1", "miller")


@dataclass(frozen=True)
class MeanResult(StatsResult, IntervalResult):
    """Mean score with its standard error and interval.

    ``se`` is the CR1 clustered standard error when clusters were given (Eq 4 with
    ``formula="miller"``) and the sample standard error otherwise; ``se_clt`` is always the
    latter, so their ratio shows how much the clustering matters. ``df`` is the degrees of
    freedom of the t interval (None for z). ``interval`` names the method of :attr:`ci`:
    ``"t"``, ``"z"`` or ``"wilson"`` (0/1 scores at small n or near 0 or 1).
    """

    KIND = "stats.mean"

    view = "labcoat.stats.view:mean_view"
    title = "Mean"

    mean: float
    se: float
    n: int
    n_clusters: int | None
    df: float | None
    se_clt: float
    k: float
    level: float
    formula: str
    interval: str
    notes: tuple[str, ...] = field(default=())

    def _interval(self, level: float) -> ConfidenceInterval:
        """The interval of :attr:`interval`'s method at ``level``."""
        if self.interval == "wilson":
            return wilson_interval(self.mean, self.n, level)
        return symmetric_interval(self.mean, self.se, level, self.df)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mean": self.mean,
            "se": self.se,
            "ci": list(self.ci),
            "n": self.n,
            "n_clusters": self.n_clusters,
            "df": self.df,
            "se_clt": self.se_clt,
            "k": self.k,
            "level": self.level,
            "formula": self.formula,
            "interval": self.interval,
            "warnings": list(self.notes),
        }


@renamed(confidence="level")
@validate_params({"level": PROBABILITY, "formula": OneOf(FORMULAS)})
def mean(
    scores: Any,
    cluster: Any = None,
    level: float = 0.95,
    *,
    ids: Any = None,
    formula: str = "cr1",
) -> MeanResult:
    """Mean score, its (clustered) standard error and a confidence interval.

    Parameters
    ----------
    scores
        One score per question, ``(n,)``; or ``(n, K)`` for K answers per question; or one
        answer per row with ``ids`` saying which question each row answers.
    cluster
        Optional cluster label per question (or per row with ``ids``).
    level
        Level of :attr:`MeanResult.ci`; any other level via ``confidence_interval(level)``.
    ids
        Question id per row; rows that share an id are averaged into one question score.
    formula
        ``"cr1"`` (default): CR1 sandwich, t(G − 1) or t(n − 1). ``"miller"``: Eq 2/4, z.
        0/1 scores without clusters get a Wilson interval under ``"cr1"`` when n < 30 or the
        t interval would leave [0, 1]; :attr:`MeanResult.warnings` says so.
    """
    questions, clusters, level = _mean_iv(scores, cluster, level, ids)
    x = questions.means
    n = x.size
    centred = x - x.mean()
    se_clt = float(math.sqrt(centred @ centred / (n * (n - 1))))
    se, df, n_clusters = standard_error(centred, clusters, formula)
    estimate = float(x.mean())
    notes = list(trust_warnings(x, n_clusters, formula))
    interval = "z" if df is None else "t"
    if formula == "cr1" and clusters is None and _is_binary(x):
        t_ci = symmetric_interval(estimate, se, level, df)
        if n < FEW_ITEMS or t_ci.low < 0 or t_ci.high > 1:
            interval = "wilson"
            why = f"only {n} questions" if n < FEW_ITEMS else "the t interval leaves [0, 1]"
            notes.append(f"0/1 scores and {why}: the interval is Wilson's score interval, not t")
    return MeanResult(
        mean=estimate,
        se=se,
        n=n,
        n_clusters=n_clusters,
        df=df,
        se_clt=se_clt,
        k=questions.k,
        level=level,
        formula=formula,
        interval=interval,
        notes=tuple(notes),
    )


def _mean_iv(
    scores: Any, cluster: Any, level: Any, ids: Any
) -> tuple[Questions, np.ndarray | None, float]:
    questions = question_scores(scores, ids)
    if questions.n < 2:
        raise InputError(
            f"`scores` needs at least 2 questions for a standard error; got {questions.n}."
        )
    clusters = (
        None if cluster is None else cluster_codes(per_question(cluster, questions, "cluster"))
    )
    return questions, clusters, level


def _is_binary(x: np.ndarray) -> bool:
    return bool(np.isin(x, (0.0, 1.0)).all())


def cluster_codes(labels: np.ndarray) -> np.ndarray:
    """Integer code per entry for any hashable labels (strings, ints)."""
    return np.unique(np.asarray(labels), return_inverse=True)[1].reshape(-1)


def standard_error(
    centred: np.ndarray, codes: np.ndarray | None, formula: str, *, paired: bool = False
) -> tuple[float, float | None, int | None]:
    """``(se, df, n_clusters)`` of the mean of ``centred`` values (a mean or paired differences).

    ``cr1``: ``df`` is G − 1 with clusters and n − 1 without. ``miller``: Eq 2/7 without
    clusters, Eq 4 (mean) or Eq 8 as printed (``paired``) with clusters; ``df`` None (z).
    """
    n = centred.size
    if codes is None:
        se = float(math.sqrt(centred @ centred / (n * (n - 1))))
        return se, (float(n - 1) if formula == "cr1" else None), None
    n_clusters = int(codes.max()) + 1
    if formula == "miller":
        se = eq8_se(centred, codes) if paired else clustered_se(centred, codes)
        return se, None, n_clusters
    if n_clusters < 2:
        raise InputError(
            "every question is in one cluster: a clustered standard error needs at least 2 "
            "clusters; drop the cluster column or check that it holds the grouping you meant."
        )
    return cr1_se(centred, codes), float(n_clusters - 1), n_clusters


def cr1_se(centred: np.ndarray, codes: np.ndarray) -> float:
    """CR1 sandwich for a mean: ``sqrt(G / (G - 1) * sum_c (sum_i e_ic)^2) / n``.

    This is statsmodels' ``OLS(y, 1).fit(cov_type="cluster")``; with one regressor its
    small-sample factor ``(n - 1) / (n - k)`` is 1, leaving ``G / (G - 1)``.
    """
    n = centred.size
    per_cluster = np.bincount(codes, weights=centred)
    g = per_cluster.size
    return float(math.sqrt(g / (g - 1) * (per_cluster @ per_cluster))) / n


def clustered_se(centred: np.ndarray, codes: np.ndarray) -> float:
    """Miller Eq 4: ``sqrt(SE_CLT^2 + n^-2 * sum_c sum_i sum_{j != i} e_ic e_jc)`` for centred
    scores ``e``.

    The cross products within a cluster are ``(sum_i e_ic)^2 - sum_i e_ic^2``, so the whole sum
    is one ``bincount``.
    """
    n = centred.size
    per_cluster = np.bincount(codes, weights=centred)
    cross = per_cluster @ per_cluster - centred @ centred
    variance = centred @ centred / (n * (n - 1)) + cross / n**2
    return float(np.sqrt(max(variance, 0.0)))


def eq8_se(centred: np.ndarray, codes: np.ndarray) -> float:
    """Miller Eq 8 as printed: ``(1/n) sqrt(sum_c (sum_i d_ic)^2)`` over centred differences.

    The within-cluster sum runs over all ``i, j`` including ``i = j``, so there is no separate
    CLT term (unlike Eq 4).
    """
    per_cluster = np.bincount(codes, weights=centred)
    return float(math.sqrt(per_cluster @ per_cluster)) / centred.size


def symmetric_interval(
    estimate: float, se: float, level: float, df: float | None = None
) -> ConfidenceInterval:
    """``estimate ± q * se`` with ``q`` from t(df), or the normal when ``df`` is None."""
    half = critical_value(level, df) * se
    return ConfidenceInterval(estimate - half, estimate + half)


def wilson_interval(p: float, n: int, level: float) -> ConfidenceInterval:
    """Wilson's score interval for a share ``p`` of ``n`` 0/1 answers (scipy's ``wilson``)."""
    z = critical_value(level)
    z2n = z * z / n
    centre = (p + z2n / 2) / (1 + z2n)
    half = z / (1 + z2n) * math.sqrt(p * (1 - p) / n + z2n / (4 * n))
    # at p = 0 (or 1) the bound is exactly 0 (or 1): rounding would leave 2.8e-17 otherwise
    low = 0.0 if p <= 0.0 else max(0.0, centre - half)
    high = 1.0 if p >= 1.0 else min(1.0, centre + half)
    return ConfidenceInterval(low, high)


def trust_warnings(x: np.ndarray, n_clusters: int | None, formula: str = "cr1") -> tuple[str, ...]:
    """Plain-language reasons the interval may mislead for these question scores."""
    out = []
    n = x.size
    if np.all(x == x[0]):
        out.append(
            f"every question scored {x[0]:g}: the standard error is 0; "
            "for 0/1 scores see the Wilson or Clopper-Pearson interval (labcoat stats intervals)"
        )
    elif n < FEW_ITEMS:
        out.append(f"only {n} questions: intervals built on the CLT under-cover at this size")
    elif _is_binary(x):
        hits = int(x.sum())
        if min(hits, n - hits) < 10:
            out.append(
                f"{min(hits, n - hits)} {'correct' if hits < n - hits else 'wrong'} answers of "
                f"{n}: "
                "a symmetric interval is unreliable this close to 0 or 1; prefer Wilson or "
                "Clopper-Pearson"
            )
    out.extend(cluster_warnings(n_clusters, formula))
    return tuple(out)


def cluster_warnings(n_clusters: int | None, formula: str) -> list[str]:
    """What a small number of clusters does to the interval, per ``formula``."""
    if n_clusters is None or n_clusters >= FEW_ITEMS:
        return []
    if formula == "miller":
        return [
            f"only {n_clusters} clusters: the paper's clustered SE is biased low and the z "
            "interval under-covers; the default formula (CR1, t(G-1)) corrects both"
        ]
    return [f"only {n_clusters} clusters: the interval uses t({n_clusters - 1}) and is wide"]
