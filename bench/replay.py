"""Step-time overhead of labcoat.record on a small CPU training loop, idle and beside CPU load,
and the disk a checkpoint takes.

Two identical copies of the loop run side by side, one bare and one recorded (``rec.loop`` +
``rec.log`` every step, checkpoints at ``every``), their steps interleaved one by one so both
see the same machine at the same moment. A row's ratio is recorded time / bare time over a
whole repeat of ``--steps`` steps (a repeat spans many checkpoint periods, so the steps that
checkpoint are counted with the cheap ones between); the median of ``--repeats`` repeats is
printed with the spread, and ``cpu``: the same ratio of the training thread's CPU time
(``time.thread_time``), which other processes on a busy machine do not blur (it leaves out
the background threads' CPU, which the wall ratio counts). Rows: bare against bare (the
machine's noise floor); the default ``every`` (chosen by the recorder from its measured
costs: checkpoints <= 2 % of step time); no checkpoint after the first (``rec.loop`` and
``rec.log`` alone: the fixed cost per step), and ``rec.loop`` without ``rec.log``; and
``every=100`` and ``every=10`` for comparison. The table is printed idle and with
``--load`` CPU-bound processes beside it.

The loop is the watch bench's: an MLP 784-256-128-10, batch 64, Adam, synthetic data, one
thread (~2.5 ms a step on an idle core). Disk: bytes written per checkpoint (median), the
whole checkpoint's bytes, and the same with the first layer frozen (content addressing stores
an unchanged tensor once).

    python bench/replay.py [--steps 1500] [--repeats 3] [--load 2]
"""

from __future__ import annotations

import argparse
import json
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

WIDTHS = (784, 256, 128, 10)
BATCH = 64
DATA = 2048


