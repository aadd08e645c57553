"""Backtests: the right law extrapolates within its intervals, a wrong one is caught."""

from __future__ import annotations

import numpy as np
import pytest

from labcoat import scale
from labcoat.errors import InputError

from .conftest import curve_runs, synthetic_runs


def test_the_right_law_extrapolates_inside_its_intervals():
    x, L = curve_runs(x=np.logspace(2, 5, 60), noise=0.01, seed=3)
    result = scale.backtest(x, None, L, form="curve", holdout="n", top=10, n_resamples=200)
    assert result.n_holdout == 10 and result.n_fit == 50
    assert result.mape < 2.0
    assert result.coverage >= 0.8
    assert [p["x"] for p in result.points] == sorted(x[-10:])


def test_a_law_that_bends_beyond_the_fitted_runs_misses_its_intervals():
    x = np.logspace(2, 5, 60)
    knee = 30000  # the loss falls faster beyond the fitted sizes
    law = np.where(x < knee, 2 + 50 * x**-0.5, 2 + 50 * knee**-0.5 * (x / knee) ** -2.0)
    L = law * np.exp(np.random.default_rng(3).normal(0, 0.01, x.size))
    result = scale.backtest(x, None, L, form="curve", holdout="n", top=10, n_resamples=200)
    assert result.coverage <= 0.3
    assert all(p["error"] > 0 for p in result.points)  # predicted higher than observed


def test_holdout_by_compute_and_by_mask_agree_on_the_same_runs():
    N, D, L = synthetic_runs(n=30)
    compute = 6 * N * D
    by_compute = scale.backtest(
        N, D, L, holdout="compute", top=5, n_resamples=0, interval="bootstrap"
    )
    mask = compute >= np.sort(compute)[-5]
    by_mask = scale.backtest(N, D, L, holdout=mask, n_resamples=0, interval="bootstrap")
    assert by_compute.n_holdout == by_mask.n_holdout == int(mask.sum())
    assert by_compute.mape == pytest.approx(by_mask.mape)
    assert np.isnan(by_mask.coverage)  # no bootstrap, no intervals
    assert by_mask.to_dict()["points"][0]["interval"] is None


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (
            {"holdout": "size", "top": 3},
            "`holdout` must be one of 'n', 'compute' or a boolean mask; got 'size'",
        ),
        ({"holdout": "n"}, "exactly one of top="),
        ({"holdout": "n", "top": 40}, "`top` must be an int between 1 and 39"),
        ({"holdout": "n", "above": 1e9}, "holds out 0 of 40 runs"),
        ({"holdout": np.ones(3, dtype=bool)}, "boolean mask of 40 runs"),
        ({"holdout": "compute", "top": 3}, "'compute' needs N and D"),
    ],
)
def test_bad_holdouts_are_one_line(kwargs, message):
    x, L = curve_runs()
    with pytest.raises(InputError, match=message):
        scale.backtest(x, None, L, form="curve", n_resamples=0, **kwargs)


def test_interval_score_charges_width_and_two_over_alpha_per_miss():
    from labcoat.scale.score import interval_score

    # inside: the width; a miss by 0.1 at 95 %: width + 2/0.05 × 0.1; per unit of the value
    scores = interval_score([0.9, 0.9], [1.1, 1.1], [1.0, 1.2], 0.95)
    assert scores == pytest.approx([0.2, (0.2 + 40 * 0.1) / 1.2])
    # a band that always covers by being wide scores worse than a tight one that covers
    wide, tight = interval_score(0.5, 2.0, 1.0, 0.95), interval_score(0.95, 1.05, 1.0, 0.95)
    assert tight < wide


def test_backtest_scores_every_held_out_run():
    x, L = curve_runs(x=np.logspace(2, 5, 40), noise=0.01, seed=3)
    result = scale.backtest(x, None, L, form="curve", holdout="n", top=6, n_resamples=0)
    from labcoat.scale.score import interval_score

    expected = [interval_score(*p["interval"], p["observed"], result.level) for p in result.points]
    assert [p["interval_score"] for p in result.points] == pytest.approx(expected)
    assert result.interval_score == pytest.approx(np.mean(expected))
    assert result.to_dict()["interval_score"] == pytest.approx(result.interval_score)
    assert all(np.isfinite(p["percent_error"]) for p in result.points)


def test_a_top_that_leaves_one_size_to_fit_names_top_and_its_most_not_the_variable():
    import numpy as np

    from labcoat import scale
    from labcoat.errors import InputError

    x = np.repeat(50 * 2.0 ** np.arange(8), 3)
    loss = 0.3 + 2.0 * x**-0.4 * np.exp(0.01 * np.sin(np.arange(x.size)))
    with pytest.raises(InputError) as err:
        scale.backtest(x, None, loss, form="m2", holdout="n", top=19, n_resamples=0)
    text = str(err.value)
    assert text.startswith("`top`: 19 holds out 21 of 24 runs (x >= 100, ties included)")
    assert "all at one size (50)" in text and text.endswith("hold out at most 18")
    # the most it names runs
    r = scale.backtest(x, None, loss, form="m2", holdout="n", top=18, n_resamples=0)
    assert r.n_holdout > 0
