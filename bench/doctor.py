"""How long the doctor takes, on an idle machine and beside three CPU-bound processes.

Rows, each measured idle and busy in this one run (the bench starts and stops the load itself):

- the whole ``"fast"`` ladder on ``examples/digits.py`` (target: <= 5 s idle on 2 cores, and
  busy <= 2.5x idle: no worse than its fair share of the CPU);
- a small CNN on digits handed over as a ``DataLoader`` (target: <= 15 s idle);
- the shuffle layer alone with its copies one after another and in worker processes, and what
  starting one worker costs: the measurement behind ``labcoat.doctor.cpu.MIN_COPY_S``;
- ``labcoat doctor examples/digits.py`` from the shell, imports included (target: <= 5 s idle),
  the imports alone, and ``labcoat --help`` (target: <= 0.3 s idle).

The ladders run in this process with torch's default intra-op threads, as a user's script
would; the best of ``--repeat`` runs is kept, as the least disturbed by other processes.
``--sizes`` adds per-layer times and steps-to-fit for three MLP sizes (idle only).

    python bench/doctor.py [--repeat 2] [--sizes] [--rows TEXT]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "examples"))

import digits
import torch
from _load import cpu_load
from rich.console import Console
from rich.table import Table
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import labcoat
from labcoat.doctor import cpu

BUSY_PROCESSES = 3
LADDER_IDLE_S = 5.0
CNN_IDLE_S = 15.0
BUSY_RATIO = 2.5
REFERENCE_LOOPS = 20_000_000
SIZES = {"small": (32,), "medium": (128, 128), "large": (512, 512)}


def cpu_seconds() -> float:
    """CPU time of this process and of its children that have ended (workers, subprocesses)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def best_of(repeat: int, run: Callable[[], float]) -> tuple[float, float]:
    """Wall and CPU seconds of the fastest of ``repeat`` runs."""
    runs = []
    for _ in range(repeat):
        before = cpu_seconds()
        wall = run()
        runs.append((wall, cpu_seconds() - before))
    return min(runs)


def warm_up(make: Callable[[], labcoat.Experiment]) -> None:
    """The first three layers once: imports and lazy initialisation, outside the timings."""
    make().diagnose(ledger=False, progress=False, layers=("data", "model", "update"))


def timed_ladder(make: Callable[[], labcoat.Experiment]) -> Callable[[], float]:
    def run() -> float:
        experiment = make()
        start = time.perf_counter()
        report = experiment.diagnose(ledger=False, progress=False)
        elapsed = time.perf_counter() - start
        if not report.ok:
            raise SystemExit(f"the bench setup is not healthy: {report.summary()}")
        return elapsed

    return run


