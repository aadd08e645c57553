"""Downstream error through the loss: a predictable task is predicted inside its interval, one
that tracks nothing the runs show is declared not predictable."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from labcoat.errors import InputError
from labcoat.scale.downstream import PredictabilityWarning, fit_downstream

from .conftest import chinchilla_law


def grid(seed=0, n=40):
    rng = np.random.default_rng(seed)
    N = 10 ** rng.uniform(7, 9.5, n)
    D = N * 10 ** rng.uniform(1, 2, n)
    L = chinchilla_law(N, D) * np.exp(rng.normal(0, 0.005, n))
    return N, D, L, rng


@pytest.mark.slow
def test_an_error_that_follows_the_loss_is_predictable_and_predicted():
    N, D, L, rng = grid()
    err = np.clip(0.9 - 3.0 * np.exp(-1.5 * L) + rng.normal(0, 0.005, L.size), 0, 1)
    fit = fit_downstream(N, D, L, 1 - err, target="accuracy")
    assert fit.predictable and fit.ok
    assert fit.backtest["mae"] < 0.5 * fit.backtest["constant_mae"]
    N2, D2 = np.array([1e10]), np.array([2e11])
    truth = 1 - (0.9 - 3.0 * np.exp(-1.5 * chinchilla_law(N2, D2)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", PredictabilityWarning)
        p = fit.predict(N2, D2)
    assert p.interval[0][0] <= truth[0] <= p.interval[1][0]
    assert p.to_dict()["predictable"] is True
    assert "NOT predictable" not in fit.to_html() and "predictable" in fit.to_html()


@pytest.mark.slow
def test_an_error_unrelated_to_scale_is_not_predictable_and_predict_says_so():
    N, D, L, rng = grid(seed=1)
    err = np.clip(0.5 + rng.normal(0, 0.03, L.size), 0, 1)  # chance level, noise only
    fit = fit_downstream(N, D, L, err, target="error")
    assert not fit.predictable and not fit.ok
    assert "no better than a constant" in fit.reason or "trend" in fit.reason
    assert fit.findings[0].status == "fail"
    assert "NOT predictable" in fit.to_html()
    with pytest.warns(PredictabilityWarning, match="not predictable"):
        fit.predict(1e9, 1e11)


def test_downstream_inputs_are_one_line():
    N, D, L, _ = grid(n=10)
    with pytest.raises(InputError, match=r"must lie in \[0, 1\]"):
        fit_downstream(N, D, L, np.full(10, 55.0), target="accuracy")
    with pytest.raises(InputError, match="`target` must be 'accuracy' or 'error'"):
        fit_downstream(N, D, L, np.full(10, 0.5), target="f1")


def test_scale_fit_takes_a_downstream_target():
    from labcoat import scale

    N, D, L, _ = grid(n=12)
    with pytest.raises(InputError, match="needs the downstream metric"):
        scale.fit(N, D, L, target="accuracy", ledger=False)
    fit = scale.fit(N, D, L, target="error", metric=np.linspace(0.8, 0.4, 12), via="compute")
    assert isinstance(fit, scale.DownstreamFit) and fit.via == "compute"


def test_downstream_bands_carry_the_frontier_factor(monkeypatch):
    from labcoat.scale import calibrate as cal

    N, D, L, rng = grid(n=24)
    err = np.clip(0.9 - 3.0 * np.exp(-1.5 * L) + rng.normal(0, 0.005, L.size), 0, 1)
    table = {**cal.load_prior(), "frontier": {"levels": [0.9, 0.99], "factors": [3.0, 3.0]}}
    monkeypatch.setattr(cal, "load_prior", lambda: table)
    fit = fit_downstream(N, D, L, err, target="error", via="compute")
    assert fit.calibration.factor == 3.0 and fit.calibration.method.endswith("×frontier")
    monkeypatch.setattr(cal, "load_prior", lambda: {"forms": {}})
    plain = fit_downstream(N, D, L, err, target="error", via="compute")
    assert plain.calibration.factor == 1.0 and "frontier" not in plain.calibration.method
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wide, narrow = fit.predict(2e9, 4e10), plain.predict(2e9, 4e10)
    assert np.all(wide.interval[1] - wide.interval[0] >= narrow.interval[1] - narrow.interval[0])
