"""How many questions does an eval need? (Miller 2024, Eq 9-10)

For a paired comparison of two models the variance of a question-level difference splits into
``omega2`` (how much the models' true per-question accuracies differ across questions) and
the answer-sampling noise ``sigma2_A / K_A + sigma2_B / K_B`` (the mean within-question
variance over the K answers drawn per question). Resampling answers (K > 1) shrinks only the
second part, which is why it buys a smaller minimum detectable effect without new questions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as sps

from labcoat.errors import InputError
from labcoat.stats._questions import match_ids, question_scores
from labcoat.stats._validation import check_positive, check_probability


@dataclass(frozen=True)
class PowerResult:
    """Sample size ``n`` (not rounded) and minimum detectable effect ``mde`` that go together."""

    n: float
    mde: float
    omega2: float
    sigma2_a: float
    sigma2_b: float
    k_a: float
    k_b: float
    alpha: float
    power: float

    @property
    def variance(self) -> float:
        """Variance of one question-level difference: ``omega2 + sigma2_a/k_a + sigma2_b/k_b``."""
        return self.omega2 + self.sigma2_a / self.k_a + self.sigma2_b / self.k_b

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "mde": self.mde,
            "omega2": self.omega2,
            "sigma2_a": self.sigma2_a,
            "sigma2_b": self.sigma2_b,
            "k_a": self.k_a,
            "k_b": self.k_b,
            "alpha": self.alpha,
            "power": self.power,
        }


@dataclass(frozen=True)
class VarianceComponents:
    """``omega2`` and ``sigma2`` estimated from a pilot run of both models on the same questions."""

    omega2: float
    sigma2_a: float
    sigma2_b: float
    k_a: float
    k_b: float
    n: int


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
) -> PowerResult:
    """Eq 9: questions needed to detect a difference ``mde`` with a two-sided test.

    ``n = (z_{alpha/2} + z_beta)^2 (omega2 + sigma2_a/k_a + sigma2_b/k_b) / mde^2``.
    """
    mde = check_positive(mde, "mde")
    var, alpha, power = _power_iv(omega2, sigma2_a, sigma2_b, k_a, k_b, alpha, power)
    with np.errstate(over="ignore", divide="ignore"):  # a tiny mde squares to 0
        n = float(np.float64(_z_sum(alpha, power)) ** 2 * var / np.float64(mde) ** 2)
    if not np.isfinite(n):
        raise InputError(f"`mde` = {mde!r} is too small for these variances: the questions needed overflow a float.")
    return PowerResult(n, mde, float(omega2), float(sigma2_a), float(sigma2_b), float(k_a), float(k_b), alpha, power)


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
) -> PowerResult:
    """Eq 10: the smallest difference ``n`` questions detect with the given power.

    ``mde = (z_{alpha/2} + z_beta) * sqrt((omega2 + sigma2_a/k_a + sigma2_b/k_b) / n)``.
    """
    n = check_positive(n, "n")
    var, alpha, power = _power_iv(omega2, sigma2_a, sigma2_b, k_a, k_b, alpha, power)
    mde = _z_sum(alpha, power) * float(np.sqrt(var / n))
    return PowerResult(n, mde, float(omega2), float(sigma2_a), float(sigma2_b), float(k_a), float(k_b), alpha, power)


def _power_iv(omega2, sigma2_a, sigma2_b, k_a, k_b, alpha, power) -> tuple[float, float, float]:
    omega2 = check_positive(omega2, "omega2", allow_zero=True)
    sigma2_a = check_positive(sigma2_a, "sigma2_a", allow_zero=True)
    sigma2_b = check_positive(sigma2_b, "sigma2_b", allow_zero=True)
    k_a = check_positive(k_a, "k_a")
    k_b = check_positive(k_b, "k_b")
    var = omega2 + sigma2_a / k_a + sigma2_b / k_b
    if var <= 0:
        raise InputError(
            "`omega2`, `sigma2_a` and `sigma2_b` are all 0, so any difference is detectable with one "
            "question; give the variances from a pilot run (labcoat stats power --pilot-a/--pilot-b)."
        )
    return var, check_probability(alpha, "alpha"), check_probability(power, "power")


def _z_sum(alpha: float, power: float) -> float:
    """``z_{alpha/2} + z_beta`` for a two-sided test at level ``alpha`` with power ``1 - beta``."""
    return float(sps.norm.isf(alpha / 2) + sps.norm.ppf(power))


def variance_components(a: Any, b: Any, *, ids_a: Any = None, ids_b: Any = None) -> VarianceComponents:
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
        raise InputError(f"pilot scores must cover the same questions; got {qa.n} for A and {qb.n} for B.")
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
