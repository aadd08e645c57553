"""How many questions does an eval need? (Miller 2024, Eq 9-10, with clusters)

For a paired comparison of two models the variance of a question-level difference splits into
``omega2`` (how much the models' true per-question accuracies differ across questions) and
the answer-sampling noise ``sigma2_A / K_A + sigma2_B / K_B`` (the mean within-question
variance over the K answers drawn per question). Resampling answers (K > 1) shrinks only the
second part, which is why it buys a smaller minimum detectable effect without new questions.

Questions that come in clusters (passages, templates) carry less information than as many
independent ones: the variance is multiplied by the design effect ``1 + (m - 1) ICC`` for
clusters of ``m`` questions with intra-cluster correlation ICC (Kish 1965), which a pilot
file with a cluster column estimates. The design effect grows with ``m``, so a pilot's own
(small clusters) says little about the full run's: :meth:`DesignEffect.at` projects the
pilot's ICC to the planned cluster sizes, and :func:`clustered_mde` and
:func:`clustered_sample_size` solve the power with the design effect of the n they solve for,
with t(G - 1) quantiles as the CR1 test on G clusters uses, at the ICC's estimate or at its
upper confidence bound.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from labcoat.errors import InputError
from labcoat.findings import Finding
from labcoat.result import Result
from labcoat.stats._distributions import quantile, upper_tail
from labcoat.stats._questions import match_ids, per_question, question_scores
from labcoat.stats._validation import (
    check_choice,
    check_finite,
    check_positive,
    check_probability,
)

ALTERNATIVES = ("two-sided", "one-sided")


@dataclass(frozen=True)
class PowerResult(Result):
    """Questions ``n`` (rounded up), the exact ``n_exact``, the detectable effect ``mde`` and
    the power they go together with, for the variances and design effect given."""

    engine = "stats"
    KIND = "stats.power"
    view = "labcoat.stats.view:power_view"
    section = "labcoat.report.sections.stats:stats_section"

    n: int
    n_exact: float
    mde: float
    power: float
    omega2: float
    sigma2_a: float
    sigma2_b: float
    k_a: float
    k_b: float
    alpha: float
    alternative: str
    design_effect: float
    solved: str
    #: t degrees of freedom of the test the power is for (clusters - 1); None: the normal
    df: float | None = None
    #: the pilot's clusters projected to the solved n (None: a fixed design effect)
    clustering: "ClusterProjection | None" = None

    @property
    def variance(self) -> float:
        """Variance of one question-level difference, times the design effect."""
        return (
            self.omega2 + self.sigma2_a / self.k_a + self.sigma2_b / self.k_b
        ) * self.design_effect

    def to_dict(self) -> dict[str, Any]:
        return {
            "solved": self.solved,
            "n": self.n,
            "n_exact": self.n_exact,
            "mde": self.mde,
            "power": self.power,
            "omega2": self.omega2,
            "sigma2_a": self.sigma2_a,
            "sigma2_b": self.sigma2_b,
            "k_a": self.k_a,
            "k_b": self.k_b,
            "alpha": self.alpha,
            "alternative": self.alternative,
            "design_effect": self.design_effect,
            "df": self.df,
            "clustering": None if self.clustering is None else self.clustering.to_dict(),
        }

    @property
    def findings(self) -> list[Finding]:
        """None: this result states numbers, it runs no check of its own."""
        return []


@dataclass(frozen=True)
class VarianceComponents:
    """``omega2`` and ``sigma2`` estimated from a pilot run of both models on the same questions."""

    omega2: float
    sigma2_a: float
    sigma2_b: float
    k_a: float
    k_b: float
    n: int


@dataclass(frozen=True)
class DesignEffect:
    """How much clustering inflates the variance of a mean: ``1 + ((1 + cv²) m - 1) * icc``.

    ``icc`` is the one-way ANOVA estimate of the intra-cluster correlation (floored at 0),
    ``icc_upper`` its one-sided upper confidence bound at ``level`` (Searle's F
    interval), ``cluster_size`` the mean number of questions per cluster and ``size_cv2`` the
    squared coefficient of variation of the cluster sizes (0 for equal clusters; unequal ones
    inflate the variance more, Eldridge, Ashby & Kerry 2006). ``design_effect`` is the one at
    the pilot's own cluster sizes; :meth:`at` projects it to another number of questions.
    """

    design_effect: float
    icc: float
    cluster_size: float
    n_clusters: int
    icc_upper: float = 1.0
    level: float = 0.95
    size_cv2: float = 0.0

    @property
    def df(self) -> int:
        """Degrees of freedom of a CR1 test on these clusters: G - 1."""
        return self.n_clusters - 1

    def at(self, items: float, *, upper: bool = False) -> float:
        """The design effect of ``items`` questions spread over the same clusters in the
        pilot's proportions (``upper``: at the ICC's upper bound), never below 1."""
        icc = self.icc_upper if upper else self.icc
        size = (1.0 + self.size_cv2) * float(items) / self.n_clusters
        return max(1.0, 1.0 + (size - 1.0) * icc)

    def to_dict(self) -> dict[str, Any]:
        return {
            "design_effect": self.design_effect,
            "icc": self.icc,
            "icc_upper": self.icc_upper,
            "level": self.level,
            "cluster_size": self.cluster_size,
            "size_cv2": self.size_cv2,
            "n_clusters": self.n_clusters,
        }


@dataclass(frozen=True)
class ClusterProjection:
    """A pilot's clusters projected to the n a power calculation solved: the design effect
    there at the ICC's upper bound, and the solved quantity again at that bound (``upper``:
    n, MDE or power; None where no number of questions in these clusters reaches the MDE)."""

    pilot: DesignEffect
    design_effect_upper: float
    upper: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.pilot.to_dict(),
            "design_effect_upper": self.design_effect_upper,
            "upper": self.upper,
        }


def design_effect(icc: float, cluster_size: float) -> float:
    """Kish's design effect ``1 + (m - 1) * icc`` for clusters of ``m`` questions."""
    if isinstance(icc, bool) or not isinstance(icc, (int, float)) or not 0.0 <= icc <= 1.0:
        raise InputError(f"`icc` must be a number from 0 to 1; got {icc!r}.")
    m = check_positive(cluster_size, "cluster_size")
    if m < 1:
        raise InputError(f"`cluster_size` must be at least 1 question; got {cluster_size!r}.")
    return 1.0 + (m - 1.0) * float(icc)


