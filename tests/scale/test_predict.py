"""Predictions, intervals, compute-optimal allocations and input errors of a fit."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from labcoat import scale
from labcoat.errors import InputError

from .conftest import chinchilla_law, curve_runs, synthetic_runs


@pytest.fixture(scope="module")
def synthetic_fit():
    return scale.fit(*synthetic_runs(n=60, noise=0.01), n_resamples=100, seed=0, ledger=False)


def test_noise_free_data_recovers_the_law():
    N, D, _ = synthetic_runs(n=25)
    fit = scale.fit(N, D, chinchilla_law(N, D), n_resamples=0, ledger=False)
    truth = {"A": 480.0, "B": 2100.0, "E": 1.8, "alpha": 0.35, "beta": 0.37}
    for name, value in truth.items():
        assert fit.params[name] == pytest.approx(value, rel=1e-3), name


def test_prediction_intervals_hold_the_truth_and_widen_with_extrapolation(synthetic_fit):
    N = np.array([1e8, 1e11])
    D = np.array([1e10, 1e13])
    pred = synthetic_fit.predict(N, D)
    truth = chinchilla_law(N, D)
    assert np.all(pred.ci[0] <= truth) and np.all(truth <= pred.ci[1])
    assert np.all(pred.interval[0] <= pred.ci[0]) and np.all(pred.ci[1] <= pred.interval[1])
    width = (pred.ci[1] - pred.ci[0]) / pred.loss
    assert width[1] > 2 * width[0]  # far outside the runs' sizes the law is less certain
    one = synthetic_fit.predict(1e8, 1e10)
    assert one.verdict(float(truth[0])) == "confirmed"
    assert one.verdict(float(one.interval[1][0]) * 1.05) == "refuted"


def test_interval_level_is_chosen_after_fitting(synthetic_fit):
    wide, narrow = synthetic_fit.confidence_interval(0.95), synthetic_fit.confidence_interval(0.5)
    for name in synthetic_fit.names:
        assert wide[name].low <= narrow[name].low <= narrow[name].high <= wide[name].high
    cov = synthetic_fit.covariance
    assert cov.shape == (5, 5) and np.allclose(cov, cov.T)
    assert synthetic_fit.correlation[0, 3] > 0.5  # A and alpha trade off, as in every such fit


def test_optimal_allocation_minimises_the_fitted_loss_along_the_budget(synthetic_fit):
    budget = 1e22
    allocation = synthetic_fit.optimal(budget)
    p = synthetic_fit.params

    def loss_at(log_n):
        n = np.exp(log_n)
        return p["E"] + p["A"] * n ** -p["alpha"] + p["B"] * (budget / (6 * n)) ** -p["beta"]

    best = minimize_scalar(loss_at, bounds=(np.log(1e6), np.log(1e14)), method="bounded")
    assert allocation.N[0] == pytest.approx(np.exp(best.x), rel=1e-3)
    assert 6 * allocation.N[0] * allocation.D[0] == pytest.approx(budget)
    lo, hi = allocation.intervals["N"]
    assert lo[0] < allocation.N[0] < hi[0]
    assert allocation.to_dict()["optimal"][0]["tokens_per_parameter"] == pytest.approx(
        allocation.D[0] / allocation.N[0]
    )
    predicted = synthetic_fit.predict(allocation.N, allocation.D).loss[0]
    assert allocation.loss[0] == pytest.approx(float(predicted))


def test_to_dict_is_plain_json(synthetic_fit):
    import json

    data = json.loads(json.dumps(synthetic_fit.to_dict()))
    assert set(data["params"]) == {"A", "B", "E", "alpha", "beta"}
    assert set(data["ci"]) == set(data["params"]) and data["n_points"] == 60
    assert data["warnings"] == [] and len(data["findings"]) == 6


def test_curve_form_predicts_from_one_variable():
    x, L = curve_runs()
    fit = scale.fit(x, None, L, form="curve", n_resamples=50, ledger=False)
    pred = fit.predict([1e6])
    assert pred.loss[0] == pytest.approx(2 + 50 * 1e6**-0.5, rel=0.02)
    assert pred.interval[0][0] < 2 + 50 * 1e6**-0.5 < pred.interval[1][0]
    with pytest.raises(InputError, match="optimal: needs form='chinchilla'"):
        fit.optimal(1e20)


@pytest.mark.parametrize(
    "args,kwargs,message",
    [
        (([1e8, 2e8], [1e9, 2e9], [2.0, 3.0]), {}, "at least 6 runs to determine 5 parameters"),
        (([1e8] * 10, [1e9] * 10, [2.0] * 9), {}, "one loss per run"),
        (
            ([1e8] * 9 + [-1], [1e9] * 10, [2.0] * 10),
            {},
            "`N` must be finite positive values.*; got -1.0 at entry 9",
        ),
        (
            ([1e8] * 10, [1e9] * 10, [2.0] * 9 + [np.nan]),
            {},
            "`L` must be finite positive values.*; got nan at entry 9",
        ),
        (([1e8] * 10, None, [2.0] * 10), {}, "form 'chinchilla' needs N and D"),
        (
            ([1e8] * 10, [1e9] * 10, [2.0] * 10),
            {"form": "power"},
            "`form` must be one of 'chinchilla', 'curve', 'm1'.* or a callable; got 'power'",
        ),
        (([1e8] * 10, [1e9] * 10, [2.0] * 10), {"huber_delta": 0}, "huber_delta"),
        (([1e8] * 10, [1e9] * 10, [2.0] * 10), {"n_resamples": -1}, "n_resamples"),
        (([1.0] * 10, None, [2.0] * 10), {"form": lambda x, a: a}, "p0: a custom form needs"),
        (
            ([1.0] * 10, None, [2.0] * 10),
            {"form": lambda x, a: a, "p0": {"b": 1}},
            "cannot be called",
        ),
    ],
)
def test_bad_input_is_one_line(args, kwargs, message):
    with pytest.raises(InputError, match=message) as err:
        scale.fit(*args, **{"n_resamples": 0, "ledger": False, **kwargs})
    assert "\n" not in str(err.value)


def test_bootstrap_intervals_need_a_bootstrap_and_calibrated_ones_do_not():
    x, L = curve_runs()
    fit = scale.fit(x, None, L, form="curve", n_resamples=0, ledger=False)
    with pytest.raises(InputError, match="n_resamples=1000"):
        fit.confidence_interval()
    assert fit.predict([1e6], interval="bootstrap").interval is None
    assert fit.predict([1e6]).interval is not None  # calibrated from backtests, no bootstrap


def test_custom_form_bootstrap_split_over_joblib_matches_one_batch():
    from joblib import parallel_config

    x, L = curve_runs(x=np.logspace(2, 5, 20))
    kwargs = dict(
        form=lambda x, E, A, alpha: E + A * x**-alpha,
        p0={"E": 2.0, "A": 50.0, "alpha": 0.5},
        n_resamples=4,
        seed=1,
        ledger=False,
    )
    one = scale.fit(x, None, L, n_jobs=1, **kwargs)
    with parallel_config(backend="threading"):  # the same chunks, without starting processes
        two = scale.fit(x, None, L, n_jobs=2, **kwargs)
    assert np.allclose(one.bootstrap, two.bootstrap)
    assert one.bootstrap.shape == (4, 3) and np.ptp(one.bootstrap[:, 0]) > 0


def test_custom_form_refits_reach_the_batched_refits():
    """Same resamples through scipy (a user's law) and the batched L-BFGS (the built-in curve)."""
    x, L = curve_runs()
    builtin = scale.fit(x, None, L, form="curve", n_resamples=10, seed=3, ledger=False)
    custom = scale.fit(
        x, None, L, form=lambda x, A, E, alpha: E + A * x**-alpha,
        p0={"A": 50.0, "E": 2.0, "alpha": 0.5}, n_resamples=10, seed=3, ledger=False, n_jobs=1,
    )  # fmt: skip
    assert np.allclose(custom.bootstrap, builtin.bootstrap, rtol=2e-3)
    assert custom.objective == pytest.approx(builtin.objective, rel=1e-6)
