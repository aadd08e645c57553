"""Power analysis: Miller's worked numbers (Eq 9, Eq 10) and pilot estimates."""

from __future__ import annotations

import numpy as np
import pytest

from labcoat.errors import InputError
from labcoat.stats import minimum_detectable_effect, sample_size, variance_components


def test_eq9_example_needs_969_questions():
    # omega^2 = 1/9, delta = 3 points, alpha = 0.05, power = 0.8
    assert sample_size(0.03, 1 / 9).n == pytest.approx(969, abs=0.5)


def test_eq10_example_resampling_shrinks_the_mde():
    # n = 198 questions, omega^2 = 1/9, sigma^2 = 1/6 per model: K = 1 -> 13.3 %, K = 10 -> 7.6 %
    one = minimum_detectable_effect(198, 1 / 9, sigma2_a=1 / 6, sigma2_b=1 / 6, k_a=1, k_b=1)
    ten = minimum_detectable_effect(198, 1 / 9, sigma2_a=1 / 6, sigma2_b=1 / 6, k_a=10, k_b=10)
    assert round(one.mde, 3) == 0.133
    assert round(ten.mde, 3) == 0.076


def test_n_and_mde_invert_each_other():
    res = sample_size(0.05, 0.2, sigma2_a=0.1, sigma2_b=0.05, k_a=3, k_b=2, alpha=0.01, power=0.9)
    back = minimum_detectable_effect(res.n, 0.2, sigma2_a=0.1, sigma2_b=0.05, k_a=3, k_b=2, alpha=0.01, power=0.9)
    assert back.mde == pytest.approx(0.05)
    assert res.n > sample_size(0.05, 0.2, sigma2_a=0.1, sigma2_b=0.05, k_a=3, k_b=2).n  # stricter -> more


def test_power_is_achieved_in_simulation():
    """A paired z-test at the Eq 9 sample size rejects about 80 % of the time."""
    rng = np.random.default_rng(0)
    omega2, delta = 0.25, 0.05
    n = int(np.ceil(sample_size(delta, omega2).n))
    d = rng.normal(delta, np.sqrt(omega2), size=(4000, n))
    z = d.mean(axis=1) / (d.std(axis=1, ddof=1) / np.sqrt(n))
    assert abs(np.mean(np.abs(z) > 1.959964) - 0.8) < 0.03


def test_variance_components_from_pilot_answers():
    rng = np.random.default_rng(1)
    n, k = 20000, 6
    pa = rng.uniform(0.2, 0.9, size=n)
    pb = np.clip(pa + rng.normal(0, 0.25, size=n), 0, 1)
    a = (rng.uniform(size=(n, k)) < pa[:, None]).astype(float)
    b = (rng.uniform(size=(n, k)) < pb[:, None]).astype(float)
    est = variance_components(a, b)
    assert est.sigma2_a == pytest.approx(np.mean(pa * (1 - pa)), rel=0.05)
    assert est.sigma2_b == pytest.approx(np.mean(pb * (1 - pb)), rel=0.05)
    assert est.omega2 == pytest.approx(np.var(pa - pb), rel=0.1)
    assert est.k_a == k and est.n == n


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: sample_size(0, 0.1), "`mde`"),
        (lambda: sample_size(0.03, -1), "`omega2`"),
        (lambda: sample_size(0.03, 0.0), "all 0"),
        (lambda: sample_size(1e-300, 0.1), "too small for these variances"),
        (lambda: minimum_detectable_effect(100, 0.1, k_a=0), "`k_a`"),
        (lambda: minimum_detectable_effect(100, 0.1, power=1.2), "`power`"),
        (lambda: variance_components(np.ones((3, 2)), np.ones((4, 2))), "same questions"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(InputError, match=match):
        call()
