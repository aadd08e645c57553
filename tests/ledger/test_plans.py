"""Plans and verdicts on both backends: stored as plain JSON without being read, sealed,
chained, and caught when edited by hand. (Judging them is labcoat.verdicts'; see
tests/verdicts/test_ledger.py.)"""

from __future__ import annotations

import pytest

from labcoat.errors import InputError

from .tamper import raw_sql

PLAN = {"metric": "accuracy", "column": "c", "id": "q", "items": 4, "family": "tasks"}
REVIEW = [{"check": "design.power", "status": "pass", "message": "ok"}]
VERDICT = {"verdict": "confirmed", "pvalue": 0.01, "n": {"paired": 4}, "deviations": []}


def test_plans_and_verdicts_are_stored_as_given_and_chained_on_both_backends(ledger, location):
    entry = ledger.hypothesis("A beats B", predict="A > B", sealed_plan=PLAN, review=REVIEW)
    assert ledger.history(entry) == [ledger.entry(entry)]  # one transaction, one revision
    ledger.seal_plan(entry, {**PLAN, "items": 8})
    [first, second] = ledger.plans(entry)
    assert (first.revision, first.plan, first.review) == (1, PLAN, REVIEW)
    assert (second.revision, second.plan["items"], second.review) == (2, 8, [])
    assert [e.change for e in ledger.history(entry)] == ["created", "plan revised"]
    stored = ledger.record_verdict(
        entry,
        {**VERDICT, "fingerprints": {"a": "x"}},
        summary="+1",
        plan_revision=2,
        family="tasks",
    )
    assert ledger.entry(entry).verdict == "confirmed" and ledger.entry(entry).result == "+1"
    [again] = ledger.verdicts(entry)
    assert again == stored and again.result["n"]["paired"] == 4 and again.fingerprints == {"a": "x"}
    assert (again.family, again.pvalue, again.plan_revision) == ("tasks", 0.01, 2)
    assert ledger.plan_status([ledger.entry(entry)]) == {entry.id: "planned"}
    assert ledger.verify().ok
    raw_sql(location, "UPDATE entry_verdicts SET verdict = 'refuted'")
    assert any(b.table == "entry_verdicts" for b in ledger.verify().breaks)


def test_every_plan_of_every_entry_and_an_unknown_entry(ledger):
    one = ledger.hypothesis("one", predict="p", sealed_plan=PLAN)
    ledger.hypothesis("no plan", predict="p")
    two = ledger.hypothesis("two", predict="p", sealed_plan={**PLAN, "family": None})
    assert [p.entry_id for p in ledger.plans()] == [one.id, two.id]
    assert ledger.plans(2) == []
    with pytest.raises(InputError):
        ledger.plans(99)
