"""Named, recorded, transactional migrations on both backends."""

from __future__ import annotations

import pytest

from labcoat.ledger import Ledger, LedgerError
from labcoat.ledger.store.connection import open_store
from labcoat.ledger.store.migrations import Migrations
from labcoat.ledger.store.schema import LEDGER_MIGRATIONS


def test_duplicate_names_are_refused():
    m = Migrations("demo")

    @m()
    def first(tx):
        pass

    with pytest.raises(ValueError, match="already has a migration named 'first'"):
        m(first)


def test_a_new_ledger_has_every_migration_recorded(ledger):
    names = [a.name for a in LEDGER_MIGRATIONS.applied(ledger.storage)]
    assert (
        names
        == LEDGER_MIGRATIONS.names()
        == [
            "m001_tables",
            "m002_indexes",
            "m003_sealed_on_close",
            "m004_findings_by_entry",
            "m005_plans_and_verdicts",
            "m006_logs",
            "m007_log_blocks",
        ]
    )
    assert LEDGER_MIGRATIONS.pending(ledger.storage) == []
    assert LEDGER_MIGRATIONS.apply(ledger.storage) == []  # applying again does nothing


def test_migrations_run_in_order_once_and_a_failure_rolls_back_with_its_record(location):
    store = open_store(location)
    m = Migrations("demo")
    calls = []

    @m()
    def m1_table(tx):
        calls.append("m1")
        tx.execute("CREATE TABLE demo_things (id INTEGER PRIMARY KEY, name TEXT)")

    @m()
    def m2_broken(tx):
        calls.append("m2")
        tx.execute("ALTER TABLE demo_things ADD COLUMN size INTEGER")
        raise RuntimeError("a bug halfway through")

    with pytest.raises(RuntimeError):
        m.apply(store)
    assert [a.name for a in m.applied(store)] == ["m1_table"]
    assert m.pending(store) == ["m2_broken"]
    with store.read() as tx:  # m2's ALTER was rolled back together with its (absent) record
        columns = [d[0] for d in tx.execute("SELECT * FROM demo_things")._cur.description]
    assert columns == ["id", "name"]

    m._steps["m2_broken"] = lambda tx: (
        calls.append("m2 fixed"),
        tx.execute("ALTER TABLE demo_things ADD COLUMN size INTEGER"),
    )
    assert m.apply(store) == ["m2_broken"]
    assert calls == ["m1", "m2", "m2 fixed"]
    store.close()


def test_unknown_recorded_migrations_are_refused(location):
    Ledger(location).close()
    store = open_store(location)
    with store.write() as tx:
        tx.execute("INSERT INTO _labcoat_migrations VALUES ('ledger', 'm999_future', '2099-01-01')")
    store.close()
    with pytest.raises(LedgerError, match="newer labcoat"):
        Ledger(location)
