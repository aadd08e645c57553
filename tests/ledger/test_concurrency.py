"""Many writer processes at once, and a writer killed mid-transaction."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from labcoat.ledger import Ledger

WRITER = r"""
import os, sys, time
from labcoat.ledger import Ledger
location, worker, count, go = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
ledger = Ledger(location)
print("ready", flush=True)
while not os.path.exists(go):
    time.sleep(0.005)
for i in range(count):
    ledger.hypothesis(f"w{worker}-{i}", predict=f"prediction {worker}/{i}", tags=[f"w{worker}"])
ledger.close()
"""


def _writers(location: str, workers: int, count: int, tmp_path: Path, env: dict) -> None:
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, location, str(w), str(count), str(go)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(workers)
    ]
    for p in procs:  # every writer has opened the ledger; release them together
        assert p.stdout.readline().strip() == "ready", p.communicate()[1]
    go.touch()
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * workers, errors


def _check_nothing_lost(location: str, workers: int, count: int) -> None:
    with Ledger(location, create=False) as ledger:
        found = ledger.entries()
        assert len(found) == workers * count
        assert sorted(e.id for e in found) == list(range(1, workers * count + 1))
        assert {e.title for e in found} == {
            f"w{w}-{i}" for w in range(workers) for i in range(count)
        }
        assert len(ledger.entries(tag="w3")) == count
        assert ledger.verify().ok
        # the writers really ran at the same time: their entries interleave in commit order
        order = [e.title.split("-")[0] for e in found]
        switches = sum(a != b for a, b in zip(order, order[1:]))
        assert switches > workers


def test_eight_processes_writing_200_entries_each_lose_nothing(tmp_path, subprocess_env):
    location = str(tmp_path / "ledger.db")
    _writers(location, 8, 200, tmp_path, subprocess_env)
    _check_nothing_lost(location, 8, 200)
    with sqlite3.connect(location) as conn:
        # the last writer to close took the file out of WAL mode: every commit is in the file
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_concurrent_writers_on_postgres_lose_nothing(pg_url, tmp_path, subprocess_env):
    _writers(pg_url, 4, 50, tmp_path, subprocess_env)
    _check_nothing_lost(pg_url, 4, 50)


KILLED = r"""
import sys, time
from labcoat.ledger import Ledger
from labcoat.ledger.records import entries
ledger = Ledger(sys.argv[1])
for i in range(int(sys.argv[2])):
    e = ledger.hypothesis(f"committed {i}", predict="kept")
    print("committed", e.id, flush=True)
with ledger.storage.write() as tx:
    for i in range(50):
        entries.create(tx, title=f"in flight {i}", prediction="lost")
    print("inside", flush=True)
    time.sleep(60)
"""


def test_writer_killed_mid_transaction_leaves_a_verified_ledger(tmp_path, subprocess_env):
    location = str(tmp_path / "ledger.db")
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED, location, "20"],
        env=subprocess_env,
        stdout=subprocess.PIPE,
        text=True,
    )
    committed = []
    for line in proc.stdout:
        if line.startswith("committed"):
            committed.append(int(line.split()[1]))
        if line.startswith("inside"):
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL and len(committed) == 20

    with sqlite3.connect(location) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    with Ledger(location, create=False) as ledger:
        assert ledger.verify().ok
        found = ledger.entries()
        assert [e.id for e in found] == committed
        assert not ledger.entries(text="in flight")
        # the dead writer's lock is gone: the next write goes through and chains on
        nxt = ledger.hypothesis("after the crash", predict="writes resume")
        assert nxt.id == 21 and ledger.verify().ok


BUSY = r"""
import sys
from labcoat.ledger import Ledger
ledger = Ledger(sys.argv[1])
step = 0
while True:
    ledger.record_events([{"kind": "loss", "step": step + i, "value": 1.0} for i in range(200)])
    step += 200
    print(step, flush=True)
"""


def test_writer_killed_at_an_arbitrary_moment_keeps_every_acknowledged_batch(
    tmp_path, subprocess_env
):
    location = str(tmp_path / "ledger.db")
    proc = subprocess.Popen(
        [sys.executable, "-c", BUSY, location],
        env=subprocess_env,
        stdout=subprocess.PIPE,
        text=True,
    )
    acknowledged = 0
    for line in proc.stdout:
        acknowledged = int(line)
        if acknowledged >= 4000:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    with Ledger(location, create=False) as ledger:
        result = ledger.verify()
        assert result.ok and result.integrity == []
        stored = result.rows["events"]
    assert stored >= acknowledged and stored % 200 == 0  # whole batches only


def test_readers_are_not_blocked_by_a_writer(tmp_path):
    location = str(tmp_path / "ledger.db")
    writer, reader = Ledger(location), Ledger(location)
    writer.hypothesis("before", predict="visible")
    with writer.storage.write() as tx:
        from labcoat.ledger.records import entries

        entries.create(tx, title="uncommitted", prediction="invisible")
        t0 = time.monotonic()
        seen = [e.title for e in reader.entries()]
        assert time.monotonic() - t0 < 1.0
    assert seen == ["before"]
    assert [e.title for e in reader.entries()] == ["before", "uncommitted"]
    writer.close()
    reader.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_opens_its_own_connections(tmp_path):
    ledger = Ledger(str(tmp_path / "ledger.db"))
    ledger.hypothesis("parent", predict="p")
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        code = 0
        try:
            ledger.hypothesis("child", predict="c")
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert [e.title for e in ledger.entries()] == ["parent", "child"]
    assert ledger.verify().ok