def estimate_design_effect(
    scores: Any, cluster: Any, *, ids: Any = None, level: float = 0.95
) -> DesignEffect:
    """ICC and design effect of per-question scores (or paired differences) in clusters.

    The ICC is the ANOVA estimator ``(MSB - MSW) / (MSB + (m0 - 1) MSW)`` with ``m0`` the
    size-adjusted mean cluster size, so unequal clusters are handled as Donner (1986) does;
    its upper bound at ``level`` is Searle's: ``F = MSB / MSW`` divided by the F(G - 1,
    n - G) quantile at ``1 - level`` in place of F.
    """
    q = question_scores(scores, ids)
    labels = per_question(cluster, q, "cluster")
    codes = np.unique(np.asarray(labels), return_inverse=True)[1].reshape(-1)
    level = check_probability(level, "level")
    x = q.means
    n = x.size
    sizes = np.bincount(codes).astype(float)
    g = sizes.size
    if g < 2 or g == n:
        raise InputError(
            f"a design effect needs at least 2 clusters and some cluster with 2 or more questions; "
            f"got {g} clusters for {n} questions."
        )
    means = np.bincount(codes, weights=x) / sizes
    between = float(sizes @ (means - x.mean()) ** 2) / (g - 1)
    within = float(((x - means[codes]) ** 2).sum()) / (n - g)
    m0 = (n - float(sizes @ sizes) / n) / (g - 1)
    icc = _anova_icc(between, within, m0)
    icc_upper = icc
    if within > 0:
        from scipy.special import fdtri  # lazy: only a clustered pilot needs the F quantile

        icc_upper = max(
            icc, _anova_icc(between / float(fdtri(g - 1, n - g, 1 - level)), within, m0)
        )
    elif between > 0:
        icc_upper = 1.0
    m = n / g
    cv2 = float(sizes.var()) / m**2
    deff = max(1.0, 1.0 + ((1.0 + cv2) * m - 1.0) * icc)
    return DesignEffect(deff, icc, m, g, icc_upper, level, cv2)


