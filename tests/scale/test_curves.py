"""Learning-curve forms M1–M4 and the broken power law, and form="auto" choosing by backtest."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from labcoat import scale
from labcoat.errors import InputError
from labcoat.scale.curves import CURVES, M4


@pytest.mark.parametrize(
    "name,truth",
    [
        ("m1", {"beta": 50.0, "c": 0.4}),
        ("m2", {"beta": 50.0, "c": 0.5, "E": 2.0}),
        ("m3", {"beta": 3.0, "c": 0.3, "gamma": 1e-4}),
        ("broken", {"beta": 40.0, "c0": 0.3, "c1": 0.4, "d": 3e3, "E": 1.5, "s": 0.5}),
    ],
)
def test_each_form_recovers_its_own_noise_free_curve(name, truth):
    form = CURVES[name]
    x = np.logspace(2, 5, 40)[None]
    theta = form.search(x, np.exp(form.log_predict(_internal(form, truth), x)[0]), 1e-3).theta
    fitted = dict(zip(form.names, form.natural(theta)[0]))
    assert np.allclose(
        form.log_predict(theta, x), form.log_predict(_internal(form, truth), x), atol=1e-4
    )
    for key in ("c", "c0", "E"):
        if key in truth:
            assert fitted[key] == pytest.approx(truth[key], rel=0.05), key


def _internal(form, natural):
    values = dict(natural)
    out = []
    for name in form.internal_names:
        out.append(np.log(values[name[4:]]) if name.startswith("log_") else values[name])
    return np.array(out)


def test_m4_solves_its_implicit_equation():
    theta = np.array([np.log(20.0), 0.5, 0.7, 0.2, 0.95])
    x = np.logspace(1, 6, 30)[None]
    L = np.exp(M4.log_predict(theta, x)[0])
    lhs = (L - 0.2) / (0.95 - L) ** 0.7
    assert np.allclose(lhs, 20.0 * x[0] ** -0.5, rtol=1e-6)
    assert np.all((L > 0.2) & (L < 0.95)) and np.all(np.diff(L) < 0)


@pytest.mark.slow
def test_auto_picks_a_floor_for_a_curve_with_a_floor_and_says_why():
    x = np.logspace(2, 5, 40)
    L = (2 + 50 * x**-0.5) * np.exp(np.random.default_rng(0).normal(0, 0.01, 40))
    fit = scale.fit(x, None, L, form="auto", n_resamples=0, ledger=False)
    assert fit.selection["chosen"] in ("m2", "m3", "m4")
    scores = fit.selection["backtest_rmse"]
    assert scores["m1"] > 3 * scores[fit.selection["chosen"]]  # a plain power law misses the floor
    assert "rolling-origin" in fit.selection["why"]
    assert fit.to_dict()["selection"]["chosen"] == fit.form.name
    # the interval holds every form the backtest could not tell apart, not a missed one
    close = fit.selection["indistinguishable"]
    assert close and "m1" not in close and set(close) == set(fit._alternatives)
    far = [1e6, 1e7]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pred = fit.predict(far)
    assert pred.calibration["form_choice"] == sorted(close)
    for name in close:
        other = np.exp(CURVES[name].log_predict(fit._alternatives[name], np.array([far]))[0])
        assert np.all((pred.interval[0] <= other) & (other <= pred.interval[1]))


def test_auto_needs_one_variable():
    with pytest.raises(InputError, match="'auto' chooses among learning-curve forms"):
        scale.fit([1e8, 2e8], [1e9, 2e9], [3.0, 2.9], form="auto", ledger=False)


def test_the_level_auto_compares_forms_at_is_a_probability():
    x = np.logspace(2, 4, 8)
    with pytest.raises(InputError, match="`level` must be a number strictly between 0 and 1"):
        scale.fit(x, None, 3 * x**-0.1, form="m1", level=1.5, n_resamples=0, ledger=False)
    fit = scale.fit(x, None, 3 * x**-0.1, form="m1", level=0.9, n_resamples=0, ledger=False)
    assert fit.params["c"] == pytest.approx(0.1, rel=1e-3)


def test_a_rolling_origins_refits_in_one_batch_equal_each_subset_fitted_alone():
    from labcoat.scale.curves import CURVES

    x = np.logspace(2, 5, 24)[None]
    loss = (0.5 + 20 * x[0] ** -0.4) * np.exp(np.random.default_rng(2).normal(0, 0.005, 24))
    form = CURVES["m2"]
    masks = np.array([x[0] <= cut for cut in (3e3, 1e4, 3e4)])
    together = form.search_many(x, loss, 1e-3, masks)
    for keep, theta in zip(masks, together):
        alone = form.search(x[:, keep], loss[keep], 1e-3).theta
        assert np.allclose(theta, alone, rtol=1e-5, atol=1e-7)
