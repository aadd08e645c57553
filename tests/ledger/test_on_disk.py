"""The ledger as files on disk: whole after every command, honest about a missing WAL, readable
from read-only media, out of the runs' provenance, and created by `labcoat run`."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from labcoat.ledger import Ledger
from labcoat.ledger.store.connection import SQLiteStore
from tests.fresh_imports import import_fresh
from tests.provenance.test_capture import git, make_repo

from .tamper import raw_sql


def _wal(path: Path) -> Path:
    return path.with_name(path.name + "-wal")


# ---- C: the file alone is the whole ledger once labcoat is done ------------------------------


def test_a_copy_of_the_file_after_a_command_is_the_whole_ledger(cli, tmp_path):
    path = tmp_path / "ledger.db"
    for title in ("first", "second"):
        assert cli("ledger", "add", title, "--predict", "p", "--ledger", path).code == 0
    assert not _wal(path).exists()  # checkpointed and out of WAL mode
    shutil.copy(path, tmp_path / "backup.db")
    with Ledger(tmp_path / "backup.db", create=False) as backup:
        assert [e.title for e in backup.entries()] == ["first", "second"]
        assert backup.verify().ok


EXITS = """
import os, sys
from labcoat.ledger import Ledger
Ledger(sys.argv[1]).close()  # created earlier
ledger = Ledger(sys.argv[1])  # never closed by the program
ledger.hypothesis("kept", predict="in the file")
if sys.argv[2] == "hard":
    os._exit(0)  # no exit handlers run: as if the process were killed
