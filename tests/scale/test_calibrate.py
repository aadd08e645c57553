"""Calibrated extrapolation intervals: they hold where the bootstrap's do not, stay narrow on a
clean law, widen with distance, warn past what they saw, and fall back on the prior."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from labcoat import scale
from labcoat.errors import InputError
from labcoat.scale.calibrate import ExtrapolationWarning

from .conftest import curve_runs


def broken_curve(seed=3, knee=10**3.5, n=60):
    """A power law whose exponent flattens from 0.3 to 0.1 inside the runs' range."""
    x = np.logspace(2, 5, n)
    law = np.where(x < knee, 50 * x**-0.3, 50 * knee**-0.3 * (x / knee) ** -0.1)
    return x, law * np.exp(np.random.default_rng(seed).normal(0, 0.005, n))


@pytest.mark.slow
def test_a_break_m1_cannot_extrapolate_is_covered_by_the_calibrated_interval_only():
    x, L = broken_curve()
    options = dict(form="m1", holdout="n", top=10, n_resamples=100, seed=0)
    calibrated = scale.backtest(x, None, L, interval="calibrated", **options)
    boot = scale.backtest(x, None, L, interval="bootstrap", **options)
    assert boot.coverage <= 0.2  # the bootstrap measures scatter, not extrapolation error
    assert calibrated.coverage >= 0.9
    assert calibrated.calibration["method"].startswith("backtest")
    assert calibrated.to_dict()["interval"] == "calibrated"


def test_a_clean_power_law_gets_a_narrow_calibrated_interval_that_covers():
    x, L = curve_runs(x=np.logspace(2, 5, 60), noise=0.01, seed=3)
    result = scale.backtest(x, None, L, form="m2", holdout="n", top=10, n_resamples=0)
    assert result.coverage >= 0.9
    assert result.median_width < 0.12  # ±6 % at most, for 1 % noise over half a decade
    assert result.rmse < 0.02


@pytest.mark.filterwarnings("ignore::labcoat.scale.calibrate.ExtrapolationWarning")
def test_the_interval_widens_with_distance_and_reports_its_method_and_coverage():
    x, L = curve_runs(x=np.logspace(2, 5, 40), noise=0.01, seed=1)
    fit = scale.fit(x, None, L, form="m2", n_resamples=0, ledger=False)
    pred = fit.predict([1e5, 1e6, 1e7])
    width = np.log(pred.interval[1] / pred.interval[0])
    assert width[0] < width[1] < width[2]
    assert pred.method == "calibrated" and pred.calibration["coverage"] > 0.8
    assert pred.distance[0] == 0.0 and pred.distance[2] == pytest.approx(np.log(100))
    row = pred.to_dict()["predictions"][1]
    assert row["distance"] == pytest.approx(np.log(10)) and len(row["interval"]) == 2


def test_predict_warns_beyond_the_distances_the_calibration_saw():
    x, L = curve_runs(x=np.logspace(2, 5, 40), noise=0.01, seed=1)
    fit = scale.fit(x, None, L, form="m2", n_resamples=0, ledger=False)
    seen = fit.calibration().max_distance
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExtrapolationWarning)
        fit.predict(1e5 * np.exp(seen * 0.9))  # inside: no warning
    with pytest.warns(ExtrapolationWarning, match="calibration saw at most"):
        fit.predict(1e5 * np.exp(seen * 1.5))


@pytest.mark.filterwarnings("ignore::labcoat.scale.calibrate.ExtrapolationWarning")
def test_too_few_runs_fall_back_on_the_shipped_prior():
    x, L = curve_runs(x=np.logspace(2, 4, 6), noise=0.01, seed=2)
    fit = scale.fit(x, None, L, form="m1", n_resamples=0, ledger=False)
    pred = fit.predict(1e5)
    assert pred.calibration["method"] == "prior"
    lo, hi = fit.calibration().band([0.0, 2.0])
    assert hi[1] > hi[0] and lo[1] < lo[0]  # the prior's slope widens it


def test_the_bootstrap_interval_stays_available_by_name_and_bad_names_are_one_line():
    x, L = curve_runs(x=np.logspace(2, 5, 40), noise=0.01, seed=1)
    fit = scale.fit(x, None, L, form="m2", n_resamples=50, ledger=False)
    boot = fit.predict(1e6, interval="bootstrap")
    assert boot.method == "bootstrap" and boot.calibration is None
    with pytest.raises(InputError, match="`interval` must be 'calibrated' or 'bootstrap'"):
        fit.predict(1e6, interval="conformal")


