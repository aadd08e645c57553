"""Each diagnostic warns on a planted problem and passes its healthy twin."""

from __future__ import annotations

import numpy as np
import pytest

from labcoat import scale
from labcoat.scale.diagnostics import CHECKS

from .conftest import curve_runs


def _finding(fit, check):
    return {f.check: f for f in fit.findings}[check]


def _curve(x, L, **kw):
    return scale.fit(x, None, L, form="curve", n_resamples=0, ledger=False, **kw)


def test_every_check_is_declared_with_what_it_falsifies():
    assert {c.id for c in CHECKS} == {
        "scale.points",
        "scale.grid_edge",
        "scale.bound",
        "scale.flat",
        "scale.residuals",
        "scale.choice",  # form="auto" only
        "scale.fit",  # the fit itself, stored with it; not among its diagnostics
    }
    assert "scale.fit" not in {f.check for f in _curve(*curve_runs()).findings}
    assert all(c.falsifies and c.predicts for c in CHECKS)


def test_too_few_points_warns_and_enough_passes():
    few = _curve(*curve_runs(x=np.logspace(2, 5, 10)))
    enough = _curve(*curve_runs(x=np.logspace(2, 5, 40)))
    assert _finding(few, "scale.points").status == "warn"
    assert _finding(few, "scale.points").evidence["n_points"] == 10
    assert _finding(enough, "scale.points").status == "pass"


@pytest.mark.check("scale.points", planted=True)
def test_two_distinct_sizes_warn_even_with_many_runs():
    x = np.repeat([1e3, 1e4], 20)
    found = _finding(_curve(*curve_runs(x=x)), "scale.points")
    assert found.status == "warn" and found.evidence["distinct_values"] == {"x": 2}


@pytest.mark.check("scale.points", healthy=True)
def test_three_distinct_sizes_are_enough_points():
    three = _finding(_curve(*curve_runs(x=np.repeat([1e2, 1e3, 1e4], 14))), "scale.points")
    assert three.status == "pass"


@pytest.mark.check("scale.grid_edge", planted=True)
def test_an_optimum_outside_the_grid_warns():
    x, _ = curve_runs()
    steep = _curve(
        x, (2 + np.exp(20) * x**-3.5) * np.exp(np.random.default_rng(0).normal(0, 0.01, x.size))
    )
    found = _finding(steep, "scale.grid_edge")
    assert found.status == "warn" and found.evidence["outside"] == ["alpha"]


@pytest.mark.check("scale.grid_edge", healthy=True)
def test_an_optimum_inside_the_grid_passes():
    x, _ = curve_runs()
    inside = _curve(
        x, (2 + np.exp(12) * x**-1.5) * np.exp(np.random.default_rng(0).normal(0, 0.01, x.size))
    )
    assert _finding(inside, "scale.grid_edge").status == "pass"


@pytest.mark.check("scale.bound", healthy=True)
def test_no_floor_warns_at_the_bound_and_a_floor_passes():
    no_floor = _curve(*curve_runs(E=1e-9))
    floor = _curve(*curve_runs(E=0.3))  # a small but real floor, 30% of the last loss
    assert _finding(no_floor, "scale.bound").status == "warn"
    assert _finding(no_floor, "scale.bound").evidence["at_bound"] == ["E"]
    assert _finding(floor, "scale.bound").status == "pass"


@pytest.mark.check("scale.flat", planted=True)
def test_a_narrow_range_is_flat():
    narrow = _curve(*curve_runs(x=np.logspace(3, 3.3, 40)))
    found = _finding(narrow, "scale.flat")
    assert found.status == "warn" and max(found.evidence["relative_errors"].values()) > 0.1


@pytest.mark.check("scale.flat", healthy=True)
def test_a_wide_range_is_not_flat():
    wide = _curve(*curve_runs(x=np.logspace(2, 5, 40)))
    assert _finding(wide, "scale.flat").status == "pass"


