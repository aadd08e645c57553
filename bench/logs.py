"""The logs engine's costs: what capture costs the training thread per line, how fast the capture
thread keeps up, and how fast a run's lines are ingested (templates mined, rows written) and
read for their failure, against drain3 alone on the same lines.

Each figure is measured idle and with CPU-bound processes beside it (started by the bench) in
this one run, and printed with the ratio.

    python bench/logs.py [--busy N] [--lines N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from _load import cpu_load  # noqa: E402

from labcoat.ledger import Ledger  # noqa: E402
from labcoat.logs import sources  # noqa: E402
from labcoat.logs.capture import HEADER  # noqa: E402
from labcoat.logs.ingest import ingest  # noqa: E402
from labcoat.logs.templates import Miner  # noqa: E402

SRC = str(Path(__file__).resolve().parents[1] / "src")

#: the training thread's side: print / logging N lines, with capture installed or not
WRITER = r"""
import json, logging, os, sys, time
n, capture, how = int(sys.argv[1]), sys.argv[2], sys.argv[3]
if capture != "-":
    import labcoat.logs
    labcoat.logs.install(capture)
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s",
                    stream=sys.stdout)
log = logging.getLogger("train")
t0 = time.perf_counter()
if how == "print":
    for i in range(n):
        print(f"step {i} loss {1.0 / (i + 1):.6f} lr 0.0003 tokens/s 123456", flush=True)
else:
    for i in range(n):
        log.info("step %d loss %.6f lr 0.0003 tokens/s 123456", i, 1.0 / (i + 1))
sys.stdout.flush()
wrote = time.perf_counter() - t0
if capture != "-":
    from labcoat.logs.capture import _close_at_exit
    _close_at_exit()  # the reader drains what is left: the capture's own throughput
