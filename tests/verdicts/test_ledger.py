"""The plan sealed into the ledger's hash chain, revisions, the migration, and where planned and
unplanned verdicts show (``ledger list``, the report's ledger page)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from labcoat import verdicts
from labcoat.ledger import Ledger
from labcoat.verdicts import Plan
from tests.ledger.tamper import raw_sql

PLAN = Plan(metric="accuracy", column="correct", id="qid", comparison="superiority", items=200)


def arms(p_a=0.8, p_b=0.5, n=200):
    rng = np.random.default_rng(0)
    ids = [f"q{i}" for i in range(n)]
    return (
        {"qid": ids, "correct": (rng.random(n) < p_a).astype(int)},
        {"qid": ids, "correct": (rng.random(n) < p_b).astype(int)},
    )


@pytest.fixture
def book(tmp_path):
    with Ledger(tmp_path / "ledger.db") as opened:
        yield opened


def test_a_plan_is_sealed_and_an_edit_behind_labcoats_back_is_caught(book):
    entry = verdicts.register(book, "A beats B", predict="A > B", plan=PLAN)
    a, b = arms()
    verdicts.verdict(book, entry, a=a, b=b)
    result = book.verify()
    assert result.ok and result.rows["entry_plans"] == 1 and result.rows["entry_verdicts"] == 1
    assert book.entry(entry).verdict == "confirmed"
    assert [p.order for p in result.predictions] == ["before"]  # the prediction came first
    raw_sql(str(book.storage.path), "UPDATE entry_plans SET plan = replace(plan, '0.05', '0.5')")
    broken = book.verify()
    assert not broken.ok
    assert any(b.table == "entry_plans" and b.kind == "edited" for b in broken.breaks)


def test_an_edited_verdict_row_is_caught(book):
    entry = verdicts.register(book, "A beats B", predict="A > B", plan=PLAN)
    a, b = arms()
    verdicts.verdict(book, entry, a=a, b=b)
    raw_sql(str(book.storage.path), "UPDATE entry_verdicts SET verdict = 'refuted'")
    assert any(b.table == "entry_verdicts" for b in book.verify().breaks)


def test_a_change_is_a_new_revision_never_an_edit(book):
    entry = verdicts.register(book, "A beats B", predict="A > B", plan=PLAN)
    verdicts.revise_plan(book, entry, margin=0.01)
    history = verdicts.plan_history(book, entry)
    assert [h.revision for h in history] == [1, 2]
    assert history[0].plan.margin == 0.0 and history[1].plan.margin == 0.01
    assert verdicts.current_plan(book, entry).margin == 0.01
    assert [e.change for e in book.history(entry)] == ["created", "plan revised"]
    assert book.verify().ok


def test_list_and_report_mark_planned_deviating_and_unplanned_verdicts(book, cli, tmp_path):
    a, b = arms()
    planned = verdicts.register(book, "planned", predict="A > B", plan=PLAN)
    verdicts.verdict(book, planned, a=a, b=b)
    deviating = verdicts.register(book, "deviating", predict="A > B", plan=PLAN)
    verdicts.verdict(book, deviating, a=a, b=b, column="correct", metric="exact_match")
    by_hand = book.hypothesis("by hand", predict="A > B")
    book.resolve(by_hand, result="looked good", verdict="confirmed")
    overridden = verdicts.register(book, "overridden", predict="A > B", plan=PLAN)
    verdicts.verdict(book, overridden, a=a, b=b)
    book.resolve(overridden, result="I disagree", verdict="refuted")  # by hand, after the plan
    verdicts.register(book, "registered", predict="A > B", plan=PLAN)
    book.hypothesis("open", predict="A > B")
    expected = ["planned", "deviating", "unplanned", "unplanned", "registered", ""]
    got = cli("ledger", "list", "--ledger", book.location, "--json")
    assert [e["plan"] for e in json.loads(got.out)["entries"]] == expected
    table = cli("ledger", "list", "--ledger", book.location)
    assert "deviating" in table.out and "unplanned" in table.out
    from labcoat.report.build import from_ledger

    html = from_ledger(book).to_html()
    for status in ("planned", "deviating", "unplanned"):
        assert f'data-plan="{status}"' in html
    assert "[verdict deviating from its plan]" in html and "[unplanned verdict]" in html


def test_an_older_ledger_is_migrated_and_keeps_verifying(tmp_path):
    path = tmp_path / "old.db"
    with Ledger(path) as book:
        book.hypothesis("old", predict="p")
    for sql in (
        "DROP TABLE entry_plans",
        "DROP TABLE entry_verdicts",
        "DELETE FROM chain_heads WHERE name IN ('entry_plans', 'entry_verdicts')",
        "DELETE FROM _labcoat_migrations WHERE name = 'm005_plans_and_verdicts'",
    ):
        raw_sql(str(path), sql)
    with Ledger(path) as book:
        assert book.verify().ok
        entry = verdicts.register(book, "new", predict="p", plan=PLAN)
        assert (
            verdicts.current_plan(book, entry) == PLAN
            and verdicts.current_plan(book, 1) is None
            and book.verify().ok
        )


def test_ledger_plan_shows_and_revises(cli, tmp_path):
    ledger = tmp_path / "l.db"
    PLAN.write(tmp_path / "plan.toml")
    assert (
        cli(
            "ledger",
            "add",
            "h",
            "--predict",
            "p",
            "--plan",
            tmp_path / "plan.toml",
            "--ledger",
            ledger,
        ).code
        == 0
    )
    shown = cli("ledger", "plan", "1", "--ledger", ledger, "--plan-field", "margin=0.02", "--json")
    data = json.loads(shown.out)
    assert data["revision"] == 2 and data["plan"]["margin"] == 0.02
    text = cli("ledger", "plan", "1", "--ledger", ledger)
    assert text.code == 0 and "margin = 0.02" in text.out


def test_ledger_show_carries_the_plan_and_the_computed_verdicts(book, cli):
    entry = verdicts.register(book, "A beats B", predict="A > B", plan=PLAN)
    a, b = arms()
    verdicts.verdict(book, entry, a=a, b=b)
    data = json.loads(cli("ledger", "show", entry.id, "--ledger", book.location, "--json").out)
    assert data["plan"] == PLAN.to_dict()
    [verdict] = data["verdicts"]
    assert verdict["verdict"] == "confirmed" and set(verdict["fingerprints"]) == {"a", "b"}


def test_the_json_export_carries_plans_and_verdicts(book):
    entry = verdicts.register(book, "A beats B", predict="A > B", plan=PLAN)
    a, b = arms()
    verdicts.verdict(book, entry, a=a, b=b)
    [exported] = json.loads(book.export("json"))["entries"]
    assert exported["plans"][0]["revision"] == 1 and exported["plans"][0]["items"] == 200
    assert exported["verdicts"][0]["verdict"] == "confirmed"


def test_the_ledgers_judging_methods_are_deprecated_delegates_for_one_release(book):
    a, b = arms()
    with pytest.warns(DeprecationWarning, match=r"Ledger.hypothesis\(plan=\).*verdicts.register"):
        entry = book.hypothesis("A beats B", predict="A > B", plan=PLAN)
    with pytest.warns(DeprecationWarning, match="labcoat.verdicts.revise_plan"):
        book.revise_plan(entry, margin=0.01)
    with pytest.warns(DeprecationWarning, match="labcoat.verdicts.current_plan"):
        assert book.plan(entry) == verdicts.current_plan(book, entry)
    with pytest.warns(DeprecationWarning, match="labcoat.verdicts.plan_history"):
        assert len(book.plan_history(entry)) == 2
    with pytest.warns(DeprecationWarning, match="labcoat.verdicts.plan_review"):
        assert book.plan_review(entry) == verdicts.plan_review(book, entry)
    with pytest.warns(DeprecationWarning, match="labcoat.verdicts.verdict"):
        result = book.verdict(entry, a=a, b=b)
    assert result.verdict == "confirmed" and [v.verdict for v in book.verdicts(entry)] == [
        "confirmed"
    ]


def test_a_family_counts_the_latest_pvalue_of_each_other_member_and_every_current_plan(book):
    """Computed on this side from the rows the ledger stores: the ledger does not read them."""
    from labcoat.verdicts.judge import family_members, family_pvalues

    a, b = arms()
    family = PLAN.revised(family="tasks", family_size=3)
    one = verdicts.register(book, "one", predict="A > B", plan=family)
    two = verdicts.register(book, "two", predict="A > B", plan=family)
    verdicts.register(book, "three", predict="A > B", plan=PLAN)
    verdicts.verdict(book, one, a=a, b=b)
    verdicts.verdict(book, one, a=b, b=a)  # its latest p-value replaces the first
    latest = book.verdicts(one)[-1].pvalue
    assert family_pvalues(book.verdicts(), "tasks", two.id) == [latest]
    assert family_pvalues(book.verdicts(), "tasks", one.id) == []
    assert family_members(book.plans(), "tasks") == 2
    verdicts.revise_plan(book, two, family=None)  # a revision leaves the family
    assert family_members(book.plans(), "tasks") == 1