def _anova_icc(between: float, within: float, m0: float) -> float:
    den = between + (m0 - 1.0) * within
    return min(1.0, max(0.0, (between - within) / den)) if den > 0 else 0.0


def clustered_mde(
    n: float,
    variance: float,
    clusters: DesignEffect,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    alternative: str = "two-sided",
    upper: bool = False,
) -> float:
    """The MDE of ``n`` questions in the pilot's clusters: ``(t_{alpha/2} + t_beta) *
    sqrt(variance * DE(n) / n)`` with t(G - 1) quantiles and the design effect projected to
    ``n`` (``upper``: at the ICC's upper bound). ``variance``: of one question-level
    difference (``omega2 + sigma2_a / k_a + sigma2_b / k_b``)."""
    z = _z_sum(alpha, power, alternative, clusters.df)
    return z * math.sqrt(variance * clusters.at(n, upper=upper) / n)


def clustered_sample_size(
    mde: float,
    variance: float,
    clusters: DesignEffect,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    alternative: str = "two-sided",
    upper: bool = False,
) -> float:
    """Questions needed to detect ``mde`` in the pilot's clusters (the inverse of
    :func:`clustered_mde`); ``inf`` when no number of questions in these G clusters does,
    because the clusters' own variance ``variance * icc * (1 + cv²) / G`` alone exceeds
    ``(mde / z)^2``: only more clusters help then."""
    icc = clusters.icc_upper if upper else clusters.icc
    z = _z_sum(alpha, power, alternative, clusters.df)
    floor = variance * icc * (1.0 + clusters.size_cv2) / clusters.n_clusters
    room = (mde / z) ** 2 - floor
    if room <= 0:
        return math.inf
    n = variance * (1.0 - icc) / room
    if clusters.at(n, upper=upper) == 1.0:  # fewer than one question a cluster: no clustering
        n = variance * z**2 / mde**2
    return n


def clustered_floor(
    variance: float,
    clusters: DesignEffect,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    alternative: str = "two-sided",
    upper: bool = False,
) -> float:
    """The MDE that no number of questions in these G clusters gets below."""
    icc = clusters.icc_upper if upper else clusters.icc
    z = _z_sum(alpha, power, alternative, clusters.df)
    return z * math.sqrt(variance * icc * (1.0 + clusters.size_cv2) / clusters.n_clusters)


def clustered_power(
    omega2: float,
    clusters: DesignEffect,
    *,
    mde: float | None = None,
    n: float | None = None,
    effect: float | None = None,
    sigma2_a: float = 0.0,
    sigma2_b: float = 0.0,
    k_a: float = 1,
    k_b: float = 1,
    alpha: float = 0.05,
    power: float = 0.8,
    alternative: str = "two-sided",
) -> PowerResult:
    """The questions needed for ``mde``, the MDE of ``n`` questions, or (``n`` and
    ``effect``) the power, with the design effect of the pilot's ``clusters`` projected to
    that n and t(G - 1) quantiles; :attr:`PowerResult.clustering` gives the same answer at the
    ICC's upper bound."""
    var, alpha, power, alternative, _ = _power_iv(
        omega2, sigma2_a, sigma2_b, k_a, k_b, alpha, power, alternative, 1.0
    )
    kw = dict(alpha=alpha, power=power, alternative=alternative)
    if mde is not None:
        mde = check_positive(mde, "mde")
        n_point = clustered_sample_size(mde, var, clusters, **kw)
        if not math.isfinite(n_point):
            floor = clustered_floor(var, clusters, **kw)
            raise InputError(
                f"no number of questions in the pilot's {clusters.n_clusters} clusters detects "
                f"{mde:g} at power {power:g}: with ICC {clusters.icc:.3g} the clusters alone "
                f"leave an MDE of at least {floor:.3g}; sample more clusters."
            )
        upper = clustered_sample_size(mde, var, clusters, upper=True, **kw)
        solved, n, value = "n", n_point, mde
        at_upper = upper if math.isfinite(upper) else None
    else:
        n = check_positive(n, "n")
        if effect is None:
            solved, value = "mde", clustered_mde(n, var, clusters, **kw)
            at_upper = clustered_mde(n, var, clusters, upper=True, **kw)
        else:
            effect = abs(check_finite(effect, "effect"))
            solved, value = "power", effect
            power = _achieved(effect, var * clusters.at(n) / n, alpha, alternative, clusters.df)
            at_upper = _achieved(
                effect, var * clusters.at(n, upper=True) / n, alpha, alternative, clusters.df
            )
    deff = clusters.at(n)
    upper_n = at_upper if solved == "n" and at_upper is not None else n
    projection = ClusterProjection(clusters, clusters.at(upper_n, upper=True), at_upper)
    result = _result(
        n, value, power, omega2, sigma2_a, sigma2_b, k_a, k_b, alpha, alternative, deff, solved
    )
    return dataclasses.replace(result, df=float(clusters.df), clustering=projection)


