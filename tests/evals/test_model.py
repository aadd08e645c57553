"""The model-based method: the item model's predictions mixed with the stratified mean, with a
weight and an interval calibrated leave-models-out on the history, a fallback for histories too
small to fit it, and a widened interval for models outside the history's range."""

from __future__ import annotations

import json

import numpy as np
import pytest

from labcoat.errors import InputError
from labcoat.evals import History, compare, estimate, load_plan, plan_subset, sequential
from labcoat.evals._design import t_quantile
from labcoat.evals.plan import SubsetPlan

from .conftest import new_model, planned, simulate, status

ABILITIES = tuple(np.linspace(-1.5, 1.3, 24))


@pytest.fixture(scope="module")
def big_history():
    _, y = simulate(300, abilities=ABILITIES)
    return History.from_matrix(
        y, [f"q{i}" for i in range(y.shape[0])], [f"m{j}" for j in range(y.shape[1])]
    )


@pytest.fixture(scope="module")
def model_plan(big_history):
    return plan_subset(big_history, 60, method="model", n_resamples=4)


@pytest.mark.check("evals.plan.model_history", planted=True)
def test_model_history_warns_and_falls_back_on_a_history_of_eight_models(history):
    plan = plan_subset(history, 60, method="model", n_resamples=2)
    assert plan.method == "stratified" and plan.requested_method == "model"
    assert plan.item_model is None and "weight" not in plan.calibration
    assert status(plan, "evals.plan.model_history") == "warn"


@pytest.mark.check("evals.plan.model_history", healthy=True)
def test_model_history_passes_a_history_of_twenty_four_models(model_plan):
    assert model_plan.method == "model" and model_plan.item_model is not None
    assert 0.0 <= model_plan.weight <= 1.0
    assert status(model_plan, "evals.plan.model_history") == "pass"


def test_model_history_is_skipped_for_a_design_based_plan(history):
    plan = plan_subset(history, 60, method="stratified", n_resamples=2)
    assert status(plan, "evals.plan.model_history") == "skip"


def test_auto_is_model_based_where_it_pays_and_stratified_without_a_warning_on_a_small(
    history, big_history
):
    small = plan_subset(history, 60, n_resamples=2)  # the default method is "auto"
    assert small.method == "stratified" and small.requested_method == "auto"
    finding = next(f for f in small.findings if f.check == "evals.plan.model_history")
    assert finding.status == "skip" and "'auto' chose the stratified design" in finding.message
    large = plan_subset(History.from_matrix(_mixed()), 60, n_resamples=4)  # the item model pays
    assert large.method == "model" and status(large, "evals.plan.model_history") == "pass"
    assert plan_subset(big_history, 60, calibrate=False).method == "stratified"


def test_auto_keeps_the_design_where_the_item_model_does_not_pay_on_held_out_models():
    """A large history with no item structure (every item has the same odds for a model): the
    item model barely lowers the held-out error and its calibrated interval is wider by more,
    so 'auto' keeps the design, says why, and calibrates the design's interval as a stratified
    plan does (the twin, where it pays, is the test above)."""
    rng = np.random.default_rng(3)
    p = np.linspace(0.2, 0.8, 24)
    history = History.from_matrix((rng.random((300, 24)) < p[None, :]).astype(float))
    plan = plan_subset(history, 60, n_resamples=4)
    assert plan.method == "stratified" and plan.requested_method == "auto"
    assert plan.item_model is None and "inflation" in plan.calibration
    finding = next(f for f in plan.findings if f.check == "evals.plan.model_history")
    assert finding.status == "skip" and "calibrated interval was x" in finding.message
    assert plan_subset(history, 60, method="model", n_resamples=4).method == "model"  # asked: kept


@pytest.mark.check("evals.estimate.extrapolation", planted=True)
def test_extrapolation_warns_for_a_model_stronger_than_the_history(model_plan):
    """A model that solves every item lies above the history's range: the item model would
    shrink its ability toward the history's, so the interval is widened to contain the
    design-based one (which holds by design) and the finding says so."""
    est = estimate(planned(model_plan, np.ones(300)), model_plan)
    assert est.extrapolated and est.design_score > model_plan.history_range[1]
    assert status(est, "evals.estimate.extrapolation") == "warn"
    half = model_plan.design_inflation * t_quantile(est.level, est.df) * est.se
    assert est.ci.low <= est.design_score - half + 1e-12
    assert est.ci.high >= min(1.0, est.design_score + half) - 1e-12


@pytest.mark.check("evals.estimate.extrapolation", healthy=True)
def test_extrapolation_passes_a_model_inside_the_history(model_plan):
    est = estimate(planned(model_plan, new_model(0.3)), model_plan)
    assert not est.extrapolated and est.weight == model_plan.weight
    expected = est.weight * est.design_score + (1 - est.weight) * est.model_score
    assert est.mean == pytest.approx(expected)
    assert status(est, "evals.estimate.extrapolation") == "pass"