@pytest.mark.slow
def test_several_curves_in_one_call_one_result_per_group():
    x1, L1 = curve_runs(x=np.logspace(2, 5, 30), noise=0.01, seed=1)
    x2, L2 = broken_curve(n=30)
    groups = np.array(["clean"] * 30 + ["broken"] * 30 + ["tiny"] * 3)
    x = np.concatenate([x1, x2, [1e2, 1e3, 1e4]])
    L = np.concatenate([L1, L2, [3.0, 2.5, 2.2]])
    result = scale.backtest(x, None, L, form="m2", top=5, n_resamples=0, by=groups)
    assert list(result.results) == ["clean", "broken"]
    assert "tiny" in result.failures  # too few runs: said, not raised
    assert result.results["clean"].n_holdout == 5
    data = result.to_dict()
    assert data["groups"] == 2 and 0 <= data["coverage"] <= 1 and data["median_width"] > 0
    assert result.ok


def test_scale_confidence_interval_is_the_shared_one_with_a_deprecation():
    from labcoat.interval import ConfidenceInterval

    with pytest.warns(DeprecationWarning, match="labcoat.interval.ConfidenceInterval"):
        from labcoat.scale import ConfidenceInterval as old
    assert old is ConfidenceInterval


def _pairs(rmse, n_origins=8):
    """Backtest pairs whose every error is ``rmse``: late RMSE exactly ``rmse``."""
    from labcoat.scale.calibrate import Pairs

    origins = np.repeat(np.arange(n_origins), 5)
    return Pairs(
        np.full(origins.size, 0.5), np.full(origins.size, rmse), origins, n_origins, np.zeros(5)
    )


def test_forms_within_the_backtests_noise_of_the_chosen_one_are_indistinguishable():
    from scipy import stats

    from labcoat.scale.calibrate import plausible_forms

    found = {"m1": _pairs(0.01), "m2": _pairs(0.02), "m3": _pairs(0.04)}
    close, ratio = plausible_forms(found, "m1", 0.95)
    assert ratio == pytest.approx(np.sqrt(stats.f.ppf(0.95, 4, 4)))  # 4 late origins: ×2.53
    assert close == ["m2"]  # planted: twice the error is within the noise of 4 origins
    assert "m3" not in close  # healthy: four times the error is worse by the evidence
    assert plausible_forms({"m1": _pairs(0.01, n_origins=0)}, "m1", 0.95)[0] == []


def test_the_band_moves_onto_each_indistinguishable_forms_prediction_before_the_floor(
    monkeypatch,
):
    from labcoat.scale import calibrate
    from labcoat.scale.calibrate import Calibration, widen_for_choice

    monkeypatch.setattr(calibrate, "CHOICE_BAND", "union")

    lo, hi = np.array([-0.02, -0.03]), np.array([0.02, 0.03])
    same = widen_for_choice(lo, hi, [])  # healthy: nothing to add
    assert np.array_equal(same[0], lo) and np.array_equal(same[1], hi)
    wide = widen_for_choice(lo, hi, [np.array([0.1, -0.2]), np.array([np.nan, 0.0])])
    assert wide[0] == pytest.approx([-0.02, -0.23]) and wide[1] == pytest.approx([0.12, 0.03])
    calibration = Calibration(0.95, "backtest", (0.02, 0.01), (-0.02, 0.01), None, 1.0, 4, 40)
    calibration.floor = (0.05, 0.0)
    lo, hi = calibration.band([0.0], [np.array([0.01])])
    assert (lo[0], hi[0]) == pytest.approx((-0.05, 0.05))  # the floor still bounds it below
    lo, hi = calibration.band([0.0], [np.array([0.1])])
    assert hi[0] == pytest.approx(0.12)


def test_forms_the_backtest_cannot_tell_apart_widen_by_their_weighted_spread(monkeypatch):
    from scipy import stats

    from labcoat.scale import calibrate
    from labcoat.scale.calibrate import choice_weights, widen_for_choice

    monkeypatch.setattr(calibrate, "CHOICE_BAND", "spread")
    lo, hi = np.array([-0.02, -0.03]), np.array([0.02, 0.03])
    # shifts: each form's log prediction minus the centre's, the chosen form's first
    agree = widen_for_choice(lo, hi, [np.zeros(2)] * 2, [0.5, 0.5])  # forms that agree: no wider
    assert agree[1] == pytest.approx(hi) and agree[0] == pytest.approx(lo)
    z = stats.norm.ppf(0.975)
    wide = widen_for_choice(lo, hi, [np.zeros(2), np.array([0.1, -0.2])], [0.5, 0.5])
    assert wide[1] == pytest.approx(np.sqrt(hi**2 + z**2 * 0.5 * np.array([0.1, -0.2]) ** 2))
    # a form with little evidence moves the band little, far less than the union (0.12, 0.23)
    weak = widen_for_choice(lo, hi, [np.zeros(2), np.array([0.1, -0.2])], [0.95, 0.05])
    assert weak[1][0] < 0.06 and weak[1][1] < 0.1 and np.all(weak[1] > hi)
    # evidence: RMSE^-k over k late origins; twice the error on 4 late origins weighs 1/16
    weights = choice_weights({"m1": _pairs(0.01), "m2": _pairs(0.02)}, "m1", ["m2"])
    assert list(weights.values()) == pytest.approx([16 / 17, 1 / 17])


