"""Ledger throughput and query latency on a local SQLite file (and PostgreSQL if given).

Prints entries/s (one transaction per entry, as hypotheses are written), events/s written in
batches (the watch's path) and one at a time, and query latency with 100k events stored.
Ratios compare numbers measured in this same run. Set LABCOAT_BENCH_PG=postgresql://… to
repeat it on a server.

    python bench/ledger.py
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from labcoat.findings import Finding  # noqa: E402
from labcoat.ledger import Ledger  # noqa: E402

ENTRIES = 2000
EVENTS = 100_000
BATCH = 1000
SINGLE_EVENTS = 500
QUERY_REPEATS = 20


def rate(n: int, seconds: float) -> str:
    return f"{n / seconds:,.0f}/s"


def latency(fn) -> float:
    fn()  # warm the cache once
    times = []
    for _ in range(QUERY_REPEATS):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def bench(location: str) -> None:
    ledger = Ledger(location)
    print(f"\nledger {ledger.location} ({ledger.dialect})")

    t0 = time.perf_counter()
    for i in range(ENTRIES):
        ledger.hypothesis(f"hypothesis {i}: lr {i % 7} causes spikes", predict=f"spikes at step {i}", tags=(f"t{i % 10}",))
    entries_s = time.perf_counter() - t0
    print(f"  entries written, one transaction each: {ENTRIES:,} in {entries_s:.2f} s = {rate(ENTRIES, entries_s)}")

    with ledger.run(config={"lr": 0.1}, git=False) as run:
        t0 = time.perf_counter()
        for start in range(0, EVENTS, BATCH):
            run.record_events(
                [
                    {"kind": "loss_spike" if s % 5000 == 0 else "loss", "step": s, "rank": s % 8, "value": 1.0 / (s + 1)}
                    for s in range(start, start + BATCH)
                ]
            )
        batched_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        for s in range(SINGLE_EVENTS):
            run.record_event("grad_norm", step=s, value=1.0)
        single_s = time.perf_counter() - t0
        run.record_findings([Finding(f"check_{i}", "model", "pass", "ok") for i in range(50)])
    batched, single = EVENTS / batched_s, SINGLE_EVENTS / single_s
    print(f"  events written in batches of {BATCH}: {EVENTS:,} in {batched_s:.2f} s = {rate(EVENTS, batched_s)}")
    print(f"  events written one at a time: {rate(SINGLE_EVENTS, single_s)}  (batching is {batched / single:.0f}x faster)")

    queries = {
        "rare kind in a run (20 of 100k events)": lambda: ledger.events(run=run.id, kind="loss_spike"),
        "step window of 100 in a run": lambda: ledger.events(run=run.id, kind="loss", min_step=50_000, max_step=50_099),
        "one rank's 'loss' events, first 1000": lambda: ledger.events(run=run.id, kind="loss", rank=3, limit=1000),
        "findings of a run": lambda: ledger.findings(run=run.id),
        f"entries by tag ({ENTRIES:,} entries)": lambda: ledger.entries(tag="t3"),
        f"entries by text ({ENTRIES:,} entries)": lambda: ledger.entries(text="step 1999"),
    }
    print(f"  query latency with {EVENTS + SINGLE_EVENTS:,} events stored (median of {QUERY_REPEATS}):")
    for name, fn in queries.items():
        print(f"    {name:<42} {latency(fn):8.2f} ms  ({len(fn())} rows)")
    t0 = time.perf_counter()
    result = ledger.verify()
    verify_s = time.perf_counter() - t0
    total = sum(result.rows.values())
    print(f"  verify: {total:,} rows in {verify_s:.2f} s = {rate(total, verify_s)} (ok={result.ok})")
    ledger.close()


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="labcoat-bench-") as tmp:
        bench(os.path.join(tmp, "ledger.db"))
    pg = os.environ.get("LABCOAT_BENCH_PG")
    if pg:
        bench(pg)


if __name__ == "__main__":
    main()
