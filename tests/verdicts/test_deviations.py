"""Deviations are found, not confessed: each kind has a planted case that must be flagged with
that kind, and a by-the-plan twin that must not be flagged at all."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from labcoat import verdicts
from labcoat.ledger import Ledger
from labcoat.verdicts import Plan, analyse

N, CLUSTER, SEEDS = 60, 6, 2
PLAN = Plan(
    metric="accuracy",
    column="correct",
    id="qid",
    comparison="superiority",
    items=N,
    cluster="topic",
    seeds=SEEDS,
    seed_column="seed",
)


def arm(seed: int, *, p: float, items=range(N), seeds=range(SEEDS)) -> dict[str, list]:
    rng = np.random.default_rng(seed)
    rows: dict[str, list] = {"qid": [], "topic": [], "seed": [], "correct": [], "other": []}
    for s in seeds:
        for i in items:
            rows["qid"].append(f"q{i}")
            rows["topic"].append(f"t{i % CLUSTER}")
            rows["seed"].append(str(s))
            rows["correct"].append(int(rng.random() < p))
            rows["other"].append(float(rng.random()))
    return rows


A, B = arm(1, p=0.7), arm(2, p=0.5)


def kinds(result) -> set[str]:
    return {d["kind"] for d in result.deviations}


@pytest.mark.check(
    "verdicts.deviation.column",
    "verdicts.deviation.dropped",
    "verdicts.deviation.items",
    "verdicts.deviation.metric",
    "verdicts.deviation.seeds",
    healthy=True,
)
def test_the_by_the_plan_analysis_deviates_from_nothing():
    result = analyse(PLAN, A, B)
    assert result.deviations == [] and result.planned
    assert result.headline.endswith("by the registered plan")


@pytest.mark.check(
    "verdicts.deviation.column",
    "verdicts.deviation.dropped",
    "verdicts.deviation.items",
    "verdicts.deviation.metric",
    "verdicts.deviation.seeds",
    planted=True,
)
@pytest.mark.parametrize(
    "kind, a, b, options, plan_changes",
    [
        ("metric", A, B, dict(metric="exact_match"), {}),
        ("column", A, B, dict(column="other"), {}),
        ("items", arm(1, p=0.7, items=range(50)), arm(2, p=0.5, items=range(50)), {}, {}),
        ("items", A, B, {}, dict(items=50)),  # more items than planned
        ("dropped", A, arm(2, p=0.5, items=range(5, N)), {}, {}),
        ("seeds", arm(1, p=0.7, seeds=range(3)), arm(2, p=0.5, seeds=range(3)), {}, {}),
        ("seeds", arm(1, p=0.7, seeds=range(1)), arm(2, p=0.5, seeds=range(1)), {}, {}),
        (
            "seeds",
            arm(1, p=0.7, seeds=(0, 2)),
            arm(2, p=0.5, seeds=(0, 2)),
            {},
            dict(seeds_a=["0", "1"], seeds_b=["0", "1"]),
        ),
    ],
)
def test_a_planted_deviation_is_found_in_the_data(kind, a, b, options, plan_changes):
    result = analyse(PLAN.revised(**plan_changes), a, b, **options)
    assert kind in kinds(result)
    found = next(d for d in result.deviations if d["kind"] == kind)
    assert found["planned"] != found["observed"]
    assert result.headline.split(", ", 1)[1].startswith("DEVIATING FROM ITS PLAN")
    assert result.to_dict()["deviations"] == result.deviations


def test_items_the_plan_excluded_are_no_deviation():
    b = arm(2, p=0.5, items=range(5, N))
    planned = PLAN.revised(exclude=[f"q{i}" for i in range(5)], items=N - 5)
    result = analyse(planned, A, b)
    assert result.deviations == [] and result.n == {"a": 55, "b": 55, "paired": 55}


def _ledger_entry(tmp_path, plan=PLAN) -> tuple[Ledger, int]:
    book = Ledger(tmp_path / "ledger.db")
    return book, verdicts.register(book, "A beats B", predict="A > B", plan=plan).id


def _write(tmp_path, name: str, rows: dict[str, list]) -> str:
    import csv

    path = tmp_path / name
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(rows)
        w.writerows(zip(*rows.values()))
    return str(path)


@pytest.mark.check("verdicts.deviation.after-verdict", planted=True, healthy=True)
def test_results_produced_after_a_verdict_and_its_twin(tmp_path):
    book, entry = _ledger_entry(tmp_path)
    with book:
        a, b = _write(tmp_path, "a.csv", A), _write(tmp_path, "b.csv", B)
        assert verdicts.verdict(book, entry, a=a, b=b).deviations == []
        assert (
            verdicts.verdict(book, entry, a=a, b=b).deviations == []
        )  # the same results judged again
        b2 = _write(tmp_path, "b2.csv", arm(3, p=0.5))
        assert kinds(verdicts.verdict(book, entry, a=a, b=b2)) == {"after-verdict"}


@pytest.mark.check("verdicts.deviation.look", planted=True, healthy=True)
def test_a_look_under_a_fixed_plan_and_a_sequential_plan_within_its_looks(tmp_path):
    half_a, half_b = arm(1, p=0.7, items=range(30)), arm(2, p=0.5, items=range(30))
    book, entry = _ledger_entry(tmp_path)
    with book:
        assert "items" in kinds(
            verdicts.verdict(book, entry, a=half_a, b=half_b)
        )  # the interim look
        assert {"look", "after-verdict"} <= kinds(verdicts.verdict(book, entry, a=A, b=B))
    sequential = PLAN.revised(stopping="sequential", looks=2, test="sequential")
    (tmp_path / "s").mkdir()
    book, entry = _ledger_entry(tmp_path / "s", sequential)
    with book:
        assert verdicts.verdict(book, entry, a=half_a, b=half_b).deviations == []
        assert verdicts.verdict(book, entry, a=A, b=B).deviations == []
        third = arm(1, p=0.7, items=range(45)), arm(2, p=0.5, items=range(45))
        assert kinds(verdicts.verdict(book, entry, a=third[0], b=third[1])) == {"look"}


@pytest.mark.check(
    "verdicts.deviation.alpha",
    "verdicts.deviation.margin",
    "verdicts.deviation.revised",
    "verdicts.deviation.revised-after-data",
    planted=True,
    healthy=True,
)
@pytest.mark.parametrize(
    "field, first, then, kind",
    [
        ("margin", 0.05, 0.1, "margin"),
        ("alpha", 0.1, 0.2, "alpha"),
        ("sides", "two-sided", "one-sided", "revised"),
        ("comparison", "non-inferiority", "equivalence", "revised"),
    ],
)
def test_the_plan_changed_by_a_revision_and_its_twin(tmp_path, field, first, then, kind):
    registered = PLAN.revised(
        **{field: first, **({"margin": 0.05} if field == "comparison" else {})}
    )
    (tmp_path / "before").mkdir()
    book, entry = _ledger_entry(tmp_path, registered)
    with book:
        a, b = _write(tmp_path, "a.csv", A), _write(tmp_path, "b.csv", B)
        assert verdicts.verdict(book, entry, a=a, b=b).deviations == []  # the twin
        verdicts.revise_plan(book, entry, **{field: then})  # after the results existed
        result = verdicts.verdict(book, entry, a=a, b=b)
        assert kinds(result) == {kind, "revised-after-data"}
        found = next(d for d in result.deviations if d["kind"] == kind)
        if kind == "revised":
            assert (found["planned"], found["observed"]) == ({field: first}, {field: then})
        else:
            assert (found["planned"], found["observed"]) == (first, then)
    # a revision the ledger cannot place after the data still is no registered plan
    book, entry = _ledger_entry(tmp_path / "before", registered)
    with book:
        verdicts.revise_plan(book, entry, **{field: then})
        time.sleep(0.01)
        a, b = _write(tmp_path, "a2.csv", A), _write(tmp_path, "b2.csv", B)
        assert kinds(verdicts.verdict(book, entry, a=a, b=b)) == {kind}


@pytest.mark.check("verdicts.deviation.registered-late", planted=True, healthy=True)
def test_results_older_than_the_plan_deviate_and_newer_ones_pass(tmp_path):
    a, b = _write(tmp_path, "a.csv", A), _write(tmp_path, "b.csv", B)
    old = time.time() - 3600
    os.utime(a, (old, old))
    os.utime(b, (old, old))
    book, entry = _ledger_entry(tmp_path)
    with book:
        late = verdicts.verdict(book, entry, a=a, b=b)
        assert kinds(late) == {"registered-late"}
        assert "DEVIATING FROM ITS PLAN (1: registered-late)" in late.headline
        assert late.exit_code == 0  # the registered plan gives the same verdict: named, held
        fresh = _ledger_entry_again(book)
        time.sleep(0.01)
        # new results (the same ones were judged under the first entry: judged-before)
        a2, b2 = _write(tmp_path, "a2.csv", arm(5, p=0.7)), _write(tmp_path, "b2.csv", B)
        assert verdicts.verdict(book, fresh, a=a2, b=b2).deviations == []


def _ledger_entry_again(book: Ledger) -> int:
    return verdicts.register(book, "again", predict="A > B", plan=PLAN).id


@pytest.mark.check("verdicts.deviation.family", planted=True, healthy=True)
def test_a_family_that_grew_beyond_its_declared_size_and_its_twin(tmp_path):
    book, _ = _ledger_entry(tmp_path, PLAN.revised(family="tasks", family_size=2))
    with book:
        second = verdicts.register(
            book, "t2", predict="A > B", plan=PLAN.revised(family="tasks", family_size=2)
        ).id
        assert verdicts.verdict(book, second, a=A, b=B).deviations == []
        third = verdicts.register(
            book, "t3", predict="A > B", plan=PLAN.revised(family="tasks", family_size=2)
        ).id
        result = verdicts.verdict(book, third, a=arm(3, p=0.7), b=B)
        assert kinds(result) == {"family"}
        assert result.deviations[0]["planned"] == 2 and result.deviations[0]["observed"] == 3


def _revisions(*plans: Plan) -> list:
    from labcoat.verdicts import PlanRevision

    return [PlanRevision(i + 1, f"2026-01-0{i + 1}T00:00:00+00:00", p) for i, p in enumerate(plans)]


def test_a_verdict_the_registered_plan_would_not_give_exits_1_and_says_what_it_gives():
    lenient = PLAN.revised(margin=0.0)
    strict = PLAN.revised(margin=0.5)  # registered: A cannot beat B by 50 points
    held = analyse(lenient, A, B, revisions=_revisions(lenient))
    assert (held.verdict, held.registered_verdict, held.exit_code) == ("confirmed",) * 2 + (0,)
    moved = analyse(lenient, A, B, revisions=_revisions(strict, lenient))
    assert moved.verdict == "confirmed" and moved.registered_verdict != "confirmed"
    assert moved.exit_code == 1 and not moved.held
    assert moved.headline.endswith(f"; {moved.registered_verdict} by the registered plan")
    # the registered analysis cannot run on these files (its id column is gone): not held
    renamed = {("item" if k == "qid" else k): v for k, v in A.items()}
    renamed_b = {("item" if k == "qid" else k): v for k, v in B.items()}
    revised = lenient.revised(id="item")
    other_id = analyse(revised, renamed, renamed_b, revisions=_revisions(lenient, revised))
    assert other_id.registered_verdict is None and other_id.exit_code == 1
    assert "revised" in kinds(other_id)
    assert other_id.headline.endswith("the registered plan's analysis does not run on these data")


@pytest.mark.check(
    "verdicts.deviation.judged-before", "verdicts.deviation.registered-late", healthy=True
)
def test_two_hypotheses_registered_before_the_results_may_judge_the_same_files(tmp_path):
    book, first = _ledger_entry(tmp_path)
    with book:
        second = verdicts.register(book, "A beats B too", predict="A > B", plan=PLAN).id
        a, b = _write(tmp_path, "a.csv", A), _write(tmp_path, "b.csv", B)
        assert verdicts.verdict(book, first, a=a, b=b).deviations == []
        assert verdicts.verdict(book, second, a=a, b=b).deviations == []  # not judged before
        late = verdicts.register(book, "A beats B, once more", predict="A > B", plan=PLAN).id
        assert kinds(verdicts.verdict(book, late, a=a, b=b)) == {"registered-late", "judged-before"}
