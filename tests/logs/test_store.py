"""How log lines are stored: blocks of lines, a ``log_lines`` view over them, and the lines an
older ledger stored a row each carried over."""

from __future__ import annotations

import json

import pytest

from labcoat.ledger import Ledger
from labcoat.ledger.store.connection import open_store
from labcoat.ledger.store.migrations import Migrations
from labcoat.ledger.store.schema import LEDGER_MIGRATIONS
from labcoat.logs import ingest_folder, store
from labcoat.logs.capture import HEADER

pytest.importorskip("drain3")

COLUMNS = "seq, time, rank, local_rank, node, step, level, stream, logger, template_id, kinds, text"


def _capture(folder, ranks=3, lines=5000):
    folder.mkdir()
    for r in range(ranks):
        with open(folder / f"p{100 + r}.log", "w") as f:
            f.write(
                HEADER + json.dumps({"rank": r, "local_rank": r, "node": "n0", "pid": r}) + "\n"
            )
            for i in range(lines):
                text = f"step {i} loss {1 / (i + 1):.5f}" if i % 50 else "ERROR data: slow shard"
                level = "WARNING" if i % 97 == 0 else ""
                f.write(f"{1.7e9 + i * 0.01 + r * 1e-4:.6f}\tstdout\t{level}\t{i}\t\t{text}\n")


def test_the_view_unpacks_the_blocks_into_the_rows_the_engine_reads(tmp_path):
    _capture(tmp_path / "logs")
    with Ledger(tmp_path / "ledger.db") as book:
        run = ingest_folder(book, tmp_path / "logs")
        read = list(store.rows(book, run))
        with book.storage.read() as tx:
            viewed = list(
                tx.dicts(f"SELECT {COLUMNS} FROM log_lines WHERE run_id = ? ORDER BY seq", (run,))
            )
            blocks = tx.value("SELECT count(*) FROM log_blocks WHERE run_id = ?", (run,))
    assert len(read) == len(viewed) == 15_000 and blocks < 15
    assert read == viewed
    assert [r["seq"] for r in read] == list(range(1, 15_001))
    times = [r["time"] for r in read]
    assert times == sorted(times) and {r["rank"] for r in read} == {0, 1, 2}
    errors = [r for r in read if r["text"].startswith("ERROR") and r["step"] % 97]
    assert errors and all(r["level"] == "ERROR" and r["kinds"] == "error" for r in errors)
    # a logging record's own level wins over what its text shows
    assert all(r["level"] == "WARNING" for r in read if r["step"] % 97 == 0)


def test_an_older_ledgers_lines_are_carried_into_blocks(tmp_path):
    location = tmp_path / "old.db"
    old = Migrations("ledger")
    for name in LEDGER_MIGRATIONS.names()[: LEDGER_MIGRATIONS.names().index("m006_logs") + 1]:
        old(LEDGER_MIGRATIONS._steps[name], name=name)
    backing = open_store(location)
    old.apply(backing)
    rows = [
        (i, 1, i, 1.7e9 + i, i % 2, i % 2, "n0", i // 2, "INFO" if i % 3 else None, "stdout",
         None, 1, None, f"line {i}")
        for i in range(1, 4001)
    ]  # fmt: skip
    with backing.write() as tx:
        tx.executemany(
            "INSERT INTO log_sources (run_id, source, path, rank, local_rank, group_rank, node, "
            "pid, lines, first_time, last_time, last_step) VALUES (1, ?, 'p', ?, ?, NULL, 'n0', "
            "?, 2000, NULL, NULL, NULL)",
            [(0, 0, 0, 10), (1, 1, 1, 11)],
        )
        tx.executemany(
            f"INSERT INTO log_lines (id, run_id, {COLUMNS}) VALUES ({', '.join('?' * 14)})", rows
        )
    backing.close()
    with Ledger(location) as book:  # opening it applies m007
        read = list(store.rows(book, 1))
        with book.storage.read() as tx:
            viewed = tx.all(f"SELECT {COLUMNS} FROM log_lines WHERE run_id = 1 ORDER BY seq")
    assert [tuple(r.values()) for r in read] == [tuple(r) for r in viewed] == [r[2:] for r in rows]
