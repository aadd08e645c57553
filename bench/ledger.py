"""Ledger throughput and query latency on a local SQLite file (and PostgreSQL if given).

Each figure is measured twice in this one run, idle and with CPU-bound processes beside it (the
bench starts and stops them), and printed with the ratio: entries/s (one transaction per
entry, as hypotheses are written), events/s in batches (the watch's path) and one at a time,
one doctor session recorded as a run with its findings, query latency with 100k events stored,
verify and close (checkpoint) time. Set LABCOAT_BENCH_PG=postgresql://… to repeat it on a server.

    python bench/ledger.py [--busy N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from _load import cpu_load  # noqa: E402

from labcoat.findings import Finding  # noqa: E402
from labcoat.ledger import Ledger  # noqa: E402

ENTRIES = 2000
EVENTS = 100_000
BATCH = 1000
SINGLE_EVENTS = 500
FINDINGS = 40  # about one doctor ladder
QUERY_REPEATS = 20


def median_ms(fn: Callable[[], object]) -> float:
    fn()  # warm the cache once
    times = []
    for _ in range(QUERY_REPEATS):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def measure(location: str) -> dict[str, tuple[float, str]]:
    """name -> (value, unit); rates are per second, latencies in ms."""
    out: dict[str, tuple[float, str]] = {}
    ledger = Ledger(location)
    t0 = time.perf_counter()
    for i in range(ENTRIES):
        ledger.hypothesis(
            f"hypothesis {i}: lr {i % 7} causes spikes",
            predict=f"spikes at step {i}",
            tags=(f"t{i % 10}",),
        )
    out["entries written, one transaction each"] = (ENTRIES / (time.perf_counter() - t0), "/s")

    with ledger.run(config={"lr": 0.1}, git=False) as run:
        t0 = time.perf_counter()
        for start in range(0, EVENTS, BATCH):
            run.record_events(
                [
                    {
                        "kind": "loss_spike" if s % 5000 == 0 else "loss",
                        "step": s,
                        "rank": s % 8,
                        "value": 1.0 / (s + 1),
                    }
                    for s in range(start, start + BATCH)
                ]
            )
        out[f"events written in batches of {BATCH}"] = (EVENTS / (time.perf_counter() - t0), "/s")
        t0 = time.perf_counter()
        for s in range(SINGLE_EVENTS):
            run.record_event("grad_norm", step=s, value=1.0)
        out["events written one at a time"] = (SINGLE_EVENTS / (time.perf_counter() - t0), "/s")
    session = [
        Finding(f"check_{i}", "model", "pass", "ok", evidence={"x": i}) for i in range(FINDINGS)
    ]
    t0 = time.perf_counter()
    ledger.record_findings(session, source="doctor")  # a run of its own, provenance included
    out[f"a doctor session: one run, {FINDINGS} findings"] = (
        (time.perf_counter() - t0) * 1000,
        "ms",
    )

    queries = {
        "rare kind in a run (20 of 100k events)": lambda: ledger.events(
            run=run.id, kind="loss_spike"
        ),
        "step window of 100 in a run": lambda: ledger.events(
            run=run.id, kind="loss", min_step=50_000, max_step=50_099
        ),
        "one rank's 'loss' events, first 1000": lambda: ledger.events(
            run=run.id, kind="loss", rank=3, limit=1000
        ),
        "failed findings of the doctor": lambda: ledger.findings(source="doctor", status="fail"),
        f"entries by tag ({ENTRIES:,} entries)": lambda: ledger.entries(tag="t3"),
        f"entries by text ({ENTRIES:,} entries)": lambda: ledger.entries(text="step 1999"),
    }
    for name, fn in queries.items():
        out[f"query: {name}"] = (median_ms(fn), "ms")
    t0 = time.perf_counter()
    result = ledger.verify()
    assert result.ok, result.problems()
    out[f"verify ({sum(result.rows.values()):,} rows)"] = (time.perf_counter() - t0, "s")
    t0 = time.perf_counter()
    ledger.close()  # checkpoints the WAL into the file
    out["close (checkpoint, leave WAL mode)"] = ((time.perf_counter() - t0) * 1000, "ms")
    return out


def fresh(location: str | None) -> Callable[[], dict[str, tuple[float, str]]]:
    def run() -> dict[str, tuple[float, str]]:
        if location:  # a server: a fresh schema each time
            import psycopg

            with psycopg.connect(location, autocommit=True) as conn:
                conn.execute("DROP SCHEMA IF EXISTS labcoat CASCADE")
            return measure(location)
        with tempfile.TemporaryDirectory(prefix="labcoat-bench-") as tmp:
            return measure(os.path.join(tmp, "ledger.db"))

    return run


def report(title: str, run: Callable[[], dict[str, tuple[float, str]]], busy: int) -> None:
    idle = run()
    with cpu_load(busy):
        loaded = run()
    print(f"\n{title}: idle, and with {busy} CPU-bound processes beside it ({os.cpu_count()} CPUs)")
    print(f"  {'':<52} {'idle':>12} {'busy':>12}  busy/idle")
    for name, (value, unit) in idle.items():
        other = loaded[name][0]
        text = (lambda v: f"{v:,.0f}{unit}") if unit == "/s" else (lambda v: f"{v:,.2f} {unit}")
        print(f"  {name:<52} {text(value):>12} {text(other):>12}  {other / value:8.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", type=int, default=3, help="CPU-bound processes for the busy run")
    args = parser.parse_args()
    report("ledger on a local SQLite file", fresh(None), args.busy)
    pg = os.environ.get("LABCOAT_BENCH_PG")
    if pg:
        report(f"ledger on {pg.split('@')[-1]}", fresh(pg), args.busy)


if __name__ == "__main__":
    main()
