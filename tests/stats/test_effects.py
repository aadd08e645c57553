"""The paired permutation test against scipy's, and what clusters do to it."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from labcoat.stats import paired_permutation_test


def _scipy(a, b, n_resamples):
    return sps.permutation_test(
        (a, b),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        n_resamples=n_resamples,
        vectorized=True,
        random_state=0,
    )


@pytest.mark.parametrize("shift", [0.0, 0.4, 1.0])
def test_exact_p_value_equals_scipys(shift):
    rng = np.random.default_rng(int(10 * shift))
    a = rng.normal(size=12)
    b = a - shift + rng.normal(size=12) * 0.5
    res = paired_permutation_test(a, b)
    assert res.exact and res.null_distribution.size == 2**12
    assert res.pvalue == pytest.approx(_scipy(a, b, 10**6).pvalue, rel=1e-12)


def test_sampled_p_value_agrees_with_scipys_within_monte_carlo_error():
    rng = np.random.default_rng(1)
    a = rng.binomial(1, 0.62, size=300).astype(float)
    b = rng.binomial(1, 0.55, size=300).astype(float)
    res = paired_permutation_test(a, b, n_resamples=20000, seed=3)
    ref = _scipy(a, b, 20000).pvalue
    assert not res.exact and abs(res.pvalue - ref) < 4 * np.sqrt(ref * (1 - ref) / 20000) + 1e-4


def test_clusters_flip_together():
    """A's edge is shared within 10 passages: flipping questions one by one calls it certain,
    flipping passages (what was sampled) does not."""
    rng = np.random.default_rng(2)
    cluster = np.repeat(np.arange(10), 30)
    edge = rng.normal(0.0, 0.3, size=10)[cluster] + 0.1
    b = rng.normal(size=300)
    a = b + edge + rng.normal(size=300) * 0.05
    by_question = paired_permutation_test(a, b, seed=0)
    by_cluster = paired_permutation_test(a, b, cluster, seed=0)
    assert by_cluster.exact and by_cluster.n_units == 10
    assert by_question.pvalue < 0.001 < 0.05 < by_cluster.pvalue