def test_forms_that_agree_give_the_winners_band_and_disagreeing_ones_a_stacked_point():
    from labcoat.scale.calibrate import Calibration, combine

    calibration = Calibration(0.95, "backtest", (0.02, 0.01), (-0.02, 0.01), None, 1.0, 4, 40)
    d = np.array([0.0, 1.0])
    own_lo, own_hi = calibration.band(d)
    chosen = np.log([0.5, 0.4])
    # healthy: the forms agree, so the point is the winner's and so is its calibrated band
    point, lo, hi = combine(
        {"m2": chosen, "m4": chosen.copy()}, {"m2": 0.6, "m4": 0.4}, calibration, d
    )
    assert point == pytest.approx(chosen)
    assert lo - point == pytest.approx(own_lo) and hi - point == pytest.approx(own_hi)
    # planted: a second form 10 % lower: the point is the evidence-weighted mean of the logs,
    # the band centred on it and wider by the weighted spread, not stretched to hold both
    other = chosen + np.log(0.9)
    point, lo, hi = combine({"m2": chosen, "m4": other}, {"m2": 0.75, "m4": 0.25}, calibration, d)
    assert point == pytest.approx(0.75 * chosen + 0.25 * other)
    assert np.all(hi - point > own_hi) and np.all(lo - point < own_lo)
    assert np.all(lo > other + own_lo)  # narrower than the union of the two bands
    # a form without a prediction at a point weighs nothing there
    point, _, _ = combine(
        {"m2": chosen, "m4": np.array([np.nan, other[1]])}, {"m2": 0.5, "m4": 0.5}, calibration, d
    )
    assert point[0] == pytest.approx(chosen[0]) and point[1] == pytest.approx(
        np.mean([chosen[1], other[1]])
    )
    alone, lo, hi = combine({"m2": chosen}, None, calibration, d)  # a named form: its own
    assert alone == pytest.approx(chosen) and hi - alone == pytest.approx(own_hi)


def test_thin_evidence_averages_the_supported_forms_by_the_origins_they_have():
    from labcoat.scale.calibrate import Pairs, thin_weights

    def pairs(rmse, n_origins, sizes=7):
        origins = np.repeat(np.arange(n_origins), 2)
        errors = np.full(origins.size, rmse)
        return Pairs(np.full(origins.size, 0.5), errors, origins, n_origins, np.zeros(sizes))

    # planted: m1 and m2 have two origins each (m2 twice as wrong), m4 none, and broken has 5
    # parameters on 6 sizes: more than the sizes support (AICc needs n − k − 1 ≥ 1)
    found = {
        "m1": pairs(0.01, 2),
        "m2": pairs(0.02, 2),
        "m4": pairs(0.0, 0),
        "broken": pairs(0.0, 0, 6),
    }
    w = thin_weights(found)
    assert w["m1"] == pytest.approx(2 / 3) and w["m2"] == pytest.approx(1 / 3)  # (1/2)^1
    assert w["m4"] == 0 and w["broken"] == 0
    # healthy: no form has an origin: every supported form alike, the unsupported one out
    none = {"m1": pairs(0.0, 0), "m2": pairs(0.0, 0), "broken": pairs(0.0, 0, 6)}
    assert thin_weights(none) == pytest.approx({"m1": 0.5, "m2": 0.5, "broken": 0.0})


def test_the_prior_bands_intercept_comes_from_the_frontier_not_the_worst_size():
    from labcoat.scale.calibrate import Pairs, frontier_reach, prior_calibration

    # planted: the smallest sizes fit poorly (12 % off), the largest four within 0.5 %
    residuals = np.array([-0.12, 0.08, -0.03, 0.004, -0.005, 0.003, -0.002])
    pairs = Pairs(np.empty(0), np.empty(0), np.empty(0, int), 0, residuals)
    assert frontier_reach(pairs, 0.95) < 0.006
    band = prior_calibration(pairs, 0.95, "m2")
    assert band.upper[0] == pytest.approx(-band.lower[0]) and band.upper[0] < 0.006
    # healthy: a poor fit at the frontier sets a wide intercept
    worse = Pairs(np.empty(0), np.empty(0), np.empty(0, int), 0, residuals[::-1].copy())
    assert frontier_reach(worse, 0.95) > 0.05


