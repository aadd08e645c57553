"""Small-sample proportion intervals, McNemar and multiple-comparison corrections vs statsmodels."""

from __future__ import annotations

import numpy as np
import pytest

from labcoat.errors import InputError
from labcoat.stats import adjust_pvalues, mcnemar, proportion, proportion_from_scores

statsmodels = pytest.importorskip("statsmodels")
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

CASES = [(0, 10), (1, 10), (5, 10), (10, 10), (3, 47), (0, 200), (199, 200), (612, 1000)]
SM_NAME = {
    "wilson": "wilson",
    "clopper-pearson": "beta",
    "jeffreys": "jeffreys",
    "normal": "normal",
}


@pytest.mark.parametrize("method", list(SM_NAME))
@pytest.mark.parametrize("k, n", CASES)
def test_intervals_agree_with_statsmodels(k, n, method):
    for level in (0.9, 0.95):
        ours = proportion(k, n).confidence_interval(level, method)
        theirs = list(proportion_confint(k, n, alpha=1 - level, method=SM_NAME[method]))
        if (
            method == "jeffreys"
        ):  # Brown, Cai & DasGupta (2001): the bound at an all-0/all-1 edge is the edge
            theirs = [0.0 if k == 0 else theirs[0], 1.0 if k == n else theirs[1]]
        assert ours == pytest.approx(theirs, abs=1e-9)


def test_small_sample_intervals_are_wider_than_clt_at_the_edges():
    res = proportion(10, 10)
    assert res.confidence_interval(method="normal").width == 0  # the CLT collapse
    for method in ("wilson", "clopper-pearson", "jeffreys"):
        assert res.confidence_interval(method=method).width > 0.1


def test_from_scores_counts_successes():
    res = proportion_from_scores([1, 0, 1, 1])
    assert (res.successes, res.n, res.proportion) == (3, 4, 0.75)
    with pytest.raises(InputError, match="0/1 scores"):
        proportion_from_scores([1, 0.5])


@pytest.mark.parametrize(
    "only_a, only_b, both", [(3, 9, 40), (14, 30, 100), (0, 4, 10), (60, 41, 500), (0, 0, 12)]
)
@pytest.mark.parametrize("exact", [True, False])
def test_mcnemar_agrees_with_statsmodels(only_a, only_b, both, exact):
    a = np.r_[np.ones(only_a), np.zeros(only_b), np.ones(both), np.zeros(7)]
    b = np.r_[np.zeros(only_a), np.ones(only_b), np.ones(both), np.zeros(7)]
    ours = mcnemar(a, b, exact=exact)
    assert (ours.only_a, ours.only_b) == (only_a, only_b)
    if only_a + only_b:
        theirs = sm_mcnemar([[both, only_a], [only_b, 7]], exact=exact, correction=True)
        assert ours.statistic == pytest.approx(theirs.statistic)
        assert ours.pvalue == pytest.approx(theirs.pvalue)
    else:
        assert ours.pvalue == 1.0


def test_mcnemar_goes_exact_for_few_discordant_pairs():
    a = np.r_[np.ones(8), np.zeros(2), np.ones(30)]
    b = np.r_[np.zeros(8), np.ones(2), np.ones(30)]
    assert mcnemar(a, b).exact
    many = np.r_[np.ones(40), np.zeros(10)], np.r_[np.zeros(40), np.ones(10)]
    assert not mcnemar(*many).exact


@pytest.mark.parametrize("ours, theirs", [("holm", "holm"), ("bh", "fdr_bh")])
def test_multiple_comparisons_agree_with_statsmodels(ours, theirs):
    rng = np.random.default_rng(0)
    p = np.r_[rng.uniform(size=15), rng.uniform(0, 0.01, size=5)]
    res = adjust_pvalues(p, method=ours, alpha=0.05)
    reject, adjusted, *_ = multipletests(p, alpha=0.05, method=theirs)
    np.testing.assert_allclose(res.adjusted, adjusted)
    np.testing.assert_array_equal(res.reject, reject)


def test_holm_is_not_holm_sidak():
    p = np.array([0.01, 0.02, 0.03, 0.2])
    holm = adjust_pvalues(p, "holm").adjusted
    sidak = multipletests(p, method="holm-sidak")[1]
    assert not np.allclose(holm, sidak)
    np.testing.assert_allclose(holm, [0.04, 0.06, 0.06, 0.2])


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: proportion(11, 10), "cannot exceed"),
        (lambda: proportion(1, 0), "`n`"),
        (lambda: proportion(1, 10, method="wald"), "`method`"),
        (lambda: mcnemar([1, 0], [1, 0, 1]), "one entry per item"),
        (lambda: adjust_pvalues([0.1, 1.2]), r"\[0, 1\]"),
        (lambda: adjust_pvalues([0.1], method="sidak"), "`method`"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(InputError, match=match):
        call()
