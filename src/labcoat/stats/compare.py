"""Is model A better than model B? (Miller 2024, Eq 5-8)

When both models answered the same questions, the question-level difference ``a_i - b_i``
removes the variance the two share (question difficulty), so the paired standard error
(Eq 7, clustered Eq 8) is smaller than the unpaired one by the correlation of the scores.
lm-eval-harness and most leaderboards use the unpaired test and throw that away. Unpaired
(Eq 5-6) is right only when the question sets differ.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats as sps

from labcoat.errors import InputError
from labcoat.stats._questions import Questions, match_ids, per_question, question_scores
from labcoat.stats._results import ConfidenceInterval
from labcoat.stats._validation import check_probability
from labcoat.stats.mean import FEW_ITEMS, cluster_codes, clustered_se, mean, normal_interval


@dataclass(frozen=True)
class CompareResult:
    """Difference ``A - B`` of mean scores, its standard error and a two-sided z-test.

    ``n`` is the number of matched questions when paired and ``n_a + n_b`` otherwise.
    ``correlation`` (paired only) is the Pearson correlation of the two models' question
    scores: the higher it is, the more pairing shrinks the standard error.
    """

    diff: float
    se: float
    z: float
    p_value: float
    n: int
    paired: bool
    mean_a: float
    mean_b: float
    correlation: float | None
    n_clusters: int | None
    confidence: float
    warnings: tuple[str, ...] = field(default=())

    @property
    def ci(self) -> ConfidenceInterval:
        return self.confidence_interval(self.confidence)

    def confidence_interval(self, confidence_level: float = 0.95) -> ConfidenceInterval:
        return normal_interval(self.diff, self.se, check_probability(confidence_level, "confidence_level"))

    def to_dict(self) -> dict[str, Any]:
        ci = self.ci
        return {
            "diff": self.diff,
            "se": self.se,
            "ci": [ci.low, ci.high],
            "z": self.z,
            "p_value": self.p_value,
            "correlation": self.correlation,
            "n": self.n,
        }


def compare(
    a: Any,
    b: Any,
    cluster: Any = None,
    confidence: float = 0.95,
    *,
    paired: bool = True,
    ids_a: Any = None,
    ids_b: Any = None,
    cluster_b: Any = None,
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
        Pair questions (Eq 7/8). With ids, every id must appear on both sides.
    ids_a, ids_b
        Question ids per row, used to match questions and to average repeated answers.
    """
    confidence = check_probability(confidence, "confidence")
    if not paired:
        return _unpaired(a, b, cluster, cluster_b, confidence, ids_a, ids_b)
    qa, qb, order_b = _paired_iv(a, b, ids_a, ids_b)
    x, y = qa.means, qb.means[order_b]
    d = x - y
    n = d.size
    centred = d - d.mean()
    if cluster is None:
        se = float(np.sqrt(centred @ centred / (n * (n - 1))))
        n_clusters = None
    else:
        codes = cluster_codes(per_question(cluster, qa, "cluster"))
        se, n_clusters = clustered_se(centred, codes), int(codes.max() + 1)
    diff = float(d.mean())
    z, p = _z_test(diff, se)
    return CompareResult(
        diff=diff,
        se=se,
        z=z,
        p_value=p,
        n=n,
        paired=True,
        mean_a=float(x.mean()),
        mean_b=float(y.mean()),
        correlation=_pearson(x, y),
        n_clusters=n_clusters,
        confidence=confidence,
        warnings=_warnings(n, se, n_clusters),
    )


def _paired_iv(a: Any, b: Any, ids_a: Any, ids_b: Any) -> tuple[Questions, Questions, np.ndarray]:
    """Questions of both sides and the permutation of ``b`` that lines it up with ``a``."""
    if (ids_a is None) != (ids_b is None):
        raise InputError("give both `ids_a` and `ids_b` to match questions by id, or neither to match by position.")
    qa = question_scores(a, ids_a, name="a")
    qb = question_scores(b, ids_b, name="b")
    if ids_a is None:
        if qa.n != qb.n:
            raise InputError(
                f"`a` and `b` must score the same questions for a paired comparison; got {qa.n} and "
                f"{qb.n} questions. Pass ids to match them, or compare unpaired (paired=False)."
            )
        order = np.arange(qb.n)
    else:
        order = match_ids(qa.ids, qb.ids)
    if qa.n < 2:
        raise InputError(f"a paired comparison needs at least 2 matched questions; got {qa.n}.")
    return qa, qb, order


def _unpaired(a, b, cluster, cluster_b, confidence, ids_a, ids_b) -> CompareResult:
    """Eq 5-6: independent samples, ``SE = sqrt(SE_A^2 + SE_B^2)``."""
    ra = mean(a, cluster, confidence, ids=ids_a)
    rb = mean(b, cluster_b, confidence, ids=ids_b)
    diff = ra.mean - rb.mean
    se = float(np.hypot(ra.se, rb.se))
    z, p = _z_test(diff, se)
    clusters = None
    if ra.n_clusters is not None or rb.n_clusters is not None:
        clusters = (ra.n_clusters or ra.n) + (rb.n_clusters or rb.n)
    return CompareResult(
        diff=diff,
        se=se,
        z=z,
        p_value=p,
        n=ra.n + rb.n,
        paired=False,
        mean_a=ra.mean,
        mean_b=rb.mean,
        correlation=None,
        n_clusters=clusters,
        confidence=confidence,
        warnings=tuple(f"A: {w}" for w in ra.warnings) + tuple(f"B: {w}" for w in rb.warnings),
    )


def _z_test(diff: float, se: float) -> tuple[float, float]:
    if se == 0:
        return (float("nan"), 1.0) if diff == 0 else (float(np.copysign(np.inf, diff)), 0.0)
    z = diff / se
    return float(z), float(2 * sps.norm.sf(abs(z)))


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    if np.all(x == x[0]) or np.all(y == y[0]):
        return float("nan")  # undefined when one model scores every question the same
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(sps.pearsonr(x, y).statistic)


def _warnings(n: int, se: float, n_clusters: int | None) -> tuple[str, ...]:
    out = []
    if se == 0:
        out.append("the two models score every question identically apart from a constant: the SE is 0")
    if n < FEW_ITEMS:
        out.append(f"only {n} matched questions: the normal approximation is unreliable at this size")
    if n_clusters is not None and n_clusters < FEW_ITEMS:
        out.append(f"only {n_clusters} clusters: the clustered standard error is biased low with few clusters")
    return tuple(out)