def _achieved(effect: float, var_mean: float, alpha: float, alternative: str, df=None) -> float:
    shift = effect / math.sqrt(var_mean)
    if alternative == "two-sided":
        crit = quantile(1 - alpha / 2, df)
        return upper_tail(crit - shift, df) + upper_tail(crit + shift, df)
    return upper_tail(quantile(1 - alpha, df) - shift, df)


def sample_size(
    mde: float,
    omega2: float,
    *,
    sigma2_a: float = 0.0,
    sigma2_b: float = 0.0,
    k_a: float = 1,
    k_b: float = 1,
    alpha: float = 0.05,
    power: float = 0.8,
    alternative: str = "two-sided",
    design_effect: float = 1.0,
) -> PowerResult:
    """Eq 9: questions needed to detect a difference ``mde``.

    ``n = (z_{alpha/2} + z_beta)^2 * deff * (omega2 + sigma2_a/k_a + sigma2_b/k_b) / mde^2``
    (``z_alpha`` for a one-sided test); ``n`` is rounded up, ``n_exact`` is the formula's value.
    """
    mde = check_positive(mde, "mde")
    var, alpha, power, alternative, deff = _power_iv(
        omega2, sigma2_a, sigma2_b, k_a, k_b, alpha, power, alternative, design_effect
    )
    with np.errstate(over="ignore", divide="ignore"):  # a tiny mde squares to 0
        n = float(np.float64(_z_sum(alpha, power, alternative)) ** 2 * var / np.float64(mde) ** 2)
    if not np.isfinite(n) or n > 2**62:
        raise InputError(
            f"`mde` = {mde!r} is too small for these variances: the questions needed overflow a "
            "float."
        )
    return _result(
        n, mde, power, omega2, sigma2_a, sigma2_b, k_a, k_b, alpha, alternative, deff, "n"
    )


def minimum_detectable_effect(
    n: float,
    omega2: float,
    *,
    sigma2_a: float = 0.0,
    sigma2_b: float = 0.0,
    k_a: float = 1,
    k_b: float = 1,
    alpha: float = 0.05,
    power: float = 0.8,
    alternative: str = "two-sided",
    design_effect: float = 1.0,
) -> PowerResult:
    """Eq 10: the smallest difference ``n`` questions detect with the given power.

    ``mde = (z_{alpha/2} + z_beta) * sqrt(deff * (omega2 + sigma2_a/k_a + sigma2_b/k_b) / n)``.
    """
    n = check_positive(n, "n")
    var, alpha, power, alternative, deff = _power_iv(
        omega2, sigma2_a, sigma2_b, k_a, k_b, alpha, power, alternative, design_effect
    )
    mde = _z_sum(alpha, power, alternative) * math.sqrt(var / n)
    return _result(
        n, mde, power, omega2, sigma2_a, sigma2_b, k_a, k_b, alpha, alternative, deff, "mde"
    )


def power_at(
    effect: float,
    n: float,
    omega2: float,
    *,
    sigma2_a: float = 0.0,
    sigma2_b: float = 0.0,
    k_a: float = 1,
    k_b: float = 1,
    alpha: float = 0.05,
    alternative: str = "two-sided",
    design_effect: float = 1.0,
) -> PowerResult:
    """Probability that a z-test on ``n`` questions detects a true difference ``effect``.

    Two-sided power counts both tails, ``Phi(e/se - z) + Phi(-e/se - z)``, as statsmodels'
    ``NormalIndPower`` does; one-sided power tests in the direction of ``effect``.
    """
    effect = abs(check_finite(effect, "effect"))
    n = check_positive(n, "n")
    var, alpha, _, alternative, deff = _power_iv(
        omega2, sigma2_a, sigma2_b, k_a, k_b, alpha, 0.5, alternative, design_effect
    )
    achieved = _achieved(effect, var / n, alpha, alternative)
    return _result(
        n, effect, achieved, omega2, sigma2_a, sigma2_b, k_a, k_b, alpha, alternative, deff, "power"
    )