"""


@pytest.mark.parametrize("how", ["normal exit", "hard"])
def test_a_library_ledger_left_open_is_sealed_at_exit(tmp_path, subprocess_env, how):
    path = tmp_path / "ledger.db"
    subprocess.run([sys.executable, "-c", EXITS, str(path), how], env=subprocess_env, check=True)
    backup = tmp_path / "backup.db"
    shutil.copy(path, backup)  # the file alone, as `cp ledger.db backup.db` takes it
    with Ledger(backup, create=False) as copy:
        result = copy.verify()
        if how == "normal exit":
            assert [e.title for e in copy.entries()] == ["kept"] and result.ok
        else:  # the commit lives in ledger.db-wal only: the copy lacks it, and verify says so
            assert copy.entries() == [] and not result.ok
            assert "its -wal file is missing" in result.problems()[0]
    with Ledger(path, create=False) as original:  # beside its WAL, nothing was lost
        assert [e.title for e in original.entries()] == ["kept"] and original.verify().ok


def test_verify_notes_commits_still_in_the_wal_while_a_writer_is_open(tmp_path):
    path = tmp_path / "ledger.db"
    with Ledger(path) as writer:
        writer.hypothesis("being written", predict="p")
        with Ledger(path, create=False) as reader:
            during = reader.verify()
        assert (
            during.ok and "holds" in during.notes[0] and "not yet in ledger.db" in during.notes[0]
        )
    with Ledger(path, create=False) as reader:
        after = reader.verify()
    assert after.ok and after.notes == [] and after.storage == []


def test_a_ledger_from_labcoat_0_1_left_in_wal_mode_is_no_false_alarm(tmp_path):
    """Before the seal-on-close migration labcoat left closed ledgers in WAL mode, WAL deleted."""
    path = tmp_path / "ledger.db"
    Ledger(path).close()
    raw_sql(str(path), "DELETE FROM _labcoat_migrations WHERE name = 'm003_sealed_on_close'")
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.close()  # the last connection: SQLite deletes the WAL, the header still says WAL
    assert not _wal(path).exists()
    _read_only(path)
    with Ledger(path, create=False) as old:
        assert old.verify().ok


# ---- E: read-only media ----------------------------------------------------------------------


def _read_only(path: Path) -> None:
    path.chmod(0o444)
    path.parent.chmod(0o555)


@pytest.fixture
def read_only_copy(cli, tmp_path, subprocess_env, monkeypatch):
    """A ledger with an entry and a run, copied into a folder that is then made read-only."""
    made = tmp_path / "made" / "ledger.db"
    assert cli("ledger", "add", "lr too high", "--predict", "diverges", "--ledger", made).code == 0
    monkeypatch.setenv("PYTHONPATH", subprocess_env["PYTHONPATH"])
    assert (
        cli("run", "--ledger", made, "--no-git", "--", sys.executable, "-c", "print(1)").code == 0
    )
    media = tmp_path / "media"
    media.mkdir()
    shutil.copy(made, media / "ledger.db")
    _read_only(media / "ledger.db")
    yield media / "ledger.db"
    media.chmod(0o755)
    (media / "ledger.db").chmod(0o644)


def test_a_ledger_on_read_only_media_can_be_listed_shown_verified_and_exported(
    cli, read_only_copy, tmp_path
):
    path = read_only_copy
    before = path.read_bytes()
    L = ("--ledger", path)
    assert "lr too high" in cli("ledger", "list", *L).out
    assert cli("ledger", "show", "1", *L).code == 0
    assert cli("ledger", "show", "--run", "1", "--output", *L).code == 0
    assert cli("ledger", "runs", *L).code == 0
    assert cli("ledger", "verify", *L).code == 0
    out = tmp_path / "chronicle.md"
    assert cli("ledger", "export", "-o", out, *L).code == 0 and "lr too high" in out.read_text()
    refused = cli("ledger", "add", "x", "--predict", "y", *L)
    assert refused.code == 2 and "read-only media" in refused.err and refused.err.count("\n") == 1
    # root is not stopped by file modes: labcoat itself must not have written anything
    assert path.read_bytes() == before and sorted(p.name for p in path.parent.iterdir()) == [
        "ledger.db"
    ]


def test_read_only_is_opened_immutable_without_any_write(read_only_copy):
    store = SQLiteStore(read_only_copy)
    assert store.read_only
    with Ledger(read_only_copy, create=False) as ledger:
        assert [e.title for e in ledger.entries()] == ["lr too high"]
        assert ledger.storage._writer is None  # nothing ever opened the file for writing
        assert sorted(p.name for p in read_only_copy.parent.iterdir()) == ["ledger.db"]  # no -shm
    read_only_copy.parent.chmod(0o755)
    read_only_copy.chmod(0o644)
    assert not SQLiteStore(read_only_copy).read_only  # the healthy twin: a writable copy


# ---- D: the ledger's own files are never part of a run's provenance ---------------------------


def test_a_committed_ledger_does_not_make_runs_dirty(tmp_path, monkeypatch):
    repo = make_repo(tmp_path / "repo", {"train.py": "lr = 0.1\n"})
    monkeypatch.chdir(repo)
    path = repo / ".labcoat" / "ledger.db"
    Ledger(path).close()
    git(repo, "add", "-f", ".labcoat/ledger.db")  # a user who committed the ledger
    git(repo, "commit", "-q", "-m", "ledger")
    with Ledger(path) as ledger:
        with ledger.run() as first:
            ledger.hypothesis("grows the file", predict="p")
        with ledger.run() as second:
            pass
        assert not first.provenance.git.dirty and not second.provenance.git.dirty
        (repo / "train.py").write_text("lr = 0.2\n")  # the healthy twin: real code changes count
        with ledger.run() as third:
            pass
        assert third.provenance.git.dirty and b"ledger.db" not in third.provenance.git.diff
        changed = [c.key for c in ledger.provenance_diff(second.id, third.id).section("code")]
        assert changed == ["dirty", "uncommitted train.py"]


def test_the_default_ledger_folder_keeps_itself_out_of_git(tmp_path, monkeypatch):
    repo = make_repo(tmp_path / "repo", {"train.py": "x = 1\n"})
    monkeypatch.chdir(repo)
    monkeypatch.delenv("LABCOAT_LEDGER", raising=False)
    Ledger().close()
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True
    ).stdout
    assert status == "" and (repo / ".labcoat" / "ledger.db").exists()


# ---- E: `labcoat run` creates the ledger and links runs to hypotheses -------------------------


def test_run_creates_the_default_ledger(cli, isolated, subprocess_env, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", subprocess_env["PYTHONPATH"])
    res = cli("run", "--", sys.executable, "-c", "print('first')")
    assert res.code == 0 and "run 1 recorded" in res.err
    with Ledger(isolated / ".labcoat" / "ledger.db", create=False) as ledger:
        assert ledger.get_run(1).status == "ok" and ledger.entries() == []


def test_run_for_a_hypothesis_links_them(cli, tmp_path, subprocess_env, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", subprocess_env["PYTHONPATH"])
    L = ("--ledger", tmp_path / "ledger.db")
    assert cli("ledger", "add", "eps too small", "--predict", "eps=1e-6 fixes it", *L).code == 0
    assert cli("run", "--for", "1", *L, "--", sys.executable, "-c", "pass").code == 0
    missing = cli("run", "--for", "7", *L, "--", sys.executable, "-c", "pass")
    assert missing.code == 2 and "entry 7: there is no such entry" in missing.err
    with Ledger(L[1], create=False) as ledger:
        entry = ledger.entry(1)
        assert entry.runs == (1,) and entry.revision == 2
        assert [e.id for e in ledger.entries(run=1)] == [1]
        assert [r.id for r in ledger.runs()] == [1]  # the refused run never started


# ---- B: no import-time cycle -------------------------------------------------------------------


def _modules(package: str) -> list[str]:
    root = Path(__file__).resolve().parents[2] / "src"
    found = []
    for path in sorted((root / package.replace(".", "/")).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


def test_every_ledger_and_provenance_module_imports_alone():
    """Each module with no labcoat module loaded (tests/fresh_imports.py): an import cycle shows
    up as an ImportError for some import order, which a package ``__init__`` can otherwise
    hide."""
    modules = _modules("labcoat.ledger") + _modules("labcoat.provenance") + ["labcoat.cli.ledger"]
    errors = import_fresh({m: [m] for m in modules})
    assert len(modules) > 20 and {m: e for m, e in errors.items() if e} == {}
