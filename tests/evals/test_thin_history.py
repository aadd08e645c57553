"""A calibration never narrows the design's intervals on a history too thin to show that a
narrower interval holds for a new model (issue: a 5-model history narrowed x0.87 and covered
0.906); with enough model groups it still may."""

from __future__ import annotations

import numpy as np
import pytest

from labcoat.evals import History, plan_subset
from labcoat.evals.plan import INFLATION_FLOOR, Design, narrowing_min_groups

from .conftest import shared, simulate, status


def _history(n_models: int) -> History:
    _, y = simulate(300, abilities=tuple(np.linspace(-1.5, 1.5, n_models)), seed=3)
    return History.from_matrix(y)


@pytest.fixture
def overstated(monkeypatch):
    """A design whose standard errors are three times too large: held-out models are covered
    by intervals a third as wide, so the calibration would narrow them as far as it may."""
    honest = Design.estimate

    def wide(self, *args, **kwargs):
        est, se, df, residual = honest(self, *args, **kwargs)
        return est, se * 3.0, df, residual

    monkeypatch.setattr(Design, "estimate", wide)


def test_the_least_history_that_may_narrow_is_the_conformal_one():
    assert narrowing_min_groups(0.95) == 24  # q = 0.96: q / (1 - q)
    assert narrowing_min_groups(0.90) == 12 and narrowing_min_groups(0.99) == 124


def test_a_thin_history_never_narrows_the_design(overstated):
    plan = plan_subset(_history(8), 60, method="stratified", n_resamples=3)
    cal = plan.calibration
    assert cal["inflation_needed"] < 0.5  # the held-out models asked for far narrower
    assert cal["inflation"] == 1.0 and cal["inflation_floor"] == 1.0
    finding = next(f for f in plan.findings if f.check == "evals.plan.calibration")
    assert "not narrowed" in finding.message and "needs 24" in finding.message


def test_a_history_of_enough_model_groups_may_narrow(overstated):
    plan = plan_subset(_history(26), 60, method="stratified", n_resamples=3)
    assert plan.calibration["inflation"] == INFLATION_FLOOR < 1.0
    assert status(plan, "evals.plan.calibration") == "pass"  # narrowed, still covering


def test_a_thin_history_of_math500_keeps_the_design_s_own_intervals():
    from labcoat.evals import read_history

    math = read_history(shared("items", "math500_cbmm_Y.csv"))
    for seed in range(3):
        keep = np.zeros(math.n_models, dtype=bool)
        keep[np.random.default_rng(seed).choice(math.n_models, 5, replace=False)] = True
        plan = plan_subset(math.without(keep), 100, seed=seed, n_resamples=5)
        assert plan.inflation >= 1.0, plan.calibration


def test_a_model_based_plan_on_fewer_groups_than_can_show_it_never_narrows(overstated):
    thin = plan_subset(_history(16), 60, method="model", n_resamples=2)  # 12 <= 16 < 24 groups
    cal = thin.calibration
    assert thin.method == "model" and cal["inflation_floor"] == 1.0
    assert cal["inflation"] >= 1.0 and cal["inflation_design"] >= 1.0
    enough = plan_subset(_history(26), 60, method="model", n_resamples=2).calibration
    assert enough["inflation_floor"] < 1.0 and enough["inflation_design"] < 1.0  # may narrow