def timed_cli() -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    command = [
        sys.executable,
        "-m",
        "labcoat",
        "doctor",
        "examples/digits.py",
        "--no-ledger",
        "--quiet",
    ]
    start = time.perf_counter()
    done = subprocess.run(command, check=False, cwd=ROOT, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"labcoat doctor failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed


def timed_help() -> float:
    """``labcoat --help`` from the shell: the interpreter, click and the command list."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "labcoat", "--help"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - start


def timed_import() -> float:
    command = [sys.executable, "-c", "from labcoat.doctor import diagnose"]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=env, check=True)
    return time.perf_counter() - start


def timed_reference() -> float:
    """Single-threaded pure-Python work: its busy / idle ratio is what a fair share of the CPU
    gives on this machine now (2 on two otherwise idle cores beside three busy processes)."""
    start = time.perf_counter()
    total = 0
    for i in range(REFERENCE_LOOPS):
        total += i * i
    return time.perf_counter() - start


def _reference_loop() -> None:
    total = 0
    for i in range(REFERENCE_LOOPS):
        total += i * i


def timed_reference_pair() -> float:
    """The same work in two processes at once: a job that keeps both cores busy when they are
    idle. Beside three busy processes its fair share is 2 of 5 runnable processes on 2 cores, so
    its busy / idle ratio is the bound for the ladder's parallel part (2.5 in theory)."""
    context = multiprocessing.get_context("fork")
    start = time.perf_counter()
    pair = [context.Process(target=_reference_loop) for _ in range(2)]
    for process in pair:
        process.start()
    for process in pair:
        process.join()
    return time.perf_counter() - start


def timed_shuffle(min_copy_s: float) -> Callable[[], float]:
    """The shuffle layer alone on examples/digits.py, its copies in workers (0) or not (inf)."""

    def run() -> float:
        before, cpu.MIN_COPY_S = cpu.MIN_COPY_S, min_copy_s
        try:
            start = time.perf_counter()
            digits.experiment().diagnose(ledger=False, progress=False, layers=("shuffle",))
            return time.perf_counter() - start
        finally:
            cpu.MIN_COPY_S = before

    return run


def timed_worker_start() -> float:
    """Forking one worker from this process (torch loaded) and receiving a result from it."""
    start = time.perf_counter()
    cpu.map_copies(
        lambda i, advance: torch.zeros(1000, 10), 2, copy_s=1.0, advance=lambda n=1: None, units=1
    )
    return time.perf_counter() - start


class Image(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(len(x), 1, 8, 8)


def cnn_experiment() -> labcoat.Experiment:
    """A small CNN on digits, the data handed over as a shuffling DataLoader."""
    torch.manual_seed(0)
    model = nn.Sequential(
        Image(),
        nn.Conv2d(1, 16, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(32 * 4 * 4, 10),
    )
    loader = DataLoader(TensorDataset(*digits.digits_tensors()), batch_size=64, shuffle=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    return labcoat.Experiment(
        model=model, data=loader, loss_fn=nn.CrossEntropyLoss(), optimizer=optimizer
    )


ROWS: dict[str, tuple[Callable[[], float], float | None]] = {
    "reference: single-threaded Python loop (fair share)": (timed_reference, None),
    "reference: the same loop in two processes at once (fair share of both cores)": (
        timed_reference_pair,
        None,
    ),
    "fast ladder, examples/digits.py (MLP)": (timed_ladder(digits.experiment), LADDER_IDLE_S),
    "fast ladder, CNN through a DataLoader": (timed_ladder(cnn_experiment), CNN_IDLE_S),
    "shuffle layer alone, digits MLP, copies one after another": (
        timed_shuffle(float("inf")),
        None,
    ),
    "shuffle layer alone, digits MLP, copies in workers": (timed_shuffle(0.0), None),
    "one worker: fork, one copy's result back": (timed_worker_start, None),
    "`labcoat doctor examples/digits.py`": (timed_cli, None),
    "`from labcoat.doctor import diagnose` (torch, scipy, scikit-learn)": (timed_import, None),
    "`labcoat --help` (target: <= 0.3 s idle)": (timed_help, None),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--repeat", type=int, default=2, help="runs per measurement; the best is kept"
    )
    parser.add_argument(
        "--sizes", action="store_true", help="also time three MLP sizes layer by layer"
    )
    parser.add_argument("--rows", default="", help="only the rows whose name contains this text")
    args = parser.parse_args()
    rows = {name: row for name, row in ROWS.items() if args.rows in name}
    console = Console(width=160)
    load = os.getloadavg()[0]  # other processes on the machine are part of "idle"
    threads = torch.get_num_threads()
    warm_up(digits.experiment)
    warm_up(cnn_experiment)
    idle, busy, loads = {}, {}, {}
    for name, (run, _) in rows.items():
        loads[name] = [os.getloadavg()[0]]
        idle[name] = best_of(args.repeat, run)
        console.print(
            f"idle  {idle[name][0]:7.2f} s ({idle[name][1]:.2f} s CPU)  {name}", soft_wrap=True
        )
    with cpu_load(BUSY_PROCESSES, method="spawn"):  # torch's threads are running: no fork
        for name, (run, _) in rows.items():
            loads[name].append(os.getloadavg()[0])
            busy[name] = best_of(args.repeat, run)
            console.print(
                f"busy  {busy[name][0]:7.2f} s ({busy[name][1]:.2f} s CPU)  {name}", soft_wrap=True
            )
    table = Table(
        title=f"labcoat doctor, idle and beside {BUSY_PROCESSES} CPU-bound processes "
        f"({os.cpu_count()} cores, torch threads={threads}, best of {args.repeat}; "
        f"load average when it started {load:.1f})"
    )
    for col in (
        "setup",
        "idle s",
        "idle CPU s",
        "busy s",
        "busy / idle",
        "idle target",
        f"busy / idle <= {BUSY_RATIO}",
        "load idle/busy",
    ):
        table.add_column(col, justify="right")
    for name, (_, target) in rows.items():
        (idle_s, idle_cpu), (busy_s, _) = idle[name], busy[name]
        ratio = busy_s / idle_s
        table.add_row(
            name,
            f"{idle_s:.2f}",
            f"{idle_cpu:.2f}",
            f"{busy_s:.2f}",
            f"{ratio:.2f}",
            "" if target is None else f"{target:.0f} s ({idle_s / target:.0%})",
            ("yes" if ratio <= BUSY_RATIO else "NO") if target is not None else "",
            "/".join(f"{load:.1f}" for load in loads[name]),
        )
    console.print(table)
    console.print(
        "CPU s: this process and its workers; on idle cores a ladder's wall time lies between\n"
        "CPU s / cores and CPU s, whatever else ran beside this bench. load: the 1-minute load\n"
        "average as each row began; the reference rows' ratios are a fair share's on this\n"
        "machine now, for a job on one core and for one on both"
    )
    if args.sizes:
        console.print(sizes_table(threads))


def mlp(hidden: tuple[int, ...]) -> nn.Module:
    torch.manual_seed(0)
    layers: list[nn.Module] = []
    width = 64
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        width = h
    return nn.Sequential(*layers, nn.Linear(width, 10))


def sizes_table(threads: int) -> Table:
    data = digits.digits_tensors()
    table = Table(
        title="labcoat doctor on digits by model size "
        f"(budget='fast', torch threads={threads}, idle)"
    )
    for col in (
        "model",
        "params",
        "data",
        "model",
        "update",
        "overfit",
        "shuffle",
        "self-test",
        "total",
        "steps to fit",
    ):
        table.add_column(col, justify="right")
    for name, hidden in SIZES.items():
        model = mlp(hidden)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        start = time.perf_counter()
        report = labcoat.diagnose(
            model, data, nn.CrossEntropyLoss(), optimizer, ledger=False, progress=False
        )
        total = time.perf_counter() - start
        t = report.timings
        fit = report["overfit.batch"].evidence
        table.add_row(
            name,
            f"{sum(p.numel() for p in model.parameters()):,}",
            *(
                f"{t.get(layer, float('nan')):.2f}"
                for layer in ("data", "model", "update", "overfit", "shuffle")
            ),
            f"{report.extras['selftest']['duration_s']:.2f}",
            f"{total:.2f}",
            f"{fit['steps']} ({fit.get('fitted', '?')}/{fit['examples']})",
        )
    return table


if __name__ == "__main__":
    main()
