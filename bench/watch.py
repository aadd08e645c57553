"""Step-time overhead of labcoat.watch on a small CPU training loop, idle and beside CPU load.

Two identical copies of the loop run side by side, one bare and one watched, their steps
interleaved one by one (bare, watched, watched, bare, ...), so both see the same machine at
the same moment. Each configuration's ratio is the median, over blocks of ``--block`` step
pairs, of watched time / bare time within the block (a block spans whole sampling periods,
so a sampled step and the cheap ones between are all counted); quartiles show the spread.
Rows: bare against bare (the noise floor of the machine), ``every=1``, the default
``every``, and the default with an events file (the sampled series written in batches).
The same table is printed with no other load and with ``--load`` CPU-bound processes
started by the bench beside it.

The loop is the one the targets are stated for: a ~2.5 ms step on one idle core (an MLP
784-256-128-10, batch 64, Adam, synthetic data, one thread), whose bare step time is printed
first. The watch's cost per step is nearly fixed, so a smaller step is the harder case (each
row also prints that cost in microseconds per step: watched/bare - 1 times the bare step); the
old, larger loop (784-512-256-10, batch 128, ~10 ms) adds two rows for comparison (leave them
out with ``--no-large``). ``--parts`` adds two ``every=1`` rows that split its cost, through
the public ``invariants`` option: no invariant at all (the hooks and the samples, no tensor
read) and ``nonfinite`` alone (adds the gradient and loss reads, with almost no judging); the
rest of the full row is the other invariants' judging.

``--evals`` measures instead what a planned evaluation (``labcoat.evals.planned_evaluation``)
costs beside the plain ``labcoat.watch.Evaluation`` on the same items: the plan's subset of a
synthetic benchmark, scored by the loop's MLP through ``Watcher.evaluate`` inside a running
watch (events and ledger writes included), the configurations interleaved, the median time per
evaluation of each and its ratio to the plain one over pre-batched tensors.

    python bench/watch.py [--steps 600] [--block 20] [--load 3] [--no-large] [--parts]
    python bench/watch.py --evals [--budget 200] [--items 2048] [--repeats 30]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from _load import cpu_load  # noqa: E402

import labcoat  # noqa: E402
from labcoat.watch import DEFAULT_EVERY  # noqa: E402


class Loop(NamedTuple):
    """A training loop's shape: layer widths (input first) and the batch size."""

    widths: tuple[int, ...]
    batch: int

    @property
    def name(self) -> str:
        return f"MLP {'-'.join(map(str, self.widths))}, batch {self.batch}"


#: the issue's reference: a bare step of ~2.5 ms on one idle CPU core
SMALL = Loop((784, 256, 128, 10), 64)
#: the loop this bench used before, four times the work per step
LARGE = Loop((784, 512, 256, 10), 128)
DATA = 2048


