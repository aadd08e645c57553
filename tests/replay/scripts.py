"""The training script the replay tests record and replay, and helpers to run it.

One small script covers what makes runs hard to replay: a shuffled DataLoader with workers whose
``__getitem__`` augments with torch, NumPy and ``random``; dropout and BatchNorm; gradient
accumulation, clipping, a scheduler, bf16 autocast on CPU and two optimizers; or an
``IterableDataset`` (``--iterable``). Flags plant what the tests must catch.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

SRC = Path(__file__).resolve().parents[2] / "src"

SCRIPT = r"""
import argparse, atexit, os, random, signal, sys, time
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, IterableDataset, get_worker_info
import labcoat

parser = argparse.ArgumentParser()
parser.add_argument("--workers", type=int, default=2)
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--every", type=int, default=3)
parser.add_argument("--iterable", action="store_true")
parser.add_argument("--nan-step", type=int, default=-1)
parser.add_argument("--nondet", action="store_true")
parser.add_argument("--kill-at", type=int, default=-1)
parser.add_argument("--raise-at", type=int, default=-1)
parser.add_argument("--diverge-at", type=int, default=-1)
parser.add_argument("--count-file", default="")
parser.add_argument("--base-lr", type=float, default=1e-2)
args = parser.parse_args()

torch.set_num_threads(1)
random.seed(0); np.random.seed(0); torch.manual_seed(0)
N, BATCH = 48, 8
G = torch.Generator().manual_seed(1)
X = torch.randn(N, 6, generator=G)
Y = (X[:, 0] + X[:, 1] > 0).long()
LOADED = []

def augment(x):
    return x + 0.1 * torch.randn(6) + 0.1 * float(np.random.randn()) + 0.1 * random.random()

class Data(Dataset):
    def __len__(self):
        return N
    def __getitem__(self, i):
        LOADED.append(i)
        return augment(X[i]), Y[i]

class Stream(IterableDataset):
    def __iter__(self):
        info = get_worker_info()
        ids = range(N) if info is None else range(info.id, N, info.num_workers)
        for i in ids:
            yield augment(X[i]), Y[i]

if args.count_file:
    atexit.register(lambda: open(args.count_file, "w").write(str(len(LOADED))))

class Planted(nn.Module):
    def forward(self, x):
        if rec.step == args.nan_step:
            x = x * float("nan")
        return x

body = nn.Sequential(nn.Linear(6, 16), nn.BatchNorm1d(16), nn.ReLU(), Planted(), nn.Dropout(0.3))
head = nn.Linear(16, 2)
model = nn.Sequential(body, head)
opt_body = torch.optim.Adam(body.parameters(), lr=args.base_lr)
opt_head = torch.optim.SGD(head.parameters(), lr=0.1, momentum=0.9)
sched = torch.optim.lr_scheduler.StepLR(opt_body, step_size=2, gamma=0.5)
dataset = Stream() if args.iterable else Data()
loader = DataLoader(dataset, batch_size=BATCH, shuffle=not args.iterable, num_workers=args.workers)
noise = np.random.default_rng()  # seeded from the OS: a planted nondeterminism

with labcoat.replayable(
    model=model, optimizer={"body": opt_body, "head": opt_head}, scheduler=sched,
    every=args.every, ledger=False,
) as rec:
    rec.log(n_params=sum(p.numel() for p in model.parameters()))  # before any loop: not replayed
    rec.log(base_lr=args.base_lr)  # a hyperparameter, logged
    for epoch in rec.loop("epoch", range(args.epochs)):
        model.train()
        for i, (x, y) in rec.enumerate("step", loader):
            if rec.step == args.kill_at:
                time.sleep(0.5)  # the log's lines reach the file within 50 ms
                os.kill(os.getpid(), signal.SIGKILL)
            if rec.step == args.raise_at:
                raise FloatingPointError("planted crash")
            if rec.step == args.diverge_at:
                with torch.no_grad():
                    body[0].weight.add_(1e-3)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                out = model(x)
            loss = nn.functional.cross_entropy(out.float(), y) / 2
            if args.nondet:
                loss = loss + 1e-4 * float(noise.random())
            loss.backward()
            if i % 2 == 1:  # gradient accumulation over two batches
                nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt_body.step(); opt_head.step()
                opt_body.zero_grad(); opt_head.zero_grad()
            rec.log(loss=loss)
            # HINDSIGHT
        sched.step()
        rec.log(lr=sched.get_last_lr()[0])
with open("after.txt", "a") as fh:  # what follows the recording: a replay must not run it
    fh.write("x")
print(rec.dir)
"""

HINDSIGHT = "rec.log(weight_norm=float(body[0].weight.norm()))"


def env(tmp: Path) -> dict[str, str]:
    out = dict(os.environ)
    out["PYTHONPATH"] = os.pathsep.join([str(SRC), out.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    out["LABCOAT_RUNS"] = str(tmp / "runs")
    out.pop("LABCOAT_REPLAY", None)
    return out


def write_script(tmp: Path, name: str = "train.py", text: str = SCRIPT) -> Path:
    path = tmp / name
    path.write_text(text)
    return path


def record(tmp: Path, *flags: str, script: Path | None = None, check: bool = True) -> Path:
    """Run the script under labcoat.replayable; returns the run's directory."""
    script = script or write_script(tmp)
    proc = subprocess.run(
        [sys.executable, str(script), *flags],
        cwd=tmp,
        env=env(tmp),
        capture_output=True,
        text=True,
        timeout=300,
    )
    if check:
        assert proc.returncode == 0, proc.stderr[-3000:]
        return Path(proc.stdout.strip().splitlines()[-1])
    runs = sorted((tmp / "runs").iterdir())
    return [r for r in runs if r.is_dir()][-1]


def cli(tmp: Path, *args: str) -> tuple[int, Any, str]:
    """``labcoat ARGS --json`` in a subprocess: (exit code, parsed JSON or None, stderr)."""
    proc = subprocess.run(
        [sys.executable, "-m", "labcoat", *args],
        cwd=tmp,
        env=env(tmp),
        capture_output=True,
        text=True,
        timeout=600,
    )
    data = json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else None
    return proc.returncode, data, proc.stderr