@pytest.mark.check("scale.residuals", planted=True, cases=["1000-0.1"])
@pytest.mark.parametrize("knee,late_exponent", [(1000, 0.1), (300, 0.2)])
def test_a_bent_law_leaves_waving_residuals(knee, late_exponent):
    x = np.logspace(2, 5, 40)
    bent = np.where(x < knee, 2 + 50 * x**-0.5, 2 + 50 * knee**-0.5 * (x / knee) ** -late_exponent)
    noisy = bent * np.exp(np.random.default_rng(1).normal(0, 0.01, x.size))
    assert _finding(_curve(x, noisy), "scale.residuals").status == "warn"


@pytest.mark.check("scale.residuals", healthy=True, cases=["1"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_right_law_with_the_same_noise_has_no_residual_pattern(seed):
    assert _finding(_curve(*curve_runs(noise=0.01, seed=seed)), "scale.residuals").status == "pass"


def test_custom_form_matches_the_built_in_curve_and_is_diagnosed():
    x, L = curve_runs()
    builtin = _curve(x, L)
    custom = scale.fit(
        x,
        None,
        L,
        form=lambda x, E, A, alpha: E + A * x**-alpha,
        p0={"E": [1.0, 3.0], "A": [10.0, 100.0], "alpha": [0.3, 1.0]},
        n_resamples=0,
        ledger=False,
    )
    for name in ("E", "A", "alpha"):
        assert custom.params[name] == pytest.approx(builtin.params[name], rel=1e-2)
    statuses = {f.check: f.status for f in custom.findings}
    assert statuses["scale.grid_edge"] == "skip" and statuses["scale.flat"] == "pass"


@pytest.mark.check("scale.bound", planted=True)
def test_a_loss_that_rises_with_size_warns_at_the_exponent_bound():
    x = np.logspace(2, 5, 40)
    noise = np.exp(np.random.default_rng(0).normal(0, 0.01, x.size))
    rising = _finding(_curve(x, (2 + 0.05 * x**0.3) * noise), "scale.bound")
    falling = _finding(_curve(x, (2 + 5 * x**-0.3) * noise), "scale.bound")  # as large a change
    assert rising.status == "warn" and rising.evidence["at_bound"] == ["alpha"]
    assert "rises with x" in rising.message
    assert falling.status == "pass"


def test_flat_says_what_it_pinned_beside_a_wide_coefficient_interval():
    """The pass message measured the law's level at the runs' mean size, not A: where A's own
    bootstrap interval is wide it must say so, never "every parameter pinned" beside it."""
    x, L = curve_runs(x=np.logspace(3, 4.5, 40), noise=0.02)
    fit = scale.fit(x, None, L, form="curve", n_resamples=200, ledger=False)
    found = _finding(fit, "scale.flat")
    ci = fit.confidence_interval(0.95)["A"]
    assert found.status == "pass" and ci.high / ci.low > 2
    assert "every parameter" not in found.message and "level at their mean size" in found.message
    assert f"A's own 95% interval spans a factor {ci.high / ci.low:.3g}" in found.message
    # the healthy twin: a wide range pins A too, and no caveat is added
    x, L = curve_runs(x=np.logspace(2, 5, 40), noise=0.01)
    twin = _finding(
        scale.fit(x, None, L, form="curve", n_resamples=200, ledger=False), "scale.flat"
    )
    assert twin.status == "pass" and "spans a factor" not in twin.message


@pytest.mark.check("scale.fit", planted=True)
@pytest.mark.check("scale.fit", healthy=True)
def test_the_stored_fit_warns_when_its_diagnostics_warn_and_passes_a_clean_law():
    """``scale.fit`` is the finding a fit is stored as: it carries the fit's parameters and
    warns when a diagnostic did (here the loss rises with size), else passes."""
    from labcoat.scale.diagnostics import FIT

    x = np.logspace(2, 5, 40)
    noise = np.exp(np.random.default_rng(0).normal(0, 0.01, x.size))
    rising = FIT.evaluate(_curve(x, (2 + 0.05 * x**0.3) * noise))
    falling = FIT.evaluate(_curve(x, (2 + 5 * x**-0.3) * noise))
    assert rising.status == "warn" and "alpha" in rising.evidence["params"]
    assert falling.status == "pass", falling.message
    assert falling.evidence["n_points"] == 40
