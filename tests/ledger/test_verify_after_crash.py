"""``verify`` after a writer was killed: a WAL that another SQLite client checkpointed into the
file (nothing lost) is told from a WAL that was lost (rows gone), on every run, and verify
leaves the disk as it found it (issue 24, item 11)."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from labcoat.ledger import Ledger

KILLED = """
import os, signal, sys
from labcoat.ledger import Ledger
Ledger(sys.argv[1]).close()  # created and sealed
ledger = Ledger(sys.argv[1])
for i in range(3):
    ledger.hypothesis(f"h{i}", predict="p")
os.kill(os.getpid(), signal.SIGKILL)  # no exit handler runs: the file is never sealed
"""


def _files(folder: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in sorted(folder.iterdir())}


@pytest.fixture
def killed(tmp_path, subprocess_env) -> Path:
    """A ledger whose writer was killed with SIGKILL after three commits (still in its WAL)."""
    path = tmp_path / "crash" / "ledger.db"
    path.parent.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", KILLED, str(path)], env=subprocess_env, capture_output=True
    )
    assert done.returncode == -9, done.stderr
    assert {"ledger.db-wal", "ledger.db-heads"} <= set(_files(path.parent))
    return path


def _verify_twice(path: Path):
    """Two verifies, each in a fresh Ledger, and the folder's files before, between and after."""
    before = _files(path.parent)
    results = []
    for _ in range(2):
        with Ledger(path, create=False) as ledger:
            results.append((ledger.verify(), len(ledger.entries())))
        assert _files(path.parent) == before  # verify changed nothing on disk
    return results


def test_a_wal_checkpointed_by_another_client_is_no_loss(killed):
    conn = sqlite3.connect(killed)  # the sqlite3 shell, a backup tool: any client
    conn.execute("SELECT count(*) FROM entry_revisions").fetchone()
    conn.close()  # the last connection checkpoints the WAL into the file and deletes it
    assert "ledger.db-wal" not in _files(killed.parent)
    for result, entries in _verify_twice(killed):
        assert result.ok and entries == 3, result.problems()
        assert "nothing was lost" in result.notes[0] and result.storage == []


def test_a_lost_wal_is_a_loss_every_time_verify_runs(killed):
    killed.with_name("ledger.db-wal").unlink()  # the commits lived there only
    for result, entries in _verify_twice(killed):
        assert not result.ok and entries == 0
        assert "entry_revisions 1-3" in result.problems()[0]


def test_a_file_copied_alone_is_still_a_loss(killed, tmp_path):
    copy = tmp_path / "copy" / "ledger.db"
    copy.parent.mkdir()
    shutil.copy(killed, copy)  # without its -wal and its heads
    for result, entries in _verify_twice(copy):
        assert not result.ok and "its -wal file is missing" in result.problems()[0]


def test_the_wal_beside_the_file_is_read_and_a_sealed_ledger_keeps_no_heads(killed, cli):
    for result, entries in _verify_twice(killed):  # the killed writer's WAL is all there
        assert result.ok and entries == 3
    with Ledger(killed, create=False) as writer:  # a labcoat writer seals it again
        writer.hypothesis("after", predict="p")
    assert set(_files(killed.parent)) == {"ledger.db"}
    res = cli("ledger", "verify", "--ledger", killed)
    assert res.code == 0 and set(_files(killed.parent)) == {"ledger.db"}
