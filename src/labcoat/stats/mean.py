"""The mean score of an eval with an honest standard error (Miller 2024, Eq 1-4).

Questions are the unit of analysis: answers repeated K times are averaged per question first
(§3). When questions come in groups that share a passage, a template or a language, their
errors are correlated and the plain CLT standard error is too small; the clustered standard
error of Eq 4 adds the within-cluster cross products back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats as sps

from labcoat.errors import InputError
from labcoat.stats._questions import Questions, per_question, question_scores
from labcoat.stats._results import ConfidenceInterval
from labcoat.stats._validation import check_probability

#: below this many questions (or clusters) the normal approximation is not to be trusted
#: (Bowyer et al. 2025 show CLT intervals under-cover well into the low hundreds).
FEW_ITEMS = 30


@dataclass(frozen=True)
class MeanResult:
    """Mean score with its standard error.

    ``se`` is the clustered standard error (Eq 4) when clusters were given and the CLT one
    (Eq 2) otherwise; ``se_clt`` is always the latter, so their ratio shows how much the
    clustering matters. ``warnings`` says when the normal interval should not be trusted.
    """

    mean: float
    se: float
    n: int
    n_clusters: int | None
    se_clt: float
    k: float
    confidence: float
    warnings: tuple[str, ...] = field(default=())

    @property
    def ci(self) -> ConfidenceInterval:
        return self.confidence_interval(self.confidence)

    def confidence_interval(self, confidence_level: float = 0.95) -> ConfidenceInterval:
        """Normal interval ``mean ± z * se`` at ``confidence_level``."""
        return normal_interval(self.mean, self.se, check_probability(confidence_level, "confidence_level"))

    def to_dict(self) -> dict[str, Any]:
        ci = self.ci
        return {"mean": self.mean, "se": self.se, "ci": [ci.low, ci.high], "n": self.n, "n_clusters": self.n_clusters}


def mean(
    scores: Any,
    cluster: Any = None,
    confidence: float = 0.95,
    *,
    ids: Any = None,
) -> MeanResult:
    """Mean score, CLT or clustered standard error, and a normal confidence interval.

    Parameters
    ----------
    scores
        One score per question, ``(n,)``; or ``(n, K)`` for K answers per question; or one
        answer per row with ``ids`` saying which question each row answers.
    cluster
        Optional cluster label per question (or per row with ``ids``); switches to Eq 4.
    confidence
        Level of :attr:`MeanResult.ci`; any other level via ``confidence_interval(level)``.
    ids
        Question id per row; rows that share an id are averaged into one question score.
    """
    questions, clusters, confidence = _mean_iv(scores, cluster, confidence, ids)
    x = questions.means
    n = x.size
    centred = x - x.mean()
    se_clt = float(np.sqrt(centred @ centred / (n * (n - 1))))
    if clusters is None:
        se, n_clusters = se_clt, None
    else:
        se, n_clusters = clustered_se(centred, clusters), int(np.unique(clusters).size)
    return MeanResult(
        mean=float(x.mean()),
        se=se,
        n=n,
        n_clusters=n_clusters,
        se_clt=se_clt,
        k=questions.k,
        confidence=confidence,
        warnings=trust_warnings(x, n_clusters),
    )


def _mean_iv(scores: Any, cluster: Any, confidence: Any, ids: Any) -> tuple[Questions, np.ndarray | None, float]:
    confidence = check_probability(confidence, "confidence")
    questions = question_scores(scores, ids)
    if questions.n < 2:
        raise InputError(f"`scores` needs at least 2 questions for a standard error; got {questions.n}.")
    clusters = None if cluster is None else cluster_codes(per_question(cluster, questions, "cluster"))
    return questions, clusters, confidence


def cluster_codes(labels: np.ndarray) -> np.ndarray:
    """Integer code per entry for any hashable labels (strings, ints)."""
    return np.unique(np.asarray(labels), return_inverse=True)[1].reshape(-1)


def clustered_se(centred: np.ndarray, codes: np.ndarray) -> float:
    """Miller Eq 4: ``sqrt(SE_CLT^2 + n^-2 * sum_c sum_i sum_{j != i} e_ic e_jc)`` for centred scores ``e``.

    The cross products within a cluster are ``(sum_i e_ic)^2 - sum_i e_ic^2``, so the whole sum
    is one ``bincount``.
    """
    n = centred.size
    per_cluster = np.bincount(codes, weights=centred)
    cross = per_cluster @ per_cluster - centred @ centred
    variance = centred @ centred / (n * (n - 1)) + cross / n**2
    return float(np.sqrt(max(variance, 0.0)))


def normal_interval(estimate: float, se: float, confidence: float) -> ConfidenceInterval:
    half = float(sps.norm.ppf(0.5 + confidence / 2)) * se
    return ConfidenceInterval(estimate - half, estimate + half)


def trust_warnings(x: np.ndarray, n_clusters: int | None) -> tuple[str, ...]:
    """Plain-language reasons the normal interval may mislead for these question scores."""
    out = []
    n = x.size
    if np.all(x == x[0]):
        out.append(
            f"every question scored {x[0]:g}: the standard error is 0 and the interval has no width; "
            "use a Clopper-Pearson or Wilson interval (labcoat stats intervals)"
        )
    elif n < FEW_ITEMS:
        out.append(
            f"only {n} questions: CLT intervals under-cover at this size; "
            "for 0/1 scores prefer Wilson or Clopper-Pearson (labcoat stats intervals)"
        )
    elif np.isin(x, (0.0, 1.0)).all():
        hits = int(x.sum())
        if min(hits, n - hits) < 10:
            out.append(
                f"{min(hits, n - hits)} {'correct' if hits < n - hits else 'wrong'} answers of {n}: "
                "the normal interval is unreliable this close to 0 or 1; prefer Wilson or Clopper-Pearson"
            )
    if n_clusters is not None and n_clusters < FEW_ITEMS:
        out.append(f"only {n_clusters} clusters: the clustered standard error is biased low with few clusters")
    return tuple(out)
