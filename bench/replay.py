"""Step-time overhead of labcoat.replayable on a ~2 ms and a ~40 ms CPU training step, idle and
beside CPU load, its fixed cost per step, the checkpoint's share, and disk per checkpoint in
bytes per parameter, with and without the user's own checkpoints.

Two identical copies of the loop run side by side, one bare and one recorded (``rec.loop`` +
``rec.log`` every step, checkpoints at ``every``), their steps interleaved one by one so both
see the same machine at the same moment. A row's ratio is recorded time / bare time over a
whole repeat of steps (a repeat spans checkpoint periods, so the steps that checkpoint are
counted with the cheap ones between; the first step, whose checkpoint a run pays once, is
left out); the median of ``--repeats`` repeats is printed with the spread, and ``cpu``: the
same ratio of the training thread's CPU time (``time.thread_time``), which other processes on
a busy machine do not blur (it leaves out the background threads' CPU, which the wall ratio
counts). Rows: bare against bare (the machine's noise floor); the default ``every`` (chosen
by the recorder from its measured costs, checkpoints <= 2 % of step time, on the loop run
alone first: interleaved, it would count the bare twin's steps as its own); no checkpoint
after the first (``rec.loop`` and ``rec.log`` alone), and ``rec.loop`` without ``rec.log``;
``every=100`` and ``every=10`` for comparison. The tables are printed idle and with
``--load`` CPU-bound processes beside it.

The loops: MLPs 784-256-128-10 ("2 ms") and 784-1024-1024-10 ("40 ms"), Adam, synthetic
data, one thread; the batch is calibrated so that a bare step takes the target CPU time on
this machine. Then, separately: the fixed cost per step of ``rec.loop`` + ``rec.log`` in
microseconds (20 000 iterations with no training, the training thread's CPU time minus a bare
loop's), and the checkpoint's share of step time at the default ``every`` (its cost on the
training thread, and with the background thread's CPU, over ``every`` steps). Disk: a
checkpoint's bytes per parameter, the recorder's own (written and held; the first layer
frozen: content addressing stores an unchanged tensor once) and referencing the user's
``torch.save`` checkpoint (``rec.checkpoint_saved``), with the gradients freed after the
optimizer step and left allocated.

    python bench/replay.py [--steps 1500] [--steps-large 200] [--repeats 3] [--load 2]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from _load import cpu_load  # noqa: E402

import labcoat  # noqa: E402

SMALL = (784, 256, 128, 10)
LARGE = (784, 1024, 1024, 10)
DATA = 2048


@dataclass
class Loop:
    """One benchmarked training loop: its widths, its batch and its bare step time."""

    name: str
    widths: tuple[int, ...]
    batch: int
    step_ms: float = 0.0


def make_loop(widths=SMALL, freeze_first: bool = False):
    torch.manual_seed(0)
    layers: list[nn.Module] = []
    for a, b in zip(widths[:-1], widths[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    model = nn.Sequential(*layers[:-1])
    if freeze_first:
        model[0].requires_grad_(False)
    params = [p for p in model.parameters() if p.requires_grad]
    return model, torch.optim.Adam(params, lr=1e-3)


def data(widths=SMALL, batch: int = 64):
    g = torch.Generator().manual_seed(1)
    n = max(DATA, 4 * batch)
    return torch.randn(n, widths[0], generator=g), torch.randint(0, 10, (n,), generator=g)


def step(model, opt, x, y) -> torch.Tensor:
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss


def cpu_step_ms(widths, batch: int, n: int = 5) -> float:
    """The median CPU time of a bare step (the training thread's: other processes do not blur
    it)."""
    model, opt = make_loop(widths)
    x, y = data(widths, batch)
    step(model, opt, x[:batch], y[:batch])
    times = []
    for _ in range(n):
        start = time.thread_time()
        step(model, opt, x[:batch], y[:batch])
        times.append(time.thread_time() - start)
    return statistics.median(times) * 1e3


def calibrate(name: str, widths, target_ms: float) -> Loop:
    """The batch whose bare step takes about ``target_ms`` of CPU (step time is close to
    linear in the batch: a fixed optimizer part and a per-example part)."""
    lo, hi = 16, 256
    t_lo, t_hi = cpu_step_ms(widths, lo), cpu_step_ms(widths, hi)
    per = max((t_hi - t_lo) / (hi - lo), 1e-6)
    batch = int(min(max(lo + (target_ms - t_lo) / per, 4), 4096))
    return Loop(name, widths, batch, cpu_step_ms(widths, batch))


class _Bare:
    """Stands in for the recorder in the bare-vs-bare row."""

    def __init__(self, steps: int):
        self.it = iter(range(steps))

    def next(self):
        return next(self.it)

    def log(self, **values):
        pass


def one_repeat(
    loop: Loop, every: int | None | str, steps: int, root: Path, log: bool = True
) -> tuple[float, dict]:
    """Bare and recorded loops interleaved step by step; returns (recorded/bare time, costs)."""
    batch = loop.batch
    x, y = data(loop.widths, batch)
    n = len(x)
    bare_model, bare_opt = make_loop(loop.widths)
    rec_model, rec_opt = make_loop(loop.widths)
    for _ in range(5):  # warm both up
        i = torch.randint(0, n - batch, ()).item()
        step(bare_model, bare_opt, x[i : i + batch], y[i : i + batch])
        step(rec_model, rec_opt, x[i : i + batch], y[i : i + batch])
    bare_t = rec_t = 0.0
    bare_c = rec_c = 0.0  # the training thread's CPU time: what other processes do not blur
    costs: dict = {}
    if every == "bare":
        rec = None
        driver = _Bare(steps + 1)
        driver.next()
    else:
        rec = labcoat.replayable(
            model=rec_model, optimizer=rec_opt, every=every, dir=root, ledger=False
        )
        rec.__enter__()
        gen = rec.loop("step", range(steps + 1))
        next(gen)  # step 0 and its checkpoint, which a run pays once: not timed
        step(rec_model, rec_opt, x[:batch], y[:batch])
        step(bare_model, bare_opt, x[:batch], y[:batch])
        rec.wait_for_writes()
        driver = None
    wall, cpu = time.perf_counter, time.thread_time
    try:
        for k in range(steps):
            i = (k * batch) % (n - batch)
            xb, yb = x[i : i + batch], y[i : i + batch]
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
            shutil.rmtree(rec.dir, ignore_errors=True)
    costs["cpu_ratio"] = rec_c / bare_c
    costs["bare_step_s"] = bare_t / steps
    return rec_t / bare_t, costs


def chosen_every(loop: Loop, root: Path, steps: int) -> int:
    """The ``every`` the recorder chooses for this loop run alone (interleaved with a bare twin
    it would time the twin's steps too, and checkpoint twice as often as it should)."""
    model, opt = make_loop(loop.widths)
    x, y = data(loop.widths, loop.batch)
    with labcoat.replayable(model=model, optimizer=opt, dir=root, ledger=False) as rec:
        for k in rec.loop("step", range(steps)):
            i = (k * loop.batch) % (len(x) - loop.batch)
            rec.log(loss=step(model, opt, x[i : i + loop.batch], y[i : i + loop.batch]))
    every = json.loads((rec.dir / "run.json").read_text())["every_chosen"]
    shutil.rmtree(rec.dir, ignore_errors=True)
    return int(every)


def fixed_cost_us(root: Path, n: int = 20000) -> dict[str, float]:
    """The training thread's CPU time per iteration of ``rec.loop`` + ``rec.log(loss=t)`` (a
    scalar tensor, as training logs), and of ``rec.loop`` alone, minus a bare loop's."""
    model, opt = make_loop((4, 4))
    loss = torch.tensor(0.5)
    best: dict[str, float] = {}
    for _ in range(3):
        with labcoat.replayable(
            model=model, optimizer=opt, every=10**9, dir=root, ledger=False
        ) as rec:
            start = time.thread_time()
            for _ in rec.loop("step", range(n)):
                rec.log(loss=loss)
            with_log = time.thread_time() - start
            start = time.thread_time()
            for _ in rec.loop("again", range(n)):
                pass
            alone = time.thread_time() - start
        start = time.thread_time()
        for _ in range(n):
            pass
        bare = time.thread_time() - start
        shutil.rmtree(rec.dir, ignore_errors=True)
        for key, value in (("loop+log", with_log), ("loop", alone)):
            us = (value - bare) / n * 1e6
            best[key] = min(best.get(key, us), us)
    return best


def n_params(model) -> int:
    return sum(p.numel() for p in model.parameters())


def disk(root: Path, widths, freeze_first: bool, steps: int = 40) -> dict:
    """Bytes per parameter of the recorder's own checkpoints (every 10 steps)."""
    model, opt = make_loop(widths, freeze_first)
    x, y = data(widths, 64)
    with labcoat.replayable(model=model, optimizer=opt, every=10, dir=root, ledger=False) as rec:
        for k in rec.loop("step", range(steps)):
            i = (k * 64) % (len(x) - 64)
            rec.log(loss=step(model, opt, x[i : i + 64], y[i : i + 64]))
    manifests = [json.loads(p.read_text()) for p in (rec.dir / "checkpoints").glob("*.json")]
    later = [m for m in manifests if m["step"] > 0]
    n = n_params(model)
    shutil.rmtree(rec.dir, ignore_errors=True)
    return {
        "written": statistics.median(m["bytes_written"] for m in later) / n,
        "total": statistics.median(m["bytes_total"] for m in later) / n,
        "first": next(m["bytes_written"] for m in manifests if m["step"] == 0) / n,
    }


def disk_referencing(root: Path, widths, free_grads: bool, steps: int = 40) -> dict:
    """Bytes per parameter of a checkpoint that references the user's ``torch.save`` file
    (``every="saved"``: one wherever the loop saved, every 10 steps), and the user's file's."""
    model, opt = make_loop(widths)
    x, y = data(widths, 64)
    files = root / "user"
    files.mkdir(exist_ok=True)
    with labcoat.replayable(
        model=model, optimizer=opt, every="saved", dir=root, ledger=False
    ) as rec:
        for k in rec.loop("step", range(steps)):
            i = (k * 64) % (len(x) - 64)
            rec.log(loss=step(model, opt, x[i : i + 64], y[i : i + 64]))
            if free_grads:
                opt.zero_grad(set_to_none=True)  # after the step: no gradient left to keep
            if k % 10 == 9:
                path = files / f"{k}.pt"
                torch.save({"model": model.state_dict(), "optimizer": opt.state_dict()}, path)
                rec.checkpoint_saved(path)
    manifests = [json.loads(p.read_text()) for p in (rec.dir / "checkpoints").glob("*.json")]
    n = n_params(model)
    user = statistics.median(p.stat().st_size for p in files.glob("*.pt"))
    shutil.rmtree(rec.dir, ignore_errors=True)
    shutil.rmtree(files, ignore_errors=True)
    return {
        "total": statistics.median(m["bytes_total"] for m in manifests) / n,
        "checkpoints": len(manifests),
        "user": user / n,
    }


ROWS = (
    ("bare vs bare", "bare", True),
    ("default every", None, True),
    ("no checkpoint", 10**9, True),
    ("loop, no log", 10**9, False),
    ("every=100", 100, True),
    ("every=10", 10, True),
)


def table(label: str, loop: Loop, rows: list[tuple[str, list[float], list[dict]]]) -> None:
    print(f"\n{label}: {loop.name} step (batch {loop.batch}, {loop.step_ms:.1f} ms CPU bare)")
    print(
        f"{'row':<16}{'median':>9}{'min':>9}{'max':>9}{'cpu':>8}{'every':>8}{'ckpt ms':>9}"
        f"{'bg ms':>8}{'share':>8}{'+bg':>8}"
    )
    for name, ratios, costs in rows:
        last = costs[-1] if costs and costs[-1] else {}
        every = last.get("every", "")
        every = "never" if isinstance(every, int) and every >= 10**6 else every
        ck, bg, st = last.get("checkpoint_s"), last.get("background_s"), last.get("bare_step_s")
        share = with_bg = ""
        if ck is not None and st and isinstance(every, int):  # of the bare steps' time
            share = f"{100 * ck / (every * st):.2f}%"  # the pause on the training thread
            with_bg = f"{100 * (ck + (bg or 0)) / (every * st):.2f}%"  # and the writer's CPU
        print(
            f"{name:<16}{statistics.median(ratios):>9.3f}{min(ratios):>9.3f}{max(ratios):>9.3f}"
            f"{statistics.median(c['cpu_ratio'] for c in costs):>8.3f}{every!s:>8}"
            f"{'' if ck is None else f'{ck * 1e3:.2f}':>9}"
            f"{'' if bg is None else f'{bg * 1e3:.2f}':>8}{share:>8}{with_bg:>8}"
        )


def measure(
    loop: Loop, steps: int, repeats: int, root: Path, rows=ROWS
) -> list[tuple[str, list[float], list[dict]]]:
    out = []
    for name, every, log in rows:
        if every is None:  # the default: what the recorder chooses for this loop alone
            every = chosen_every(loop, root, max(steps // 2, 60))
        ratios, costs = [], []
        for _ in range(repeats):
            ratio, cost = one_repeat(loop, every, steps, root, log)
            ratios.append(ratio)
            costs.append(cost)
        out.append((name, ratios, costs))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1500, help="steps per repeat, 2 ms loop")
    parser.add_argument("--steps-large", type=int, default=200, help="steps, 40 ms loop")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--load", type=int, default=2, help="CPU-bound processes for 'busy'")
    args = parser.parse_args()
    torch.set_num_threads(1)
    large_rows = tuple(r for r in ROWS if r[0] in ("bare vs bare", "default every", "every=10"))
    with tempfile.TemporaryDirectory(prefix="labcoat-bench-replay-") as tmp:
        root = Path(tmp)
        small = calibrate("2 ms", SMALL, 2.0)
        large = calibrate("40 ms", LARGE, 40.0)
        plan = ((small, args.steps, ROWS), (large, args.steps_large, large_rows))
        for loop, steps, rows in plan:
            table("idle", loop, measure(loop, steps, args.repeats, root, rows))
        with cpu_load(args.load, method="spawn"):
            for loop, steps, rows in plan:
                label = f"busy ({args.load} CPU-bound processes beside it)"
                table(label, loop, measure(loop, steps, args.repeats, root, rows))
        fixed = fixed_cost_us(root)
        print(
            f"\nfixed cost per step (training thread CPU): rec.loop + rec.log "
            f"{fixed['loop+log']:.1f} us, rec.loop alone {fixed['loop']:.1f} us; on the "
            f"{small.name} step {1 + fixed['loop+log'] / (small.step_ms * 1e3):.4f}x, on the "
            f"{large.name} step {1 + fixed['loop+log'] / (large.step_ms * 1e3):.5f}x"
        )
        for widths in (SMALL, LARGE):
            model, _ = make_loop(widths)
            n = n_params(model)
            own, frozen = disk(root, widths, False), disk(root, widths, True)
            kept = disk_referencing(root, widths, free_grads=True)
            left = disk_referencing(root, widths, free_grads=False)
            print(
                f"\ndisk per checkpoint, MLP {'-'.join(map(str, widths))} ({n / 1e6:.2f} M "
                f"parameters, Adam), bytes per parameter:\n"
                f"  its own checkpoints:   {own['total']:.2f} held, {own['written']:.2f} "
                f"written (first layer frozen: {frozen['written']:.2f} written of "
                f"{frozen['total']:.2f} held)\n"
                f"  referencing the user's torch.save checkpoint "
                f"({kept['user']:.2f} B/param of the user's): {kept['total']:.4f} with the "
                f"gradients freed after the step, {left['total']:.2f} with them left allocated"
            )


if __name__ == "__main__":
    main()
