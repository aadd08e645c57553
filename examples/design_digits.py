"""A worked design: which of five interventions helps an MLP on scikit-learn's digits?

lr, width, dropout, weight decay and input-noise augmentation, two levels each. A pilot of four
seeds of one configuration gives the seed noise; labcoat.design picks a 2^(5-1) fraction
(resolution V: every main effect and two-factor interaction estimable apart) over two seeds,
32 short trainings on the CPU; the analysis estimates the 15 effects with Holm-adjusted tests.
With ``--ledger PATH`` the same grid goes through a ledger: the pilot's trainings are recorded
runs (their seed variance is the noise), the design is registered before any training, each
training is a run tagged with its factor levels, and the verdict judges them.
Run: python examples/design_digits.py [--html design.html] [--ledger lab.db]
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
    parser.add_argument("--ledger", default=None, help="Register the design and record the runs.")
    args = parser.parse_args()
    torch.set_num_threads(1)
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    split = train_test_split(x, digits.target, test_size=0.5, random_state=0)
    data = [torch.tensor(a) for a in split]
    data[2], data[3] = data[2].long(), data[3].long()
    start = time.perf_counter()
    if args.ledger:
        through_ledger(args.ledger, data, args.html)
        print(f"{4 + 32} trainings in {time.perf_counter() - start:.0f} s")
        return
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


def through_ledger(location: str, data, html: str | None) -> None:
    """The pilot, the design, its registration, the tagged runs and the verdict, on a ledger."""
    import labcoat.design

    ledger = labcoat.Ledger(location)
    for s in range(4):  # earlier runs of one configuration: their spread is the seed noise
        with ledger.run(config=BASE, seeds=100 + s, git=False) as run:
            run.record_event("accuracy", value=train(BASE, 100 + s, data))
    d = labcoat.design(
        FACTORS, runs=16, seeds=2, effect_size=0.02, needed=["lr", "width"], ledger=ledger,
        metric="accuracy",
    )  # fmt: skip
    print(d.describe())
    print(f"  noise {d.noise:.4f}: {d.noise_source}")
    entry = labcoat.design.register(
        ledger, "which interventions help the digits MLP", d,
        predict="lr and width matter", metric="accuracy",
    )  # fmt: skip
    for planned in d.runs:
        with ledger.run(factors=planned, config=planned, git=False) as run:
            run.record_event("accuracy", value=train(planned, planned["seed"], data))
    v = labcoat.design.verdict(ledger, entry)
    print(v.headline)
    for reason in v.reasons:
        print(f"  {reason}")
    for r in v.to_dict()["effects"]:
        lo, hi = r["ci"]
        print(f"  {r['effect']:<34} {r['estimate']:+.4f}  [{lo:+.4f}, {hi:+.4f}]  "
              f"p_holm={r['pvalue_adjusted']:.3g}  {r['decision']}")  # fmt: skip
    if html:
        v.to_html(html)
    ledger.close()


if __name__ == "__main__":
    main()
