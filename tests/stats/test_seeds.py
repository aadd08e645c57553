"""rliable aggregates: IQM, optimality gap, stratified bootstrap, probability of improvement."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from labcoat.errors import InputError
from labcoat.stats import aggregate, iqm, optimality_gap, probability_of_improvement
from labcoat.stats.seeds import stratified_resamples


def test_iqm_is_the_mean_of_the_middle_half():
    x = np.arange(1.0, 9.0).reshape(2, 4)  # 1..8 -> middle half 3, 4, 5, 6
    assert iqm(x) == pytest.approx(4.5)
    with_outlier = np.r_[np.ones(7), 1e6]
    assert iqm(with_outlier) == pytest.approx(1.0)  # the mean would be 125,000


def test_optimality_gap_counts_only_the_shortfall():
    x = np.array([[0.5, 1.5], [1.0, 0.8]])
    assert optimality_gap(x) == pytest.approx((0.5 + 0 + 0 + 0.2) / 4)
    assert optimality_gap(x, gamma=2.0) == pytest.approx(2 - x.mean())


def test_stratified_resamples_keep_each_tasks_runs_in_that_task():
    x = np.array([[1.0, 10.0, 100.0], [2.0, 20.0, 200.0], [3.0, 30.0, 300.0]])
    for chunk in stratified_resamples(x, 50, np.random.default_rng(0)):
        for t, allowed in enumerate(x.T):
            assert np.isin(chunk[:, :, t], allowed).all()


def test_aggregate_intervals_contain_estimates_and_shrink_with_runs():
    rng = np.random.default_rng(1)
    few = aggregate(rng.normal(0.5, 0.2, size=(3, 10)), seed=0)
    many = aggregate(rng.normal(0.5, 0.2, size=(30, 10)), seed=0)
    for name in ("iqm", "mean", "median", "optimality_gap"):
        lo, hi = few[name].ci
        assert lo <= few[name].statistic <= hi
        assert many[name].ci.width < few[name].ci.width
    assert few.to_dict()["n_runs"] == 3


def test_probability_of_improvement_is_mann_whitney_per_task():
    rng = np.random.default_rng(2)
    x, y = rng.normal(1.0, 1, size=(5, 4)), rng.normal(0.0, 1, size=(6, 4))
    res = probability_of_improvement(x, y, n_resamples=500, seed=0)
    expected = np.mean([sps.mannwhitneyu(x[:, t], y[:, t]).statistic / 30 for t in range(4)])
    assert res.statistic == pytest.approx(expected)
    lo, hi = res.ci
    assert 0 <= lo <= res.statistic <= hi <= 1
    tied = probability_of_improvement(x, x, n_resamples=200, seed=0)
    assert tied.statistic == pytest.approx(0.5)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: iqm(np.ones((1, 3))), "at least 2 runs"),
        (lambda: aggregate(np.ones((3, 2)), metrics=("best",)), "`metrics`"),
        (lambda: probability_of_improvement(np.ones((3, 2)), np.ones((3, 3))), "same tasks"),
        (lambda: iqm([[1.0, np.nan], [1.0, 2.0]]), "non-finite"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(InputError, match=match):
        call()
