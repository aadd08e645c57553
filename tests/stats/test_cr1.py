"""The default standard error against independent references: statsmodels' cluster-robust OLS
of the score on a constant, scipy's t distribution, and a coverage simulation at few clusters."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from labcoat.stats import compare, mean
from labcoat.stats._distributions import quantile, upper_tail

sm = pytest.importorskip("statsmodels.api")


def _ols_on_constant(y, groups=None):
    model = sm.OLS(y, np.ones_like(y))
    if groups is None:
        return model.fit(use_t=True)
    return model.fit(cov_type="cluster", cov_kwds={"groups": groups}, use_t=True)


@pytest.mark.parametrize("n_clusters", [5, 14, 91])
def test_clustered_mean_matches_statsmodels_cr1(n_clusters):
    rng = np.random.default_rng(n_clusters)
    groups = rng.integers(0, n_clusters, size=600)  # unequal cluster sizes
    y = (rng.uniform(size=600) < 0.4 + 0.3 * rng.uniform(size=n_clusters)[groups]).astype(float)
    fit = _ols_on_constant(y, groups)
    res = mean(y, cluster=groups)
    assert res.se == pytest.approx(fit.bse[0], rel=1e-9, abs=1e-12)
    assert res.df == n_clusters - 1
    assert res.ci == pytest.approx(tuple(fit.conf_int(alpha=0.05)[0]), rel=1e-9)
    assert res.confidence_interval(0.9) == pytest.approx(
        tuple(fit.conf_int(alpha=0.1)[0]), rel=1e-9
    )


def test_unclustered_mean_matches_statsmodels_ols():
    y = np.random.default_rng(0).normal(size=75)
    fit, res = _ols_on_constant(y), mean(y)
    assert res.se == pytest.approx(fit.bse[0], rel=1e-9) and res.df == 74
    assert res.ci == pytest.approx(tuple(fit.conf_int()[0]), rel=1e-9)


def test_clustered_paired_difference_matches_statsmodels():
    """14 clusters as in the MMLU-Pro check: SE, interval and p-value of A − B."""
    rng = np.random.default_rng(1)
    groups = np.repeat(np.arange(14), rng.integers(5, 60, size=14))
    n = groups.size
    skill = rng.normal(0, 0.8, size=14)[groups]
    a = (rng.normal(size=n) + skill > 0).astype(float)
    b = (rng.normal(size=n) + skill - 0.2 > 0).astype(float)
    fit = _ols_on_constant(a - b, groups)
    res = compare(a, b, cluster=groups)
    assert res.se == pytest.approx(fit.bse[0], rel=1e-9)
    assert res.statistic == pytest.approx(fit.tvalues[0], rel=1e-9)
    assert res.pvalue == pytest.approx(fit.pvalues[0], rel=1e-9)
    assert res.ci == pytest.approx(tuple(fit.conf_int()[0]), rel=1e-9)
    paper = compare(a, b, cluster=groups, formula="miller")
    assert paper.se < res.se and paper.pvalue < res.pvalue  # uncorrected: too sure


@pytest.mark.parametrize("df", [1, 2, 3, 4.5, 13, 49.9, 50.1, 399, 1999, 10**5, 10**6])
def test_pure_python_t_distribution_matches_scipy(df):
    for p in (1e-9, 1e-4, 0.025, 0.2, 0.5, 0.8, 0.975, 1 - 1e-6):
        assert quantile(p, df) == pytest.approx(sps.t.ppf(p, df), rel=1e-10, abs=1e-12), p
    for x in (-2.0, 0.0, 0.3, 1.96, 4.0, 12.0, 60.0):
        assert upper_tail(x, df) == pytest.approx(sps.t.sf(x, df), rel=1e-10, abs=1e-300), x
    assert quantile(0.975) == pytest.approx(sps.norm.ppf(0.975), rel=1e-12)


def _intervals(x, size, level=0.95):
    """Vectorised CR1 + t(G-1) and Miller Eq 4 + z intervals for rows of equal-size clusters."""
    reps, n = x.shape
    g = n // size
    e = x - x.mean(axis=1, keepdims=True)
    sums = e.reshape(reps, g, size).sum(axis=2)
    ss = (sums**2).sum(axis=1)
    cr1 = np.sqrt(g / (g - 1) * ss) / n
    eq4 = np.sqrt((e**2).sum(axis=1) / (n * (n - 1)) + (ss - (e**2).sum(axis=1)) / n**2)
    t, z = sps.t.ppf(0.5 + level / 2, g - 1), sps.norm.ppf(0.5 + level / 2)
    m = x.mean(axis=1)
    return (m - t * cr1, m + t * cr1), (m - z * eq4, m + z * eq4)


@pytest.mark.parametrize("n_clusters, naive_below", [(5, 0.90), (10, 0.93), (20, 0.94)])
def test_default_interval_holds_95_percent_at_few_clusters_where_the_z_interval_does_not(
    n_clusters, naive_below
):
    rng = np.random.default_rng(n_clusters)
    reps, size = 20000, 8
    x = (
        rng.normal(size=(reps, n_clusters, 1)) + rng.normal(size=(reps, n_clusters, size))
    ).reshape(reps, -1)
    (lo, hi), (zlo, zhi) = _intervals(x, size)
    clusters = np.repeat(np.arange(n_clusters), size)
    for row in range(20):  # the vectorised formulas are the library's, to the last digit
        assert tuple(mean(x[row], clusters).ci) == pytest.approx(
            (lo[row], hi[row]), rel=1e-10, abs=1e-12
        )
        paper = mean(x[row], clusters, formula="miller").ci
        assert tuple(paper) == pytest.approx((zlo[row], zhi[row]), rel=1e-10, abs=1e-12)
    default = np.mean((lo <= 0) & (0 <= hi))
    naive = np.mean((zlo <= 0) & (0 <= zhi))
    assert abs(default - 0.95) < 0.006, default  # 4 Monte Carlo SEs
    assert naive < naive_below, naive
