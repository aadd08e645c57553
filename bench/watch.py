"""Step-time overhead of labcoat.watch on a small CPU training loop, idle and beside CPU load.

Two identical copies of the loop run side by side, one bare and one watched, their steps
interleaved one by one (bare, watched, watched, bare, ...), so both see the same machine at
the same moment. Each configuration's ratio is the median, over blocks of ``--block`` step
pairs, of watched time / bare time within the block (a block spans whole sampling periods,
so a sampled step and the cheap ones between are all counted); quartiles show the spread.
Rows: bare against bare (the noise floor of the machine), ``every=1``, the default
``every``, and the default with an events file (the sampled series written in batches).
The same table is printed with no other load and with ``--load`` CPU-bound processes
started by the bench beside it. The loop is an MLP (784-512-256-10, batch 128, Adam) on
synthetic data, one thread.

    python bench/watch.py [--steps 600] [--block 20] [--load 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from _load import cpu_load  # noqa: E402

import labcoat  # noqa: E402
from labcoat.watch import DEFAULT_EVERY  # noqa: E402


def make_loop():
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10)
    )
    return model, torch.optim.Adam(model.parameters(), lr=1e-3)


class _Unwatched:
    """Stands in for the watch in the bare-vs-bare row, which shows the bench's noise floor."""

    def __enter__(self) -> "_Unwatched":
        return self

    def __exit__(self, *exc_info) -> None:
        return None

    def observe(self, step: int, loss) -> None:
        return None


def measure(every: int | None, steps: int, block: int, events: str | None) -> list[float]:
    """Per-block watched/bare time ratios for one configuration (``every=None``: both bare)."""
    x = torch.randn(2048, 784)
    y = torch.randint(0, 10, (2048,))
    bare_model, bare_opt = make_loop()
    model, opt = make_loop()

    def step(m, o, i):
        idx = slice((i * 128) % 1920, (i * 128) % 1920 + 128)
        loss = F.cross_entropy(m(x[idx]), y[idx])
        o.zero_grad(set_to_none=True)
        loss.backward()
        o.step()
        return loss

    watch = (
        _Unwatched()
        if every is None
        else labcoat.watch(model, opt, every=every, events=events, ledger=False)
    )
    with watch as w:
        for i in range(30):  # warm up allocator, autograd and the watch
            step(bare_model, bare_opt, i)
            w.observe(step=i, loss=step(model, opt, i))
        bare = watched = 0.0
        ratios = []
        for i in range(30, 30 + steps):
            first_bare = i % 2 == 0
            for which in (0, 1) if first_bare else (1, 0):
                t = time.perf_counter()
                if which == 0:
                    step(bare_model, bare_opt, i)
                    bare += time.perf_counter() - t
                else:
                    w.observe(step=i, loss=step(model, opt, i))
                    watched += time.perf_counter() - t
            if (i - 29) % block == 0:
                ratios.append(watched / bare)
                bare = watched = 0.0
    return ratios


def bare_step_ms(steps: int = 100) -> float:
    model, opt = make_loop()
    x, y = torch.randn(128, 784), torch.randint(0, 10, (128,))
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def table(args, label: str) -> None:
    print(f"{label}: bare step {bare_step_ms():.2f} ms (median)")
    with tempfile.TemporaryDirectory() as tmp:
        rows = [
            ("bare vs bare (noise floor)", None, None),
            ("every=1", 1, None),
            (f"every={DEFAULT_EVERY} (default)", DEFAULT_EVERY, None),
            (f"every={DEFAULT_EVERY} + events file", DEFAULT_EVERY, f"{tmp}/events.jsonl"),
        ]
        for name, every, events in rows:
            block = max(args.block, every or 1)
            r = measure(every, args.steps, block, events)
            q = statistics.quantiles(r, n=4)
            print(
                f"  {name:28s} watched/bare {statistics.median(r):.3f} "
                f"(quartiles {q[0]:.3f}-{q[2]:.3f}, {len(r)} blocks of {block} steps)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600, help="step pairs per configuration")
    parser.add_argument("--block", type=int, default=20, help="step pairs per ratio")
    parser.add_argument("--load", type=int, default=3, help="CPU-bound processes for the busy run")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(
        "labcoat.watch overhead: MLP 784-512-256-10, batch 128, Adam, 1 thread, steps interleaved"
    )
    table(args, "idle")
    with cpu_load(args.load, method="spawn"):  # torch's threads are running: no fork
        table(args, f"busy ({args.load} CPU-bound processes beside it)")


if __name__ == "__main__":
    main()