def make_loop(loop: Loop) -> tuple[nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    layers: list[nn.Module] = []
    for width_in, width_out in zip(loop.widths[:-1], loop.widths[1:]):
        layers += [nn.Linear(width_in, width_out), nn.ReLU()]
    model = nn.Sequential(*layers[:-1])
    return model, torch.optim.Adam(model.parameters(), lr=1e-3)


class _Unwatched:
    """Stands in for the watch in the bare-vs-bare row, which shows the bench's noise floor."""

    def __enter__(self) -> "_Unwatched":
        return self

    def __exit__(self, *exc_info) -> None:
        return None

    def observe(self, step: int, loss) -> None:
        return None


def measure(
    loop: Loop,
    every: int | None,
    steps: int,
    block: int,
    events: str | None,
    invariants: list[str] | None = None,
) -> list[float]:
    """Per-block watched/bare time ratios for one configuration (``every=None``: both bare;
    ``invariants``: the kinds to run, all by default)."""
    x = torch.randn(DATA, loop.widths[0])
    y = torch.randint(0, loop.widths[-1], (DATA,))
    bare_model, bare_opt = make_loop(loop)
    model, opt = make_loop(loop)
    span = DATA - DATA % loop.batch - loop.batch

    def step(m, o, i):
        start = (i * loop.batch) % span
        idx = slice(start, start + loop.batch)
        loss = F.cross_entropy(m(x[idx]), y[idx])
        o.zero_grad(set_to_none=True)
        loss.backward()
        o.step()
        return loss

    watch = (
        _Unwatched()
        if every is None
        else labcoat.watch(
            model, opt, every=every, events=events, ledger=False, invariants=invariants
        )
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


def bare_step_ms(loop: Loop, steps: int = 200) -> float:
    """The median time of one bare step of ``loop``, in milliseconds."""
    model, opt = make_loop(loop)
    x = torch.randn(loop.batch, loop.widths[0])
    y = torch.randint(0, loop.widths[-1], (loop.batch,))
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t)
    return statistics.median(times[steps // 4 :]) * 1e3


def table(args, label: str) -> None:
    loops = [SMALL] if args.no_large else [SMALL, LARGE]
    bare = {loop: bare_step_ms(loop) for loop in loops}
    steps = ", ".join(f"{loop.name}: {ms:.2f} ms" for loop, ms in bare.items())
    print(f"{label}: bare step (median) {steps}")
    with tempfile.TemporaryDirectory() as tmp:
        events_file = f"{tmp}/events.jsonl"
        # (name, loop, every, events file, invariants: None runs them all)
        rows: list[tuple[str, Loop, int | None, str | None, list[str] | None]] = [
            ("bare vs bare (noise floor)", SMALL, None, None, None),
            ("every=1", SMALL, 1, None, None),
            (f"every={DEFAULT_EVERY} (default)", SMALL, DEFAULT_EVERY, None, None),
            (f"every={DEFAULT_EVERY} + events file", SMALL, DEFAULT_EVERY, events_file, None),
        ]
        if args.parts:  # what every=1 spends its time on, each part measured in this run
            rows += [
                ("every=1, no invariant (hooks)", SMALL, 1, None, []),
                ("every=1, nonfinite (+ reads)", SMALL, 1, None, ["nonfinite"]),
            ]
        if not args.no_large:
            rows += [
                ("large loop, every=1", LARGE, 1, None, None),
                (f"large loop, every={DEFAULT_EVERY}", LARGE, DEFAULT_EVERY, None, None),
            ]
        for name, loop, every, events, kinds in rows:
            block = max(args.block, every or 1)
            r = measure(loop, every, args.steps, block, events, kinds)
            q = statistics.quantiles(r, n=4)
            ratio = statistics.median(r)
            print(
                f"  {name:32s} watched/bare {ratio:.3f} "
                f"(quartiles {q[0]:.3f}-{q[2]:.3f}, {len(r)} blocks of {block} steps; "
                f"~{(ratio - 1) * bare[loop] * 1e3:.0f} us/step)"
            )


def eval_table(args, label: str) -> None:
    """Planned evaluation vs the plain watch Evaluation on the same items (see the module)."""
    import numpy as np
    from torch.utils.data import DataLoader, Subset, TensorDataset

    from labcoat.evals import History, plan_subset, planned_evaluation
    from labcoat.watch import Evaluation

    n, budget, size = args.items, args.budget, 32
    model, opt = make_loop(SMALL)
    x = torch.randn(n, SMALL.widths[0])
    y = torch.randint(0, SMALL.widths[-1], (n,))
    data = TensorDataset(x, y)
    rng = np.random.default_rng(0)  # a history: 8 models, items of varied difficulty
    p = 1 / (1 + np.exp(-(np.linspace(-1, 1, 8)[None, :] - rng.normal(0, 1.5, (n, 1)))))
    plan = plan_subset(History.from_matrix((rng.random(p.shape) < p).astype(float)), budget)
    idx = torch.tensor([int(k) for k in plan.subset])
    tensors = [(x[idx[i : i + size]], y[idx[i : i + size]]) for i in range(0, budget, size)]
    named = [(idx[i : i + size], *b) for i, b in zip(range(0, budget, size), tensors)]
    loader = DataLoader(Subset(data, idx.tolist()), batch_size=size)

    def correct(b):
        return (model(b[0]).argmax(1) == b[1]).float()

    never = {"width": 1e-9}  # the plain one reads every item too
    configs = {
        "plain Evaluation, tensor batches": Evaluation(tensors, correct, every=1, **never),
        "plain Evaluation, DataLoader": Evaluation(loader, correct, every=1, **never),
        "plain Evaluation + ids": Evaluation(
            named, lambda b: correct(b[1:]), every=1, ids=lambda b: b[0], **never
        ),
        "planned_evaluation (subset)": planned_evaluation(plan, data, correct, every=1),
    }
    print(
        f"planned vs plain evaluation: {SMALL.name} scoring {budget} of {n} items "
        f"(batches of {size}), {args.repeats} rounds interleaved, inside a running watch; {label}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for sink in ("no ledger", "ledger"):
            ledger = False if sink == "no ledger" else labcoat.Ledger(f"{tmp}/ledger.db")
            times: dict[str, list[float]] = {name: [] for name in configs}
            with labcoat.watch(model, opt, ledger=ledger, invariants=[]) as w:
                for r in range(args.repeats + 3):
                    for name, ev in configs.items():
                        t = time.perf_counter()
                        w.evaluate(ev.batches, ev.score, step=r, **ev.settings())
                        w.judge.flush()  # the ledger's batch, written now, counted here
                        if r >= 3:  # warm-up rounds
                            times[name].append(time.perf_counter() - t)
            base = statistics.median(times["plain Evaluation, tensor batches"])
            alone = []
            for _ in range(args.repeats):  # the forward passes alone: what any eval must spend
                t = time.perf_counter()
                with torch.no_grad():
                    [correct(b) for b in tensors]
                alone.append(time.perf_counter() - t)
            times = {"scoring alone (forward, no watch)": alone, **times}
            print(f"  {sink}:")
            for name, ts in times.items():
                med = statistics.median(ts)
                print(f"    {name:36s} {med * 1e3:7.2f} ms/eval  ratio {med / base:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600, help="step pairs per configuration")
    parser.add_argument("--block", type=int, default=20, help="step pairs per ratio")
    parser.add_argument("--load", type=int, default=3, help="CPU-bound processes for the busy run")
    parser.add_argument("--no-large", action="store_true", help="only the ~2.5 ms loop")
    parser.add_argument(
        "--parts",
        action="store_true",
        help="also every=1 with no invariant (hooks and samples) and with nonfinite alone "
        "(+ the gradient and loss reads); the rest of every=1's cost is the other invariants",
    )
    parser.add_argument(
        "--evals",
        action="store_true",
        help="only the planned evaluation vs the plain Evaluation on the same items",
    )
    parser.add_argument("--budget", type=int, default=200, help="--evals: items planned")
    parser.add_argument("--items", type=int, default=2048, help="--evals: benchmark items")
    parser.add_argument("--repeats", type=int, default=30, help="--evals: rounds")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.evals:
        eval_table(args, "idle")
        with cpu_load(args.load, method="spawn"):
            eval_table(args, f"busy ({args.load} CPU-bound processes beside it)")
        return
    print(f"labcoat.watch overhead: {SMALL.name}, Adam, 1 thread, steps interleaved")
    table(args, "idle")
    with cpu_load(args.load, method="spawn"):  # torch's threads are running: no fork
        table(args, f"busy ({args.load} CPU-bound processes beside it)")


if __name__ == "__main__":
    main()
