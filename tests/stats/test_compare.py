"""Paired and unpaired model comparisons (Miller Eq 5-8)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from labcoat.errors import InputError
from labcoat.stats import compare


def _correlated_models(rng, n=400, gain=0.05):
    difficulty = rng.uniform(size=n)
    a = (rng.uniform(size=n) < np.clip(difficulty + gain, 0, 1)).astype(float)
    b = (rng.uniform(size=n) < difficulty).astype(float)
    return a, b


def test_paired_z_is_the_paired_t_statistic():
    rng = np.random.default_rng(0)
    a, b = _correlated_models(rng)
    res = compare(a, b)
    assert res.diff == pytest.approx(a.mean() - b.mean())
    assert res.z == pytest.approx(sps.ttest_rel(a, b).statistic)
    assert res.se == pytest.approx(np.std(a - b, ddof=1) / np.sqrt(a.size))
    assert res.p_value == pytest.approx(2 * sps.norm.sf(abs(res.z)))
    assert res.correlation == pytest.approx(sps.pearsonr(a, b).statistic)
    assert res.paired and res.n == 400


def test_pairing_shrinks_the_se_of_correlated_models():
    a, b = _correlated_models(np.random.default_rng(1))
    paired, unpaired = compare(a, b), compare(a, b, paired=False)
    assert paired.diff == pytest.approx(unpaired.diff)
    assert paired.se < 0.8 * unpaired.se
    assert unpaired.correlation is None and unpaired.n == 800


def test_unpaired_z_is_welchs_statistic():
    rng = np.random.default_rng(2)
    a, b = rng.normal(0.3, 1, size=150), rng.normal(0, 2, size=90)
    res = compare(a, b, paired=False)
    assert res.z == pytest.approx(sps.ttest_ind(a, b, equal_var=False).statistic)
    assert res.se == pytest.approx(np.hypot(sps.sem(a), sps.sem(b)))


def test_clustered_paired_se_is_equation_8():
    rng = np.random.default_rng(3)
    clusters = np.repeat(np.arange(30), 8)
    shared = rng.normal(size=30)[clusters]
    a = shared + rng.normal(size=240)
    b = rng.normal(size=240)
    d = a - b
    e = d - d.mean()
    cross = sum(e[clusters == c].sum() ** 2 - (e[clusters == c] ** 2).sum() for c in range(30))
    expected = np.sqrt(d.var(ddof=1) / 240 + cross / 240**2)
    res = compare(a, b, cluster=clusters)
    assert res.se == pytest.approx(expected)
    assert res.n_clusters == 30
    assert res.se > compare(a, b).se


def test_matching_by_id_is_independent_of_row_order():
    rng = np.random.default_rng(4)
    a, b = _correlated_models(rng, n=100)
    ids = np.array([f"q{i}" for i in range(100)])
    perm = rng.permutation(100)
    by_id = compare(a, b[perm], ids_a=ids, ids_b=ids[perm])
    by_position = compare(a, b)
    for key in ("diff", "se", "z", "p_value", "correlation"):
        assert getattr(by_id, key) == pytest.approx(getattr(by_position, key))


def test_missing_ids_name_how_many_and_which():
    ids_a = np.array(["q1", "q2", "q3", "q4"])
    ids_b = np.array(["q1", "q2", "q5"])
    with pytest.raises(InputError, match=r"2 only in A \('q3', 'q4'\); 1 only in B \('q5'\)"):
        compare([1, 0, 1, 1], [1, 1, 0], ids_a=ids_a, ids_b=ids_b)


def test_unequal_lengths_without_ids_are_refused_for_pairing():
    with pytest.raises(InputError, match="same questions"):
        compare([1, 0, 1], [1, 0])
    assert compare([1.0, 0, 1], [1.0, 0], paired=False).n == 5


def test_identical_models_are_not_different():
    x = np.random.default_rng(5).binomial(1, 0.5, size=50).astype(float)
    res = compare(x, x)
    assert res.se == 0 and res.p_value == 1.0
    assert res.warnings