def test_the_frontier_factor_comes_from_the_table_and_multiplies_the_band(monkeypatch):
    from labcoat.scale import calibrate as cal

    shipped = cal.load_prior()
    table = {**shipped, "frontier": {"levels": [0.8, 0.95], "factors": [1.5, 2.5]}}
    monkeypatch.setattr(cal, "load_prior", lambda: table)
    assert cal.frontier_factor(0.95) == pytest.approx(2.5)  # planted: the table's factor
    assert cal.frontier_factor(0.875) == pytest.approx(2.0)  # linear between levels
    assert cal.frontier_factor(0.5) == 1.0  # below the table: not widened
    band = cal.Calibration(0.95, "backtest", (0.02, 0.01), (-0.02, 0.01), None, 1.0, 4, 40)
    plain = band.band([1.0])
    band.factor = 2.5
    wide = band.band([1.0])
    assert wide[1][0] == pytest.approx(2.5 * plain[1][0]) and wide[0][0] == pytest.approx(-0.075)
    assert band.to_dict()["frontier_factor"] == 2.5
    monkeypatch.setattr(
        cal, "load_prior", lambda: {k: v for k, v in shipped.items() if k != "frontier"}
    )
    assert cal.frontier_factor(0.95) == 1.0  # healthy twin: no table, the band as measured


def test_the_shipped_frontier_factor_widens_downstream_bands_at_95():
    from labcoat.scale.calibrate import frontier_factor, load_prior

    table = load_prior()["frontier"]
    assert table["levels"] == sorted(table["levels"]) and table["splits"] > 50
    assert 1.0 < frontier_factor(0.95) < 5.0
    assert frontier_factor(0.9) <= frontier_factor(0.95) <= frontier_factor(0.99)


def grid_runs(sizes=(1e7, 8e7, 1.5e8, 4e8), per_size=8, noise=0.01, seed=0):
    """An over-training grid: each model size trained at ``per_size`` data sizes (5–640 tokens
    per parameter), the law of conftest's ``chinchilla_law`` with log-normal noise."""
    from .conftest import chinchilla_law

    N = np.repeat(np.asarray(sizes, float), per_size)
    D = N * np.tile(5.0 * 2.0 ** np.arange(per_size), len(sizes))
    rng = np.random.default_rng(seed)
    return N, D, chinchilla_law(N, D) * np.exp(rng.normal(0, noise, N.size))


def _origins(N, D, L, monkeypatch, levels):
    from labcoat.scale import calibrate as cal
    from labcoat.scale.forms import CHINCHILLA
    from labcoat.scale.search import grid_search

    monkeypatch.setattr(cal, "TWO_VARIABLE_MIN_LEVELS", levels)
    x = np.vstack([N, D])
    theta = grid_search(CHINCHILLA, x, L, 1e-3).theta
    return cal.rolling_pairs(CHINCHILLA, x, L, 1e-3, theta)


@pytest.mark.slow
def test_a_two_variable_origin_needs_three_model_sizes_not_one_size_at_many_data_sizes(
    monkeypatch,
):
    from labcoat.scale.calibrate import _spans

    # planted: the first origins by size hold one or two model sizes (8 runs each): enough
    # points for five parameters, not for the law's N term; they are skipped
    N, D, L = grid_runs()
    loose = _origins(N, D, L, monkeypatch, 1)
    strict = _origins(N, D, L, monkeypatch, 3)
    assert strict.variables == 2 and strict.n_origins < loose.n_origins
    assert not _spans(np.vstack([N[:16], D[:16]])) and _spans(np.vstack([N[:24], D[:24]]))
    # healthy: model sizes that vary run by run give every origin many sizes: nothing skipped
    from .conftest import synthetic_runs

    N, D, L = synthetic_runs(n=60, seed=1)
    assert (
        _origins(N, D, L, monkeypatch, 3).n_origins == _origins(N, D, L, monkeypatch, 1).n_origins
    )
    assert _spans(np.log(np.vstack([np.arange(1.0, 9.0)])))  # one variable: always


def test_the_two_variable_band_follows_a_bias_and_the_learning_curve_band_stays_symmetric():
    from labcoat.scale.calibrate import Pairs, calibrate

    rng = np.random.default_rng(0)
    d = rng.uniform(0, 2, 120)
    e = 0.01 + 0.02 * d * rng.uniform(0, 1, 120)  # planted: the refits under-predict
    o = np.repeat(np.arange(6), 20)
    residuals = rng.normal(0, 0.005, 12)
    two = calibrate(Pairs(d, e, o, 6, residuals, variables=2), 0.95, "chinchilla", False)
    assert two.upper[0] + two.upper[1] > -(two.lower[0] - two.lower[1])  # split: the upper tail
    assert two.lower[1] == pytest.approx(0.0, abs=1e-9)
    # healthy twin: the same errors on a learning curve keep one symmetric line
    one = calibrate(Pairs(d, e, o, 6, residuals), 0.95, "m2", False)
    assert one.upper[0] == pytest.approx(-one.lower[0]) and one.upper[1] == one.lower[1]
