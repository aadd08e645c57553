"""`ledger sql` is read-only; corrupt, foreign and newer ledgers are refused in one line."""

from __future__ import annotations

import os
import sqlite3

import pytest

from labcoat.errors import LabcoatError
from labcoat.ledger import Ledger, LedgerError, ReadOnlyError
from labcoat.ledger.store.location import default_location, project_root

from .tamper import raw_sql

WRITES = [
    "INSERT INTO chain_heads (name, last_id, hash) VALUES ('x', 0, 'y')",
    "UPDATE entry_revisions SET title = 'rewritten'",
    "DELETE FROM entry_revisions",
    "DROP TABLE events",
    "CREATE TABLE sneaky (x INTEGER)",
    "WITH gone AS (DELETE FROM events RETURNING id) SELECT count(*) FROM gone",
]


@pytest.fixture
def one_entry(ledger):
    ledger.hypothesis("kept", predict="unchanged")
    return ledger


def test_select_works(one_entry):
    result = one_entry.sql("SELECT entry_id, title FROM entry_revisions WHERE title = ?", ["kept"])
    assert result.columns == ["entry_id", "title"] and result.rows == [(1, "kept")]
    assert result.records() == [{"entry_id": 1, "title": "kept"}]


@pytest.mark.parametrize("statement", WRITES)
def test_writes_are_refused(one_entry, statement):
    # refused as a write, or (SQLite has no data-modifying WITH) as not even valid
    with pytest.raises(LabcoatError) as info:
        one_entry.sql(statement)
    if "WITH" not in statement or one_entry.dialect == "postgresql":
        assert isinstance(info.value, ReadOnlyError)
    assert "\n" not in str(info.value)
    assert [e.title for e in one_entry.entries()] == ["kept"]
    assert one_entry.verify().ok


def test_sqlite_reader_cannot_attach_another_file(tmp_path):
    ledger = Ledger(str(tmp_path / "ledger.db"))
    with pytest.raises(ReadOnlyError):
        ledger.sql(f"ATTACH DATABASE '{tmp_path / 'other.db'}' AS other")
    assert not (tmp_path / "other.db").exists()


def test_postgres_read_only_transaction_cannot_be_switched_back(pg_url):
    ledger = Ledger(pg_url)
    ledger.hypothesis("kept", predict="unchanged")
    for statement in (
        "SET TRANSACTION READ WRITE",
        "COMMIT; DELETE FROM entry_revisions",
        "SET default_transaction_read_only = off; DELETE FROM entry_revisions",
    ):
        with pytest.raises(LabcoatError):
            ledger.sql(statement)
    assert [e.title for e in ledger.entries()] == ["kept"]
    ledger.close()


def test_cli_sql_refuses_writes_with_one_line(cli, location):
    assert cli("ledger", "add", "kept", "--predict", "p", "--ledger", location).code == 0
    res = cli("ledger", "sql", "DELETE FROM entry_revisions", "--ledger", location)
    assert res.code == 2
    assert res.err.count("\n") == 1 and res.err.startswith(
        "labcoat: error: ledger sql is read-only"
    )
    ok = cli(
        "ledger", "sql", "SELECT count(*) AS n FROM entry_revisions", "--ledger", location, "--json"
    )
    assert ok.code == 0 and '"rows": [[1]]' in ok.out


def test_sql_time_limit(tmp_path):
    ledger = Ledger(str(tmp_path / "ledger.db"))
    slow = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
    with pytest.raises(LedgerError, match="ran past 0.2 s"):
        ledger.sql(slow, timeout_s=0.2)


# ---- opening what is not a ledger --------------------------------------------------------


def _one_line_error(cli, path, *extra):
    res = cli("ledger", "list", "--ledger", str(path), *extra)
    assert res.code == 2, res
    assert res.err.count("\n") == 1 and res.err.startswith("labcoat: error: "), res.err
    assert "Traceback" not in res.err
    return res.err


