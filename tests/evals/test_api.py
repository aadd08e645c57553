"""plan_subset, estimate, compare and sequential on generated histories: each claim beside a
planted case it must catch (a too-small plan, missing items, a model pair inside the noise)."""

from __future__ import annotations

import numpy as np
import pytest

from labcoat.errors import InputError
from labcoat.evals import History, compare, estimate, load_plan, plan_subset, sequential

from .conftest import new_model, planned


@pytest.fixture(scope="module")
def plan(history):
    return plan_subset(history, 60, n_resamples=5)


def test_a_plan_is_calibrated_on_held_out_history_models(plan):
    assert plan.ok and len(plan.subset) == 60 and len(set(plan.subset)) == 60
    cal = plan.calibration
    assert cal["trials"] > 0 and 0.85 <= cal["inflation"] <= 2.0
    assert plan.findings[1].status == "pass"


def test_the_estimate_covers_a_model_stronger_than_the_history(plan):
    target = new_model(2.0)
    est = estimate(planned(plan, target), plan)
    assert est.ok and not est.refused
    assert est.ci.contains(target.mean())
    assert est.stronger_than_history
    assert 0 < est.n_effective <= 300 and est.detectable > 0


def test_a_too_small_plan_refuses_and_its_estimate_refuses(history):
    small = plan_subset(history, 8, calibrate=False)
    assert not small.ok and small.findings[0].status == "fail"
    target = new_model(0.0)
    est = estimate(planned(small, target), small)
    assert est.refused and not est.ok
    # the refusal's interval is the distribution-free bound: wide, and still covering
    assert est.ci.width > 0.4 and est.ci.contains(target.mean())


def test_planned_items_without_a_result_exit_2_unless_allowed(plan):
    results = planned(plan, new_model(0.0))
    dropped = dict(list(results.items())[10:])
    with pytest.raises(InputError, match="10 of the 60 planned items have no result"):
        estimate(dropped, plan)
    est = estimate(dropped, plan, allow_missing=True)
    assert est.warnings and est.warnings[0].check == "evals.estimate.items"
    assert estimate(results, plan).warnings == []  # the healthy twin


def test_ids_that_are_not_the_benchmarks_exit_2(plan):
    with pytest.raises(InputError, match="not in the plan's benchmark"):
        estimate({f"other{i}": 1.0 for i in range(60)}, plan)


def test_a_history_of_one_model_is_refused():
    with pytest.raises(InputError, match="at least two models"):
        History.from_matrix(np.ones((50, 1)))
    with pytest.raises(InputError, match="at least two models"):  # one model, two settings
        History.from_matrix(np.ones((50, 2)), models=["m_zero_shot", "m_one_shot"])


def test_compare_decides_a_clear_gap_and_refuses_inside_the_noise(history):
    plan = plan_subset(history, 120, n_resamples=3)
    strong, weak = new_model(2.0), new_model(-1.5)
    clear = compare(planned(plan, strong), planned(plan, weak), plan)
    assert clear.decision == "A better" and clear.items_needed is None
    twin = new_model(0.3, draw_seed=5)
    close = compare(planned(plan, twin), planned(plan, new_model(0.3, draw_seed=6)), plan)
    assert close.decision == "inconclusive"
    assert 120 <= close.items_needed <= 300


def test_compare_on_a_too_small_subset_refuses_even_a_clear_gap(history):
    small = plan_subset(history, 12, calibrate=False)
    cmp = compare(planned(small, new_model(2.0)), planned(small, new_model(-1.5)), small)
    assert cmp.refused and cmp.decision == "inconclusive" and not cmp.ok


def test_the_plan_round_trips_through_its_file(plan, tmp_path):
    path = plan.save(tmp_path / "plan.json")
    again = load_plan(path)
    assert again.subset == plan.subset and again.inflation == plan.inflation
    target = planned(plan, new_model(0.5))
    assert estimate(target, again).mean == estimate(target, plan).mean


def test_a_file_that_is_not_a_plan_exits_2(tmp_path):
    bad = tmp_path / "plan.json"
    bad.write_text('{"subset": [1, 2]}')
    with pytest.raises(InputError, match="not a labcoat eval plan"):
        load_plan(bad)


def test_irt_plan_stays_unbiased_when_its_model_is_wrong(history):
    plan = plan_subset(history, 80, method="irt", calibrate=False)
    # a model whose right answers ignore the history's item structure entirely
    rng = np.random.default_rng(12345)  # not a plan's seed: the draws must not see it
    odd = (rng.random(300) < 0.5).astype(float)
    design, draws = plan.design, np.random.default_rng(0)
    errors = []
    for _ in range(200):
        idx = design.draw(draws)
        errors.append(design.estimate(odd[idx], idx, plan.item_model)[0][0] - odd.mean())
    assert abs(np.mean(errors)) < 3 * np.std(errors) / np.sqrt(len(errors))
    assert estimate(planned(plan, odd), plan).findings[2].check == "evals.estimate.model_fit"


def test_sequential_stops_once_the_threshold_is_settled(plan):
    target = new_model(2.0)
    index = plan.index()
    calls = []

    def score(item):
        calls.append(item)
        return float(target[index[item]])

    seq = sequential(score, plan, threshold=0.3, batch=5)
    assert seq.stopped and seq.decision == "above" and seq.ci.contains(target.mean())
    assert len(calls) == seq.n_items < 300  # each item evaluated once, and not all of them


def test_sequential_replay_needs_every_drawn_item(plan):
    with pytest.raises(InputError, match="has no result for item"):
        sequential(planned(plan, new_model(0.0)), plan, width=0.05)


def test_the_engine_is_reachable_lazily_and_its_checks_are_registered():
    import labcoat
    from labcoat.engines import catalogue

    assert labcoat.evals.plan_subset is plan_subset
    ids = {row["id"] for row in catalogue("evals")}
    assert {"evals.plan.size", "evals.estimate.interval", "evals.compare.decision"} <= ids


def test_results_record_their_findings_in_a_ledger(plan, tmp_path):
    from labcoat.ledger import Ledger

    est = estimate(planned(plan, new_model(0.5)), plan)
    ids = est.record(tmp_path / "ledger.db")
    assert ids and len(ids) == len(est.findings)
    page = est.to_html()
    assert "evals.estimate.interval" in page and f"{est.mean}" in page
    assert Ledger(tmp_path / "ledger.db") is not None
