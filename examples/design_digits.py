"""A worked design: which of five interventions helps an MLP on scikit-learn's digits?

lr, width, dropout, weight decay and input-noise augmentation, two levels each. A pilot of four
seeds of one configuration gives the seed noise; labcoat.design picks a 2^(5-1) fraction
(resolution V: every main effect and two-factor interaction estimable apart) over two seeds,
32 short trainings on the CPU; the analysis estimates the 15 effects with Holm-adjusted tests.
Run: python examples/design_digits.py [--html design.html]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import labcoat

FACTORS = {
    "lr": [1e-3, 1e-2],
    "width": [32, 128],
    "dropout": [0.0, 0.3],
    "weight_decay": [0.0, 1e-3],
    "augment": [False, True],
}
BASE = {"lr": 1e-3, "width": 32, "dropout": 0.0, "weight_decay": 0.0, "augment": False}


def train(config: dict, seed: int, data) -> float:
    """Held-out accuracy of one MLP trained with ``config`` from ``seed``."""
    x_train, x_test, y_train, y_test = data
    torch.manual_seed(seed)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, config["width"]),
        torch.nn.ReLU(),
        torch.nn.Dropout(config["dropout"]),
        torch.nn.Linear(config["width"], 10),
    )
    opt = torch.optim.Adam(model.parameters(), lr=config["lr"], weight_decay=config["weight_decay"])
    g = torch.Generator().manual_seed(seed)
    for _ in range(15):
        order = torch.randperm(len(x_train), generator=g)
        for i in range(0, len(order), 64):
            idx = order[i : i + 64]
            x = x_train[idx]
            if config["augment"]:
                x = x + 0.3 * torch.randn(x.shape, generator=g)
            loss = torch.nn.functional.cross_entropy(model(x), y_train[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    model.eval()
    with torch.no_grad():
        return float((model(x_test).argmax(1) == y_test).float().mean())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--html", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    split = train_test_split(x, digits.target, test_size=0.5, random_state=0)
    data = [torch.tensor(a) for a in split]
    data[2], data[3] = data[2].long(), data[3].long()
    start = time.perf_counter()
    pilot = [train(BASE, 100 + s, data) for s in range(4)]
    d = labcoat.design(FACTORS, runs=16, seeds=2, pilot=pilot, effect_size=0.02)
    print(d.describe())
    for line in d.statements[:3]:
        print(" ", line)
    if d.ofat:
        print(
            f"  one factor at a time needs {d.ofat['runs']} runs for the same power "
            f"({d.ofat['ratio']:.0%} of them here)"
        )
    rows = [{**run, "accuracy": train(run, run["seed"], data)} for run in d.runs]
    result = d.analyse(rows, metric="accuracy")
    print(result.headline)
    for r in result.effects:
        lo, hi = r["ci"]
        print(
            f"  {r['effect']:<34} {r['estimate']:+.4f}  [{lo:+.4f}, {hi:+.4f}]  "
            f"p_holm={r['pvalue_adjusted']:.3g}  {r['decision']}"
        )
    print(f"pilot noise {d.noise:.4f}; residual noise {result.noise:.4f}; "
          f"{len(rows) + len(pilot)} trainings in {time.perf_counter() - start:.0f} s")  # fmt: skip
    if args.html:
        result.to_html(args.html)


if __name__ == "__main__":
    main()