def test_corrupt_file_gets_one_line(cli, tmp_path):
    path = tmp_path / "ledger.db"
    path.write_bytes(os.urandom(8192))
    assert "not a readable SQLite database" in _one_line_error(cli, path)
    with pytest.raises(LedgerError):
        Ledger(path)


def test_text_file_gets_one_line(cli, tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("these are my notes, not a database\n" * 200)
    assert "not a readable SQLite database" in _one_line_error(cli, path)
    assert path.read_text().startswith("these are my notes")  # left as it was


def test_damaged_ledger_gets_one_line(cli, tmp_path):
    path = tmp_path / "ledger.db"
    with Ledger(path) as ledger:
        for i in range(300):
            ledger.hypothesis(f"entry {i}" * 20, predict="p" * 200)
    data = bytearray(path.read_bytes())
    data[4096 : len(data) - 4096] = os.urandom(len(data) - 8192)  # keep the header, wreck the pages
    path.write_bytes(bytes(data))
    err = _one_line_error(cli, path)
    assert "ledger" in err


def test_foreign_sqlite_database_is_refused_and_untouched(cli, tmp_path):
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE users (id INTEGER, name TEXT)")
    err = _one_line_error(cli, path)
    assert "not a labcoat ledger (it holds: users)" in err
    with sqlite3.connect(path) as conn:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert names == {"users"}  # no ledger tables were added
    res = cli("ledger", "add", "t", "--predict", "p", "--ledger", str(path))
    assert res.code == 2


def test_directory_is_refused(cli, tmp_path):
    assert "is a directory" in _one_line_error(cli, tmp_path)


def test_ledger_from_a_newer_labcoat_is_refused(tmp_path, cli):
    path = str(tmp_path / "ledger.db")
    Ledger(path).close()
    raw_sql(path, "INSERT INTO _labcoat_migrations VALUES ('ledger', 'm999_future', '2099-01-01')")
    assert "written by a newer labcoat" in _one_line_error(cli, path)


def test_unknown_url_scheme(cli):
    res = cli("ledger", "list", "--ledger", "mysql://db/x")
    assert res.code == 2 and "not a location labcoat can open" in res.err


def test_unreachable_postgres_gets_one_line(cli):
    pytest.importorskip("psycopg")
    res = cli("ledger", "list", "--ledger", "postgresql://nobody:secret@127.0.0.1:1/none")
    assert res.code == 2 and res.err.count("\n") == 1
    assert "secret" not in res.err and "***" in res.err


# ---- where the ledger lives --------------------------------------------------------------


def test_reading_commands_do_not_create_a_ledger(cli, isolated):
    res = cli("ledger", "list")
    assert res.code == 2 and "no ledger here yet" in res.err
    assert not (isolated / ".labcoat").exists()


def test_default_location_is_the_git_root(isolated, monkeypatch):
    (isolated / ".git").mkdir()
    sub = isolated / "src" / "pkg"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    assert project_root() == isolated
    assert default_location() == str(isolated / ".labcoat" / "ledger.db")
    monkeypatch.setenv("LABCOAT_LEDGER", str(isolated / "elsewhere.db"))
    assert default_location() == str(isolated / "elsewhere.db")


def test_default_location_without_git_is_the_cwd(isolated):
    assert default_location() == str(isolated / ".labcoat" / "ledger.db")


def test_existing_returns_none_and_creates_nothing(isolated):
    assert Ledger.existing() is None
    assert not (isolated / ".labcoat").exists()
    Ledger().close()  # the user creates one
    found = Ledger.existing()
    assert found is not None and found.location == str(isolated / ".labcoat" / "ledger.db")
    found.close()


def test_an_empty_file_is_no_ledger_for_reading_commands(cli, tmp_path):
    path = tmp_path / "notes.txt"
    path.write_bytes(b"")
    assert "no ledger here yet (the file is empty)" in _one_line_error(cli, path)
    assert path.read_bytes() == b""  # not turned into a database
    assert Ledger.existing(path) is None
