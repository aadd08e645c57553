"""Step-time overhead of labcoat.watch on a small CPU training loop.

Prints the ratio of watched to bare step time at every=1, every=10 and the default ``every``.
Configurations are interleaved block by block within one run (bare, watched, bare, ...; the
watched order alternates between rounds) and the ratio is the median over rounds of watched
time / the mean of that round's two bare blocks, so drift in machine load cancels out; the
ratio of the fastest watched to the fastest bare block is printed too (least disturbed by
other processes on a shared machine). The loop is an MLP (784-512-256-10, batch 128,
Adam) on synthetic data, one thread.

    python bench/watch.py [--rounds 15] [--steps 60]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import labcoat  # noqa: E402
from labcoat.watch import DEFAULT_EVERY  # noqa: E402


def make_loop():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(2048, 784)
    y = torch.randint(0, 10, (2048,))
    return model, opt, x, y


def block(model, opt, x, y, steps: int, every: int | None, start: int) -> float:
    """Seconds for ``steps`` training steps, watched at ``every`` (None: bare)."""

    def step(i: int):
        idx = slice((i * 128) % 1920, (i * 128) % 1920 + 128)
        loss = F.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    if every is None:
        t = time.perf_counter()
        for i in range(start, start + steps):
            step(i)
        return time.perf_counter() - t
    with labcoat.watch(model, opt, every=every) as w:
        t = time.perf_counter()
        for i in range(start, start + steps):
            w.observe(step=i, loss=step(i))
        return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
    torch.set_num_threads(1)
    model, opt, x, y = make_loop()
    everies = sorted({1, 10, DEFAULT_EVERY})
    block(model, opt, x, y, 30, None, 0)  # warm up allocator and autograd
    block(model, opt, x, y, 30, 1, 0)
    ratios: dict[int, list[float]] = {e: [] for e in everies}
    fastest: dict[int | None, float] = {e: float("inf") for e in [None, *everies]}
    bare_times: list[float] = []
    step = 0
    for round_ in range(args.rounds):
        before = block(model, opt, x, y, args.steps, None, step)
        step += args.steps
        watched = {}
        for every in everies if round_ % 2 == 0 else everies[::-1]:  # no position bias
            watched[every] = block(model, opt, x, y, args.steps, every, step)
            step += args.steps
        after = block(model, opt, x, y, args.steps, None, step)
        step += args.steps
        bare = (before + after) / 2
        bare_times.append(bare)
        fastest[None] = min(fastest[None], before, after)
        for every in everies:
            ratios[every].append(watched[every] / bare)
            fastest[every] = min(fastest[every], watched[every])
    bare_ms = statistics.median(bare_times) / args.steps * 1e3
    print(f"labcoat.watch overhead: MLP 784-512-256-10, batch 128, Adam, 1 thread; bare step {bare_ms:.2f} ms")
    print(f"{args.rounds} interleaved rounds of {args.steps} steps per configuration")
    for every in everies:
        r = ratios[every]
        tag = " (default)" if every == DEFAULT_EVERY else ""
        print(
            f"every={every:<3d}{tag:10s} watched/bare step time: median {statistics.median(r):.3f} "
            f"(quartiles {statistics.quantiles(r, n=4)[0]:.3f}-{statistics.quantiles(r, n=4)[2]:.3f}); "
            f"fastest blocks {fastest[every] / fastest[None]:.3f}"
        )


if __name__ == "__main__":
    main()