total = time.perf_counter() - t0
print(json.dumps({"wrote": wrote, "total": total}), file=sys.stderr)
"""


def writer(n: int, capture: str, how: str) -> dict:
    env = dict(os.environ, PYTHONPATH=SRC, PYTHONUNBUFFERED="1")
    done = subprocess.run(
        [sys.executable, "-c", WRITER, str(n), capture, how],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=True,
    )
    return json.loads(done.stderr.strip().splitlines()[-1])


def capture_costs(n: int) -> dict[str, tuple[float, str]]:
    out = {}
    for how in ("print", "logging"):
        plain = min(writer(n, "-", how)["wrote"] for _ in range(2))
        with tempfile.TemporaryDirectory() as tmp:
            runs = [writer(n, tmp + f"/{i}", how) for i in range(2)]
        captured = min(r["wrote"] for r in runs)
        total = min(r["total"] for r in runs)
        out[f"{how}: training thread, per line, without capture"] = (plain / n * 1e6, "µs")
        out[f"{how}: training thread, per line, captured"] = (captured / n * 1e6, "µs")
        out[f"{how}: capture thread keeps up (lines/s)"] = (n / total, "/s")
    return out


MESSAGES = [
    "step {s} loss {loss:.4f} lr {lr:.2e} grad_norm {g:.3f}",
    "{date} INFO train: epoch {e}: {s} batches done in {t:.2f}s",
    "{date} INFO data: loading shard /data/shard-{r:05d}.bin ({mb} MB)",
    "/usr/lib/python3/site-packages/torch/utils/data.py:{ln}: UserWarning: a warning {r}",
    "[W{date2} ProcessGroupGloo.cpp:{ln}] Warning: unused parameter in rank {r}",
    "eval step {s}: accuracy {acc:.4f} perplexity {ppl:.3f}",
    "checkpoint saved to /ckpt/run-{r}/step-{s}.pt in {t:.2f}s",
]


def write_capture(folder: str, lines: int, ranks: int = 8) -> None:
    rng = random.Random(0)
    t = 1.7e9
    per = lines // ranks
    for r in range(ranks):
        with open(os.path.join(folder, f"p{1000 + r}.log"), "w") as f:
            f.write(
                HEADER + json.dumps({"rank": r, "local_rank": r, "node": "n0", "pid": r}) + "\n"
            )
            for i in range(per):
                s = i // 4
                m = MESSAGES[0] if i % 4 else rng.choice(MESSAGES)
                text = m.format(
                    s=s,
                    loss=rng.random(),
                    lr=3e-4,
                    g=rng.random() * 3,
                    e=s // 100,
                    t=rng.random(),
                    date="2026-01-01 12:00:00,123",
                    date2="0101 12:00:00.1",
                    r=r,
                    mb=rng.randint(1, 999),
                    ln=rng.randint(1, 999),
                    acc=rng.random(),
                    ppl=rng.random() * 20,
                )
                f.write(f"{t + i * 0.01:.6f}\tstdout\t\t{s}\t\t{text}\n")


class _Clock:
    """Wall time and this process's CPU time of a block: on a shared machine the CPU time is
    what one core spent, the wall time what a user waits."""

    def __enter__(self) -> "_Clock":
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu


def ingest_costs(lines: int) -> dict[str, tuple[float, str]]:
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        write_capture(tmp, lines)
        found = sources.discover(tmp)
        texts = [row[sources.TEXT] for batch in sources.batches(found) for row in batch]
        from drain3 import TemplateMiner
        from drain3.template_miner_config import TemplateMinerConfig

        config = TemplateMinerConfig()
        config.profiling_enabled = False
        miner = TemplateMiner(config=config)
        with _Clock() as drain:
            for text in texts:
                miner.add_log_message(text)
        ours = Miner()
        with _Clock() as mined:
            for text in texts:
                ours.add(text)
        del texts
        with _Clock() as read:
            for _ in sources.batches(found):
                pass
        book = Ledger(os.path.join(tmp, "ledger.db"))
        run = book.start_run(git=False)
        with _Clock() as full:
            done = ingest(book, run.id, found, sources.batches(found))
        book.finish_run(run.id, status="ok", exit_status=0)
        from labcoat.logs import why

        with _Clock() as judged:
            report = why(run.id, ledger=book)
        assert report.first is None, report.first
        book.close()
    n = done.lines
    out["drain3 alone: add_log_message (lines/s, CPU)"] = (n / drain.cpu, "/s")
    out["labcoat's miner: digit key, mask, drain3 (lines/s, CPU)"] = (n / mined.cpu, "/s")
    out["read and merge the files (lines/s, CPU)"] = (n / read.cpu, "/s")
    out["ingest: read, merge, classify, mine, write (lines/s, CPU)"] = (n / full.cpu, "/s")
    out["ingest (lines/s, wall)"] = (n / full.wall, "/s")
    out["ingest, per line (CPU)"] = (full.cpu / n * 1e6, "µs")
    out["why: read back and analyse (lines/s, CPU)"] = (n / judged.cpu, "/s")
    out["ingest / drain3 alone (CPU)"] = (drain.cpu / full.cpu, "x")
    out[f"templates mined from {lines:,} lines"] = (done.templates, "")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--lines", type=int, default=400_000, help="lines ingested")
    parser.add_argument("--written", type=int, default=100_000, help="lines a writer writes")
    parser.add_argument("--ingest-only", action="store_true", help="skip the capture figures")
    args = parser.parse_args()

    def run() -> dict:
        captured = {} if args.ingest_only else capture_costs(args.written)
        return {**captured, **ingest_costs(args.lines)}

    idle = run()
    with cpu_load(args.busy):
        busy = run()
    print(
        f"\nlabcoat logs: idle, and with {args.busy} CPU-bound processes beside it "
        f"({os.cpu_count()} CPUs); ingest of {args.lines:,} lines from 8 ranks, one core"
    )
    with open("/proc/loadavg") if os.path.exists("/proc/loadavg") else open(os.devnull) as f:
        print(f"  load average at the end: {f.read().split(' ')[:3]}")
    print(f"  {'':<60} {'idle':>12} {'busy':>12}  busy/idle")
    for name, (value, unit) in idle.items():
        other = busy[name][0]
        if unit == "/s":
            fmt = lambda v: f"{v:,.0f}/s"  # noqa: E731
        elif unit == "":
            fmt = lambda v: f"{v:,.0f}"  # noqa: E731
        else:
            fmt = lambda v: f"{v:,.2f} {unit}"  # noqa: E731
        ratio = other / value if value else float("nan")
        print(f"  {name:<60} {fmt(value):>12} {fmt(other):>12}  {ratio:8.2f}")


if __name__ == "__main__":
    main()