def _mixed(n_items: int = 300, n_models: int = 24, seed: int = 0) -> np.ndarray:
    """Half the items tell abilities apart sharply, half are coin flips of their own odds for
    every model: the stratified mean pays for the coin flips, the item model learns the
    ability from the sharp items and predicts the coin flips' odds (p-IRT's gain)."""
    rng = np.random.default_rng(seed)
    theta = np.linspace(-2, 2, n_models)
    a = np.where(np.arange(n_items) < n_items // 2, 3.0, 0.0)
    b = rng.normal(0.0, 1.5, n_items)
    p = 1.0 / (1.0 + np.exp(-(a[:, None] * theta[None, :] - b[:, None])))
    return (rng.random(p.shape) < p).astype(float)


def test_the_weight_leans_on_the_item_model_where_it_predicts_the_unseen_items():
    plan = plan_subset(History.from_matrix(_mixed()), 60, method="model", n_resamples=4)
    cal = plan.calibration
    assert plan.weight <= 0.4 and cal["mae"] < 0.85 * cal["mae_design"]
    assert cal["mae_design"] < cal["mae_random"]


def test_the_weight_goes_to_the_design_when_the_item_model_has_nothing_to_say():
    """The twin: scores with no item structure (every item has the same odds for a model)
    give the item model nothing to predict, and the calibrated weight moves to the design."""
    rng = np.random.default_rng(3)
    p = np.linspace(0.2, 0.8, 24)
    y = (rng.random((300, 24)) < p[None, :]).astype(float)
    plan = plan_subset(History.from_matrix(y), 60, method="model", n_resamples=4)
    assert plan.weight >= 0.6


def _coverage(plan, shrink: float = 1.0, reps: int = 200) -> float:
    target = new_model(0.6)
    truth = target.mean()
    rng = np.random.default_rng(4)
    hits = 0
    for _ in range(reps):
        idx = plan.design.draw(rng)
        est, se, df, inflation, _, _, _ = plan.combined(target[idx], idx)
        hits += abs(est[0] - truth) <= shrink * inflation[0] * t_quantile(0.95, df) * se[0]
    return hits / reps


def test_model_based_intervals_cover_a_new_model_over_many_draws(model_plan):
    assert _coverage(model_plan) >= 0.92


def test_the_coverage_check_catches_intervals_a_third_as_wide(model_plan):
    assert _coverage(model_plan, shrink=1 / 3) < 0.8


def test_compare_on_a_model_plan_ranks_on_the_design_based_paired_difference(model_plan):
    strong, weak = new_model(1.2), new_model(-1.2)
    cmp = compare(planned(model_plan, strong), planned(model_plan, weak), model_plan)
    assert cmp.decision == "A better" and cmp.inflation == model_plan.design_inflation
    assert cmp.score_a == pytest.approx(
        estimate(planned(model_plan, strong), model_plan).design_score
    )
    # labelled so, since the estimate of the same results is the model-based one
    assert cmp.scores_basis == "design-based (estimate's is model-based)"
    assert cmp.to_dict()["scores_basis"] == cmp.scores_basis


def test_sequential_runs_on_a_model_plan(model_plan):
    scores = new_model(1.0)
    index = model_plan.index()
    seq = sequential(lambda item: float(scores[index[item]]), model_plan, threshold=0.2, batch=5)
    assert seq.stopped and seq.decision == "above"


def test_a_model_plan_survives_json_and_estimates_the_same(model_plan, tmp_path):
    path = model_plan.save(tmp_path / "plan.json")
    again = load_plan(path)
    assert again.method == "model" and again.weight == model_plan.weight
    res = planned(model_plan, new_model(0.3))
    assert estimate(res, again).mean == pytest.approx(estimate(res, model_plan).mean, abs=1e-4)


def test_a_version_one_plan_still_loads_and_a_newer_one_is_refused(history, tmp_path):
    plan = plan_subset(history, 40, n_resamples=2)
    old = plan.to_dict()
    old["version"] = 1
    del old["requested_method"]
    loaded = SubsetPlan.from_dict(json.loads(json.dumps(old)))
    assert loaded.method == "stratified" and loaded.requested_method == ""
    res = planned(plan, new_model(0.0))
    assert estimate(res, loaded).mean == pytest.approx(estimate(res, plan).mean)
    old["version"] = 99
    with pytest.raises(InputError, match="newer"):
        SubsetPlan.from_dict(old)


def test_a_model_plan_needs_its_calibration(big_history):
    with pytest.raises(InputError, match="calibrate"):
        plan_subset(big_history, 60, method="model", calibrate=False)


def test_cli_plans_estimates_and_compares_model_based(cli, big_history, tmp_path):
    from .test_readers_cli import _write_matrix, _write_results

    history = _write_matrix(tmp_path / "history.csv", big_history.scores)
    plan = tmp_path / "plan.json"
    out = cli(
        "evals", "plan", history, "--subset-size", "60", "--method", "model", "-o", plan, "--json"
    )
    assert out.code == 0, out.err
    assert json.loads(out.out)["method"] == "model"
    a = _write_results(tmp_path / "a.csv", new_model(1.2))
    b = _write_results(tmp_path / "b.csv", new_model(-1.2))
    est = cli("evals", "estimate", a, "--plan", plan, "--json", "--no-ledger")
    assert est.code == 0, est.err
    assert 0.0 <= json.loads(est.out)["weight"] <= 1.0
    cmp = cli("evals", "compare", a, b, "--plan", plan, "--json", "--no-ledger")
    assert cmp.code == 0 and json.loads(cmp.out)["decision"] == "A better"
    refused = cli(
        "evals", "plan", history, "--subset-size", "60", "--method", "model", "--no-calibrate"
    )
    assert refused.code == 2 and refused.err.count("\n") == 1
