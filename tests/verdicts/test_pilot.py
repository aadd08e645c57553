"""A pilot's rows are sealed with the plan: a verdict that rests on them is named
(``judged-on-pilot``), one that the items outside the pilot also give is not; and the review
plans α over every member the ledger holds in the plan's family."""

from __future__ import annotations

import numpy as np
import pytest

import labcoat
from labcoat.verdicts import Plan, plan_review, register, review, verdict

N = 400


def _arms(seed: int, gain_first: float, gain_rest: float, split: int = N // 2):
    """Two arms on N items: a gain of ``gain_first`` on the first ``split`` items and of
    ``gain_rest`` on the others."""
    rng = np.random.default_rng(seed)
    ids = [f"q{i}" for i in range(N)]
    b = (rng.random(N) < 0.5).astype(int)
    gain = np.where(np.arange(N) < split, gain_first, gain_rest)
    a = (rng.random(N) < 0.5 + gain).astype(int)
    return {"qid": ids, "correct": a}, {"qid": ids, "correct": b}


def _rows(arm: dict, keep: slice) -> dict:
    return {k: list(v)[keep] for k, v in arm.items()}


PLAN = dict(metric="accuracy", column="correct", id="qid", comparison="superiority", items=N)


def _deviations(tmp_path, pilot, data, **plan):
    with labcoat.Ledger(tmp_path / "ledger.db") as ledger:
        entry = register(
            ledger, "h", predict="A > B", plan=Plan(**{**PLAN, **plan}), pilot_a=pilot[0],
            pilot_b=pilot[1],
        )  # fmt: skip
        result = verdict(ledger, entry, a=data[0], b=data[1])
    return result


@pytest.mark.check("verdicts.deviation.judged-on-pilot", planted=True)
def test_a_verdict_that_the_items_outside_the_pilot_do_not_give_is_judged_on_pilot(tmp_path):
    a, b = _arms(1, 0.35, 0.0)  # the pilot's half carries the whole gain
    pilot = (_rows(a, slice(0, N // 2)), _rows(b, slice(0, N // 2)))
    result = _deviations(tmp_path, pilot, (a, b))
    assert result.verdict == "confirmed"
    [found] = result.deviations
    assert found["kind"] == "judged-on-pilot"
    assert found["observed"]["share"] == 0.5
    assert found["observed"]["verdict_outside_pilot"] != "confirmed"
    assert result.headline.startswith("#1 confirmed, DEVIATING FROM ITS PLAN (1: judged-on-pilot)")


@pytest.mark.check("verdicts.deviation.judged-on-pilot", healthy=True)
def test_pilot_items_scored_again_are_new_results(tmp_path):
    a, b = _arms(1, 0.35, 0.0)
    rerun_a, rerun_b = _arms(2, 0.35, 0.0)  # the same items, run again: other answers
    pilot = (_rows(rerun_a, slice(0, N // 2)), _rows(rerun_b, slice(0, N // 2)))
    result = _deviations(tmp_path, pilot, (a, b))
    assert result.verdict == "confirmed" and result.deviations == []
    [check] = [f for f in result.findings if f.check == "deviation.judged-on-pilot"]
    assert "scored again" in check.message and "(50%)" in check.message


@pytest.mark.check("verdicts.design.pilot", planted=True)
def test_a_pilot_as_large_as_the_plan_fails_the_review():
    a, b = _arms(3, 0.1, 0.1)
    found = {f.check: f for f in review(Plan(**PLAN), pilot_a=a, pilot_b=b).findings}
    assert found["design.pilot"].status == "fail"
    assert "as many as the 400 planned" in found["design.pilot"].message
    assert len(found["design.pilot"].evidence["rows"]) == N  # sealed with the plan


@pytest.mark.check("verdicts.design.pilot", healthy=True)
def test_a_pilot_of_a_sample_passes_the_review():
    a, b = _arms(3, 0.1, 0.1)
    pilot = (_rows(a, slice(0, 60)), _rows(b, slice(0, 60)))
    found = {f.check: f for f in review(Plan(**PLAN), pilot_a=pilot[0], pilot_b=pilot[1]).findings}
    assert found["design.pilot"].status == "pass"
    assert "60 paired items (15% of the 400 planned)" in found["design.pilot"].message


def _mde(finding) -> float:
    return finding.evidence.get("mde", finding.evidence.get("mde_worst"))


@pytest.mark.check("verdicts.design.family", "verdicts.design.power", planted=True)
def test_the_review_plans_alpha_over_the_members_the_family_has_registered(tmp_path):
    plan = Plan(**{**PLAN, "margin": 0.05, "variance": 0.5, "family": "tasks"})
    with labcoat.Ledger(tmp_path / "ledger.db") as ledger:
        entries = [register(ledger, f"h{i}", predict="A > B", plan=plan) for i in range(3)]
        found = {f.check: f for f in plan_review(ledger, entries[-1]).findings}
    as_three = {f.check: f for f in review(plan.revised(family_size=3)).findings}
    assert found["design.family"].status == "warn"
    assert "holds 3 registered hypotheses" in found["design.family"].message
    assert "declare family_size = 3" in found["design.family"].message
    assert _mde(found["design.power"]) == pytest.approx(_mde(as_three["design.power"]))
    assert "over the 3 hypotheses registered in family 'tasks' (declared family_size 1)" in (
        found["design.power"].message
    )


@pytest.mark.check("verdicts.design.family", "verdicts.design.power", healthy=True)
def test_a_family_registered_as_declared_is_planned_as_declared(tmp_path):
    plan = Plan(**{**PLAN, "margin": 0.05, "variance": 0.5, "family": "tasks", "family_size": 3})
    with labcoat.Ledger(tmp_path / "ledger.db") as ledger:
        entries = [register(ledger, f"h{i}", predict="A > B", plan=plan) for i in range(3)]
        found = {f.check: f for f in plan_review(ledger, entries[-1]).findings}
    assert found["design.family"].status == "pass"
    assert "registered in family" not in found["design.power"].message
    assert _mde(found["design.power"]) == pytest.approx(_mde(review(plan).findings[0]))
