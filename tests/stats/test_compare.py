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


def test_paired_test_is_the_paired_t_test():
    rng = np.random.default_rng(0)
    a, b = _correlated_models(rng)
    res = compare(a, b)
    ref = sps.ttest_rel(a, b)
    assert res.diff == pytest.approx(a.mean() - b.mean())
    assert res.statistic == pytest.approx(ref.statistic) and res.df == 399
    assert res.pvalue == pytest.approx(ref.pvalue, rel=1e-9)
    assert res.ci == pytest.approx(tuple(ref.confidence_interval()), rel=1e-9)
    assert res.se == pytest.approx(np.std(a - b, ddof=1) / np.sqrt(a.size))
    paper = compare(a, b, formula="miller")
    assert paper.pvalue == pytest.approx(2 * sps.norm.sf(abs(paper.statistic))) and paper.df is None
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
    ref = sps.ttest_ind(a, b, equal_var=False)
    assert res.statistic == pytest.approx(ref.statistic)
    assert res.df == pytest.approx(ref.df, rel=1e-12) and res.pvalue == pytest.approx(
        ref.pvalue, rel=1e-9
    )
    assert res.se == pytest.approx(np.hypot(sps.sem(a), sps.sem(b)))


def test_clustered_paired_se_is_equation_8_as_printed():
    """Eq 8: (1/n) sqrt(sum_c (sum_i d~_ic)^2), the i = j terms inside, no separate CLT term."""
    rng = np.random.default_rng(3)
    clusters = np.repeat(np.arange(30), 8)
    shared = rng.normal(size=30)[clusters]
    a = shared + rng.normal(size=240)
    b = rng.normal(size=240)
    e = (a - b) - (a - b).mean()
    expected = (
        np.sqrt(
            sum(
                sum(
                    e[i] * e[j]
                    for i in np.flatnonzero(clusters == c)
                    for j in np.flatnonzero(clusters == c)
                )
                for c in range(30)
            )
        )
        / 240
    )
    res = compare(a, b, cluster=clusters, formula="miller")
    assert res.se == pytest.approx(expected, rel=1e-12)
    assert res.n_clusters == 30 and res.df is None
    assert res.se > compare(a, b, formula="miller").se
    cr1 = compare(a, b, cluster=clusters)
    assert cr1.se == pytest.approx(np.sqrt(30 / 29) * expected, rel=1e-12) and cr1.df == 29


def test_matching_by_id_is_independent_of_row_order():
    rng = np.random.default_rng(4)
    a, b = _correlated_models(rng, n=100)
    ids = np.array([f"q{i}" for i in range(100)])
    perm = rng.permutation(100)
    by_id = compare(a, b[perm], ids_a=ids, ids_b=ids[perm])
    by_position = compare(a, b)
    for key in ("diff", "se", "statistic", "pvalue", "correlation"):
        assert getattr(by_id, key) == pytest.approx(getattr(by_position, key))


def test_partly_overlapping_ids_use_the_shared_questions_and_say_how_many_were_dropped():
    ids_a = np.array(["q1", "q2", "q3", "q4", "q6"])
    ids_b = np.array(["q6", "q1", "q2", "q5"])
    res = compare([1, 0, 1, 1, 0.5], [1, 1, 0, 0], ids_a=ids_a, ids_b=ids_b)
    assert res.n == 3 and (res.n_dropped_a, res.n_dropped_b) == (2, 1)
    assert res.diff == pytest.approx(np.mean([1 - 1, 0 - 0, 0.5 - 1]))
    assert any("2 question(s) only in A and 1 only in B" in w for w in res.notes)
    full = compare([1, 0, 0.5], [1, 0, 1], ids_a=["q1", "q2", "q6"], ids_b=["q6", "q1", "q2"])
    assert full.n_dropped_a == full.n_dropped_b == 0 and not any(
        "only in A" in w for w in full.notes
    )
    with pytest.raises(InputError, match=r"2 only in A \('q3', 'q4'\); 1 only in B \('q5'\)"):
        compare([1, 0, 1, 1, 0.5], [1, 1, 0, 0], ids_a=ids_a, ids_b=ids_b, strict=True)
    with pytest.raises(InputError, match="0 shared"):
        compare([1, 0], [1, 0], ids_a=["a", "b"], ids_b=["c", "d"])


def test_unequal_lengths_without_ids_are_refused_for_pairing():
    with pytest.raises(InputError, match="same questions"):
        compare([1, 0, 1], [1, 0])
    assert compare([1.0, 0, 1], [1.0, 0], paired=False).n == 5


def test_identical_models_are_not_different():
    x = np.random.default_rng(5).binomial(1, 0.5, size=50).astype(float)
    res = compare(x, x)
    assert res.se == 0 and res.pvalue == 1.0
    assert res.notes


def test_every_comparison_reports_its_mde_and_effect_size():
    rng = np.random.default_rng(6)
    a, b = _correlated_models(rng, n=500)
    res = compare(a, b)
    d = a - b
    assert res.effect_size == pytest.approx(d.mean() / d.std(ddof=1))
    # MDE at 80 % power: (t_{0.975} + t_{0.8}) * SE; a z-test at this effect has ~80 % power
    assert res.mde == pytest.approx(
        (sps.t.ppf(0.975, 499) + sps.t.ppf(0.8, 499)) * res.se, rel=1e-9
    )
    unpaired = compare(a, b, paired=False)
    pooled = np.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 2)
    assert unpaired.effect_size == pytest.approx(d.mean() / pooled) and unpaired.mde > res.mde


def test_an_undefined_correlation_is_json_null_not_the_string_nan():
    import json

    from labcoat._jsonable import jsonable

    rng = np.random.default_rng(5)
    constant = compare(np.ones(50), (rng.random(50) < 0.5).astype(float))  # A all correct
    assert constant.correlation is None
    assert json.loads(json.dumps(jsonable(constant.to_dict())))["correlation"] is None
    a, b = _correlated_models(rng, n=50)
    assert isinstance(
        json.loads(json.dumps(jsonable(compare(a, b).to_dict())))["correlation"], float
    )
