"""Plans and verdicts on both backends: sealed, chained, and caught when edited by hand."""

from __future__ import annotations

from labcoat.verdicts import Plan

from .tamper import raw_sql

PLAN = Plan(metric="accuracy", column="c", id="q", comparison="superiority", items=4)


def test_plans_and_verdicts_are_chained_on_both_backends(ledger, location):
    entry = ledger.hypothesis("A beats B", predict="A > B", plan=PLAN)
    a = {"q": ["1", "2", "3", "4"], "c": [1, 1, 1, 0]}
    b = {"q": ["1", "2", "3", "4"], "c": [0, 1, 0, 0]}
    result = ledger.verdict(entry, a=a, b=b)
    assert ledger.plan(entry) == PLAN and result.deviations == []
    [stored] = ledger.verdicts(entry)
    assert stored.verdict == result.verdict and stored.result["n"]["paired"] == 4
    assert ledger.verify().ok
    raw_sql(location, "UPDATE entry_verdicts SET verdict = 'refuted'")
    assert any(b.table == "entry_verdicts" for b in ledger.verify().breaks)
