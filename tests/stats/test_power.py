"""Power analysis: Miller's worked numbers (Eq 9, Eq 10) and pilot estimates."""

from __future__ import annotations

import numpy as np
import pytest

from labcoat.errors import InputError
from labcoat.stats import (
    design_effect,
    estimate_design_effect,
    mean,
    minimum_detectable_effect,
    power_at,
    sample_size,
    variance_components,
)

smp = pytest.importorskip("statsmodels.stats.power")


def test_eq9_example_needs_969_questions():
    # omega^2 = 1/9, delta = 3 points, alpha = 0.05, power = 0.8
    res = sample_size(0.03, 1 / 9)
    assert res.n == 969 and isinstance(res.n, int)
    assert res.n_exact == pytest.approx(968.997, abs=1e-3)  # the formula's value, beside it
    assert sample_size(0.0301, 1 / 9).n == int(np.ceil(sample_size(0.0301, 1 / 9).n_exact))


def test_eq10_example_resampling_shrinks_the_mde():
    # n = 198 questions, omega^2 = 1/9, sigma^2 = 1/6 per model: K = 1 -> 13.3 %, K = 10 -> 7.6 %
    one = minimum_detectable_effect(198, 1 / 9, sigma2_a=1 / 6, sigma2_b=1 / 6, k_a=1, k_b=1)
    ten = minimum_detectable_effect(198, 1 / 9, sigma2_a=1 / 6, sigma2_b=1 / 6, k_a=10, k_b=10)
    assert round(one.mde, 3) == 0.133
    assert round(ten.mde, 3) == 0.076


def test_n_and_mde_invert_each_other():
    res = sample_size(0.05, 0.2, sigma2_a=0.1, sigma2_b=0.05, k_a=3, k_b=2, alpha=0.01, power=0.9)
    back = minimum_detectable_effect(
        res.n_exact, 0.2, sigma2_a=0.1, sigma2_b=0.05, k_a=3, k_b=2, alpha=0.01, power=0.9
    )
    assert back.mde == pytest.approx(0.05)
    assert (
        res.n > sample_size(0.05, 0.2, sigma2_a=0.1, sigma2_b=0.05, k_a=3, k_b=2).n
    )  # stricter -> more


def test_power_is_achieved_in_simulation():
    """A paired z-test at the Eq 9 sample size rejects about 80 % of the time."""
    rng = np.random.default_rng(0)
    omega2, delta = 0.25, 0.05
    n = sample_size(delta, omega2).n
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


def test_power_at_an_effect_matches_statsmodels():
    sd = np.sqrt(1 / 9)
    for alt, sm_alt in (("two-sided", "two-sided"), ("one-sided", "larger")):
        for n, effect in ((969, 0.03), (200, 0.05), (50, 0.01)):
            res = power_at(effect, n, 1 / 9, alternative=alt)
            ref = smp.NormalIndPower().power(effect / sd, n, 0.05, ratio=0, alternative=sm_alt)
            assert res.power == pytest.approx(ref, rel=1e-9), (alt, n, effect)


def test_one_sided_needs_fewer_questions_as_statsmodels_solves():
    one = sample_size(0.03, 1 / 9, alternative="one-sided")
    ref = smp.NormalIndPower().solve_power(
        0.03 / np.sqrt(1 / 9), alpha=0.05, power=0.8, ratio=0, alternative="larger"
    )
    assert one.n_exact == pytest.approx(ref, rel=1e-6)
    assert one.n < sample_size(0.03, 1 / 9).n


def test_design_effect_multiplies_the_questions_needed():
    deff = design_effect(0.1, 11)
    assert deff == pytest.approx(2.0)
    clustered = sample_size(0.03, 1 / 9, design_effect=deff)
    assert clustered.n_exact == pytest.approx(2 * sample_size(0.03, 1 / 9).n_exact)
    assert minimum_detectable_effect(969, 1 / 9, design_effect=deff).mde == pytest.approx(
        np.sqrt(2) * minimum_detectable_effect(969, 1 / 9).mde
    )


def _clustered(rng, n_clusters, size, icc):
    effect = rng.normal(0, np.sqrt(icc), size=(n_clusters, 1))
    return (effect + rng.normal(0, np.sqrt(1 - icc), size=(n_clusters, size))).reshape(-1)


def test_design_effect_from_a_pilot_recovers_the_icc_and_the_variance_ratio():
    rng = np.random.default_rng(3)
    clusters = np.repeat(np.arange(400), 10)
    x = _clustered(rng, 400, 10, 0.2)
    est = estimate_design_effect(x, clusters)
    assert (
        est.icc == pytest.approx(0.2, abs=0.06) and est.cluster_size == 10
    )  # SE of the estimate ~0.016 and est.n_clusters == 400
    assert est.design_effect == pytest.approx(1 + 9 * est.icc)
    ratio = (mean(x, clusters).se / mean(x).se) ** 2  # what clustering does to this very sample
    assert est.design_effect == pytest.approx(ratio, rel=0.1)
    independent = estimate_design_effect(rng.normal(size=4000), clusters)  # the healthy twin
    assert independent.icc < 0.03 and independent.design_effect < 1.3


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
        (lambda: sample_size(0.03, 0.1, design_effect=0.5), "at least 1"),
        (lambda: sample_size(0.03, 0.1, alternative="left"), "`alternative`"),
        (lambda: design_effect(1.5, 10), "`icc`"),
        (lambda: estimate_design_effect([1.0, 0.0, 1.0], [0, 1, 2]), "at least 2 clusters"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(InputError, match=match):
        call()
