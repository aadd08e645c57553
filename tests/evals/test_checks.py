"""The check contract for the evals engine: every check beside a planted case it must fail (or
warn on) and a healthy twin it must pass, each asserted on that check's own finding."""

from __future__ import annotations

import numpy as np
import pytest

from labcoat.evals import compare, estimate, plan_subset, sequential
from labcoat.evals.plan import Design

from .conftest import new_model, planned, status


@pytest.fixture(scope="module")
def plan(history):
    return plan_subset(history, 60, n_resamples=3)


@pytest.fixture(scope="module")
def small(history):
    return plan_subset(history, 8, calibrate=False)


@pytest.mark.check("evals.plan.size", planted=True)
def test_plan_size_fails_a_plan_too_small_for_an_interval(small):
    assert status(small, "evals.plan.size") == "fail" and not small.ok


@pytest.mark.check("evals.plan.size", healthy=True)
def test_plan_size_passes_a_plan_of_sixty_items(plan):
    assert status(plan, "evals.plan.size") == "pass"


@pytest.mark.check("evals.plan.calibration", planted=True)
def test_plan_calibration_warns_when_the_design_s_intervals_are_far_too_narrow(
    history, monkeypatch
):
    """A variance estimator that understates the standard error fourfold: held-out history
    models are not covered, and widening x2 (the cap) does not cover them either."""
    honest = Design.estimate

    def too_narrow(self, *args, **kwargs):
        est, se, df, residual = honest(self, *args, **kwargs)
        return est, se / 4.0, df, residual

    monkeypatch.setattr(Design, "estimate", too_narrow)
    bad = plan_subset(history, 60, n_resamples=3)
    assert bad.calibration["coverage_raw"] < 0.9
    assert status(bad, "evals.plan.calibration") == "warn"


@pytest.mark.check("evals.plan.calibration", healthy=True)
def test_plan_calibration_passes_the_honest_design(plan):
    assert plan.calibration["coverage_raw"] >= 0.9
    assert status(plan, "evals.plan.calibration") == "pass"


@pytest.mark.check("evals.estimate.items", planted=True)
def test_estimate_items_warns_when_planned_items_have_no_result(plan):
    dropped = dict(list(planned(plan, new_model(0.0)).items())[10:])
    est = estimate(dropped, plan, allow_missing=True)
    assert status(est, "evals.estimate.items") == "warn" and est.n_missing == 10


@pytest.mark.check("evals.estimate.items", healthy=True)
def test_estimate_items_passes_when_every_planned_item_is_scored(plan):
    assert status(estimate(planned(plan, new_model(0.0)), plan), "evals.estimate.items") == "pass"


@pytest.mark.check("evals.estimate.interval", planted=True)
def test_estimate_interval_fails_an_estimate_from_too_few_items(small):
    est = estimate(planned(small, new_model(0.0)), small)
    assert est.refused and status(est, "evals.estimate.interval") == "fail"


@pytest.mark.check("evals.estimate.interval", healthy=True)
def test_estimate_interval_passes_an_estimate_from_sixty_items(plan):
    est = estimate(planned(plan, new_model(0.0)), plan)
    assert not est.refused and status(est, "evals.estimate.interval") == "pass"


@pytest.fixture(scope="module")
def irt_plan(history):
    return plan_subset(history, 80, method="irt", calibrate=False)


@pytest.mark.check("evals.estimate.model_fit", planted=True)
def test_model_fit_warns_for_a_model_that_solves_every_item(irt_plan):
    """The item model's ability prior comes from the history: for a model that solves every
    item its predictions fall short and the residual shows (the estimate stays unbiased)."""
    est = estimate(planned(irt_plan, np.ones(300)), irt_plan)
    r, se = est.model_residual
    assert r > 3 * se and status(est, "evals.estimate.model_fit") == "warn"


@pytest.mark.check("evals.estimate.model_fit", healthy=True)
def test_model_fit_passes_a_model_like_the_history_s(irt_plan):
    est = estimate(planned(irt_plan, new_model(0.3)), irt_plan)
    assert status(est, "evals.estimate.model_fit") == "pass"


@pytest.fixture(scope="module")
def strong_weak():
    return new_model(2.0), new_model(-1.5)


@pytest.mark.check("evals.compare.decision", planted=True)
def test_compare_decision_fails_a_ranking_from_a_too_small_subset(small, strong_weak):
    strong, weak = strong_weak
    cmp = compare(planned(small, strong), planned(small, weak), small)
    assert cmp.refused and status(cmp, "evals.compare.decision") == "fail"


@pytest.mark.check("evals.compare.decision", healthy=True)
def test_compare_decision_passes_a_clear_gap_on_sixty_items(plan, strong_weak):
    strong, weak = strong_weak
    cmp = compare(planned(plan, strong), planned(plan, weak), plan)
    assert cmp.decision == "A better" and status(cmp, "evals.compare.decision") == "pass"


def _scorer(plan, scores):
    index = plan.index()
    return lambda item: float(scores[index[item]])


@pytest.mark.check("evals.sequential.decided", planted=True)
def test_sequential_warns_when_it_runs_out_of_draws_undecided(plan):
    target = new_model(0.3)
    seq = sequential(_scorer(plan, target), plan, threshold=target.mean(), max_draws=20, batch=5)
    assert not seq.stopped and status(seq, "evals.sequential.decided") == "warn"


@pytest.mark.check("evals.sequential.decided", healthy=True)
def test_sequential_passes_once_the_threshold_is_settled(plan):
    seq = sequential(_scorer(plan, new_model(2.0)), plan, threshold=0.3, batch=5)
    assert seq.stopped and status(seq, "evals.sequential.decided") == "pass"
