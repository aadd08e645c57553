"""What a verdict reads: repeated ids, scores outside the plan's bounds, and plan fields set
from the shell, unset included (each a planted case beside its healthy twin)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from labcoat.errors import InputError
from labcoat.verdicts import Plan, analyse
from labcoat.verdicts.plan import parse_fields

from .test_verdict import BASE, _csv, arms


def _register(cli, ledger, items, *fields):
    args = ["metric=accuracy", "column=correct", "id=question_id", "comparison=superiority"]
    args += [f"items={items}", *fields]
    added = cli(
        "ledger", "add", "A beats B", "--predict", "A > B", "--ledger", ledger,
        *[x for f in args for x in ("--plan-field", f)], "--json",
    )  # fmt: skip
    assert added.code == 0, added.err
    return json.loads(added.out)["id"]


def test_repeated_ids_name_the_fix_a_verdict_has(cli, tmp_path):
    a, b = arms(200, 0.8, 0.5)
    a = {"question_id": a.pop("qid"), **a}
    b = {"question_id": b.pop("qid"), **b}
    ledger = tmp_path / "l.db"
    entry = _register(cli, ledger, 200)
    fb = _csv(tmp_path / "b.csv", b)
    dup = {k: list(v) + list(v[:5]) for k, v in a.items()}  # five items twice
    got = cli("verdict", entry, "--a", _csv(tmp_path / "dup.csv", dup), "--b", fb, "--ledger",
              ledger)  # fmt: skip
    assert got.code == 2 and got.err.count("\n") == 1
    assert "appear on more than one row" in got.err and "--duplicates" not in got.err
    assert "seed" in got.err  # the real fix: a seed column and the plan's seeds
    healthy = cli("verdict", entry, "--a", _csv(tmp_path / "a.csv", a), "--b", fb, "--ledger",
                  ledger)  # fmt: skip
    assert healthy.code == 0, healthy.err


def test_a_score_outside_an_accuracy_plans_bounds_is_refused():
    a, b = arms(200, 0.8, 0.5)
    plan = Plan(**BASE, items=200)
    planted = {**a, "correct": np.where(np.arange(200) == 7, 3, a["correct"])}
    with pytest.raises(InputError, match=r"1 score\(s\) outside the plan's bounds \[0, 1\]"):
        analyse(plan, planted, b)
    assert analyse(plan, a, b).verdict == "confirmed"  # the healthy twin
    wide = plan.revised(bounds=(0.0, 5.0))  # bounds registered for that scale: accepted
    assert analyse(wide, planted, b).verdict == "confirmed"
    loss = Plan(**{**BASE, "metric": "loss"}, items=200, better="lower")  # not a share
    unbounded = {**a, "correct": a["correct"] * 3.0}
    assert analyse(loss, b, unbounded).verdict in ("confirmed", "inconclusive", "refuted")


def test_a_plan_field_is_unset_with_an_empty_value_and_none_is_not_a_column():
    assert parse_fields(["cluster="]) == {"cluster": None}
    assert parse_fields(["cluster=topic"]) == {"cluster": "topic"}
    assert parse_fields(['cluster="none"']) == {"cluster": "none"}  # a column called none
    with pytest.raises(InputError, match="to unset 'cluster' write `cluster=`"):
        parse_fields(["cluster=none"])
    with pytest.raises(InputError, match="'metric' is required"):
        parse_fields(["metric="])
    assert parse_fields(["margin="]) == {"margin": 0.0}  # back to its default


def test_the_cli_unsets_a_registered_cluster(cli, tmp_path):
    ledger = tmp_path / "l.db"
    entry = _register(cli, ledger, 200, "cluster=topic")
    shown = cli("ledger", "plan", entry, "--ledger", ledger, "--plan-field", "cluster=", "--json")
    assert shown.code == 0, shown.err
    data = json.loads(shown.out)
    assert data["revision"] == 2 and data["plan"].get("cluster") is None
    refused = cli("ledger", "plan", entry, "--ledger", ledger, "--plan-field", "cluster=none")
    assert refused.code == 2 and "cluster=" in refused.err and refused.err.count("\n") == 1