def make_loop(freeze_first: bool = False):
    torch.manual_seed(0)
    layers: list[nn.Module] = []
    for a, b in zip(WIDTHS[:-1], WIDTHS[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    model = nn.Sequential(*layers[:-1])
    if freeze_first:
        model[0].requires_grad_(False)
    params = [p for p in model.parameters() if p.requires_grad]
    return model, torch.optim.Adam(params, lr=1e-3)


def data():
    g = torch.Generator().manual_seed(1)
    return torch.randn(DATA, WIDTHS[0], generator=g), torch.randint(0, 10, (DATA,), generator=g)


def step(model, opt, x, y) -> torch.Tensor:
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss


class _Bare:
    """Stands in for the recorder in the bare-vs-bare row."""

    def __init__(self, steps: int):
        self.it = iter(range(steps))

    def next(self):
        return next(self.it)

    def log(self, **values):
        pass


def one_repeat(
    every: int | None | str, steps: int, root: Path, log: bool = True
) -> tuple[float, dict]:
    """Bare and recorded loops interleaved step by step; returns (recorded/bare time, costs)."""
    x, y = data()
    bare_model, bare_opt = make_loop()
    rec_model, rec_opt = make_loop()
    for _ in range(20):  # warm both up
        i = torch.randint(0, DATA - BATCH, ()).item()
        step(bare_model, bare_opt, x[i : i + BATCH], y[i : i + BATCH])
        step(rec_model, rec_opt, x[i : i + BATCH], y[i : i + BATCH])
    bare_t = rec_t = 0.0
    bare_c = rec_c = 0.0  # the training thread's CPU time: what other processes do not blur
    costs: dict = {}
    if every == "bare":
        rec = None
        driver = _Bare(steps)
    else:
        rec = labcoat.record(
            model=rec_model, optimizer=rec_opt, every=every, dir=root, ledger=False
        )
        rec.__enter__()
        gen = rec.loop("step", range(steps))
        driver = None
    wall, cpu = time.perf_counter, time.thread_time
    try:
        for k in range(steps):
            i = (k * BATCH) % (DATA - BATCH)
            xb, yb = x[i : i + BATCH], y[i : i + BATCH]
            order = (0, 1) if k % 2 == 0 else (1, 0)
            for which in order:
                start, start_c = wall(), cpu()
                if which == 0:
                    step(bare_model, bare_opt, xb, yb)
                    bare_t += wall() - start
                    bare_c += cpu() - start_c
                    continue
                if rec is None:
                    driver.next()
                    driver.log(loss=step(rec_model, rec_opt, xb, yb))
                else:
                    next(gen)
                    loss = step(rec_model, rec_opt, xb, yb)
                    if log:
                        rec.log(loss=loss)
                rec_t += wall() - start
                rec_c += cpu() - start_c
        if rec is not None:
            start, start_c = wall(), cpu()
            next(gen, None)  # the last boundary
            rec_t += wall() - start
            rec_c += cpu() - start_c
    finally:
        if rec is not None:
            rec.__exit__(None, None, None)
            run = json.loads((rec.dir / "run.json").read_text())
            costs = {**run["costs"], "every": run["every_chosen"], "dir": rec.dir}
    costs["cpu_ratio"] = rec_c / bare_c
    return rec_t / bare_t, costs


def disk(root: Path, freeze_first: bool, steps: int = 60) -> dict:
    model, opt = make_loop(freeze_first)
    x, y = data()
    with labcoat.record(model=model, optimizer=opt, every=10, dir=root, ledger=False) as rec:
        for k in rec.loop("step", range(steps)):
            i = (k * BATCH) % (DATA - BATCH)
            rec.log(loss=step(model, opt, x[i : i + BATCH], y[i : i + BATCH]))
    manifests = [json.loads(p.read_text()) for p in (rec.dir / "checkpoints").glob("*.json")]
    later = [m for m in manifests if m["step"] > 0]
    return {
        "written": statistics.median(m["bytes_written"] for m in later),
        "total": statistics.median(m["bytes_total"] for m in later),
        "first": next(m["bytes_written"] for m in manifests if m["step"] == 0),
    }


def table(label: str, rows: list[tuple[str, list[float], list[dict]]]) -> None:
    print(f"\n{label}")
    print(
        f"{'row':<16}{'median':>9}{'min':>9}{'max':>9}{'cpu':>8}{'every':>8}{'ckpt ms':>9}"
        f"{'bg ms':>8}"
    )
    for name, ratios, costs in rows:
        every = costs[-1].get("every", "") if costs and costs[-1] else ""
        every = "never" if isinstance(every, int) and every >= 10**6 else every
        ck = costs[-1].get("checkpoint_s") if costs and costs[-1] else None
        bg = costs[-1].get("background_s") if costs and costs[-1] else None
        print(
            f"{name:<16}{statistics.median(ratios):>9.3f}{min(ratios):>9.3f}{max(ratios):>9.3f}"
            f"{statistics.median(c['cpu_ratio'] for c in costs):>8.3f}{every!s:>8}"
            f"{'' if ck is None else f'{ck * 1e3:.2f}':>9}"
            f"{'' if bg is None else f'{bg * 1e3:.2f}':>8}"
        )


def measure(steps: int, repeats: int, root: Path) -> list[tuple[str, list[float], list[dict]]]:
    rows = []
    for name, every, log in (
        ("bare vs bare", "bare", True),
        ("default every", None, True),
        ("no checkpoint", 10**9, True),
        ("loop, no log", 10**9, False),
        ("every=100", 100, True),
        ("every=10", 10, True),
    ):
        ratios, costs = [], []
        for _ in range(repeats):
            ratio, cost = one_repeat(every, steps, root, log)
            ratios.append(ratio)
            costs.append(cost)
        rows.append((name, ratios, costs))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--load", type=int, default=2, help="CPU-bound processes for 'busy'")
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="labcoat-bench-replay-") as tmp:
        root = Path(tmp)
        model, opt = make_loop()
        x, y = data()
        start = time.perf_counter()
        for k in range(100):
            step(model, opt, x[:BATCH], y[:BATCH])
        print(
            f"bare step: {(time.perf_counter() - start) * 10:.2f} ms (MLP 784-256-128-10, "
            f"batch {BATCH}, Adam, 1 thread)"
        )
        table("idle: recorded / bare step time", measure(args.steps, args.repeats, root))
        with cpu_load(args.load, method="spawn"):
            table(
                f"busy ({args.load} CPU-bound processes beside it)",
                measure(args.steps, args.repeats, root),
            )
        for frozen in (False, True):
            d = disk(root, frozen)
            what = "first layer frozen" if frozen else "all trained"
            print(
                f"disk per checkpoint ({what}): {d['written'] / 1e6:.2f} MB written of "
                f"{d['total'] / 1e6:.2f} MB held (the first checkpoint wrote "
                f"{d['first'] / 1e6:.2f} MB)"
            )


if __name__ == "__main__":
    main()