def _result(
    n, mde, power, omega2, sigma2_a, sigma2_b, k_a, k_b, alpha, alternative, deff, solved
) -> PowerResult:
    n_int = int(math.ceil(n - 1e-9 * max(1.0, n)))  # 969.0000000001 from rounding is 969
    return PowerResult(
        n_int,
        float(n),
        float(mde),
        float(power),
        float(omega2),
        float(sigma2_a),
        float(sigma2_b),
        float(k_a),
        float(k_b),
        alpha,
        alternative,
        deff,
        solved,
    )


def _power_iv(omega2, sigma2_a, sigma2_b, k_a, k_b, alpha, power, alternative, deff):
    omega2 = check_positive(omega2, "omega2", allow_zero=True)
    sigma2_a = check_positive(sigma2_a, "sigma2_a", allow_zero=True)
    sigma2_b = check_positive(sigma2_b, "sigma2_b", allow_zero=True)
    k_a = check_positive(k_a, "k_a")
    k_b = check_positive(k_b, "k_b")
    deff = check_positive(deff, "design_effect")
    if deff < 1:
        raise InputError(
            f"`design_effect` must be at least 1 (clustering never adds information); got {deff!r}."
        )
    var = omega2 + sigma2_a / k_a + sigma2_b / k_b
    if var <= 0:
        raise InputError(
            "`omega2`, `sigma2_a` and `sigma2_b` are all 0, so any difference is detectable with "
            "one "
            "question; give the variances from a pilot run (labcoat stats power "
            "--pilot-a/--pilot-b)."
        )
    alternative = check_choice(alternative, "alternative", ALTERNATIVES)
    return (
        var * deff,
        check_probability(alpha, "alpha"),
        check_probability(power, "power"),
        alternative,
        deff,
    )


def _z_sum(
    alpha: float, power: float, alternative: str = "two-sided", df: float | None = None
) -> float:
    """``z_{alpha/2} + z_beta`` (``z_alpha`` one-sided) at level ``alpha``, power ``1 - beta``
    (t quantiles with ``df``)."""
    tail = alpha / 2 if alternative == "two-sided" else alpha
    return quantile(1 - tail, df) + quantile(power, df)


def variance_components(
    a: Any, b: Any, *, ids_a: Any = None, ids_b: Any = None
) -> VarianceComponents:
    """Estimate ``omega2``, ``sigma2_A`` and ``sigma2_B`` from pilot scores on the same questions.

    ``a`` and ``b`` are ``(n, K)`` answers per question (or rows with ``ids``). ``sigma2`` is
    the mean within-question variance (ddof 1), which needs K >= 2; with one answer per
    question it is 0 and ``omega2`` absorbs the sampling noise (a conservative estimate for
    the same K). ``omega2`` is the variance of the question-level differences minus the
    sampling noise that K answers leave in them, floored at 0.
    """
    qa = question_scores(a, ids_a, name="a")
    qb = question_scores(b, ids_b, name="b")
    if (ids_a is None) != (ids_b is None):
        raise InputError("give both `ids_a` and `ids_b`, or neither.")
    order = np.arange(qb.n) if ids_a is None else match_ids(qa.ids, qb.ids)
    if ids_a is None and qa.n != qb.n:
        raise InputError(
            f"pilot scores must cover the same questions; got {qa.n} for A and {qb.n} for B."
        )
    if qa.n < 2:
        raise InputError(f"pilot scores need at least 2 questions; got {qa.n}.")
    sigma2_a = _mean_within(qa.within_var)
    sigma2_b = _mean_within(qb.within_var[order])
    d = qa.means - qb.means[order]
    total = float(d.var(ddof=1))
    omega2 = max(total - sigma2_a / qa.k - sigma2_b / qb.k, 0.0)
    return VarianceComponents(omega2, sigma2_a, sigma2_b, qa.k, qb.k, qa.n)


def _mean_within(within_var: np.ndarray) -> float:
    finite = within_var[np.isfinite(within_var)]
    return float(finite.mean()) if finite.size else 0.0
