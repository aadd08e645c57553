"""How long the doctor's ladder takes on scikit-learn's digits, layer by layer, for three model sizes.

Prints one row per model: seconds per layer, the self-test, steps the overfit control needed to
memorise its batch, and the shares of the two budgets the issue sets (data + model + update
under 2 s; the whole ladder in budget="fast" under 30 s), all measured in this one run.

    python bench/doctor.py [--threads N]

Tiny models gain nothing from intra-op threads and lose a lot when the cores are shared, so the
table is measured with one torch thread unless ``--threads`` says otherwise.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import torch  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from torch import nn  # noqa: E402

import labcoat  # noqa: E402

FIRST_THREE_BUDGET_S = 2.0
LADDER_BUDGET_S = 30.0
SIZES = {"small": (32,), "medium": (128, 128), "large": (512, 512)}


def mlp(hidden: tuple[int, ...]) -> nn.Module:
    torch.manual_seed(0)
    layers: list[nn.Module] = []
    width = 64
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        width = h
    return nn.Sequential(*layers, nn.Linear(width, 10))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    torch.set_num_threads(parser.parse_args().threads)
    console = Console(width=160)
    X, y = load_digits(return_X_y=True)
    data = (torch.tensor(X / 16.0, dtype=torch.float32), torch.tensor(y))
    table = Table(title=f"labcoat doctor on digits ({len(y)} examples, budget='fast', torch threads={torch.get_num_threads()})")
    for col in ("model", "params", "data", "model", "update", "overfit", "shuffle", "self-test", "total", "steps to fit", "data+model+update vs 2 s", "ladder vs 30 s"):
        table.add_column(col, justify="right")
    for name, hidden in SIZES.items():
        model = mlp(hidden)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        start = time.perf_counter()
        report = labcoat.diagnose(model, data, nn.CrossEntropyLoss(), optimizer, ledger=False, progress=False)
        total = time.perf_counter() - start
        t = report.timings
        first_three = t["data"] + t["model"] + t["update"]
        selftest = report.extras["selftest"]["duration_s"]
        fit = report["overfit.batch"].evidence
        table.add_row(
            name,
            f"{sum(p.numel() for p in model.parameters()):,}",
            *(f"{t.get(layer, float('nan')):.2f}" for layer in ("data", "model", "update", "overfit", "shuffle")),
            f"{selftest:.2f}",
            f"{total:.2f}",
            f"{fit['steps']} ({fit.get('fitted', '?')}/{fit['examples']})",
            f"{first_three:.2f} ({first_three / FIRST_THREE_BUDGET_S:.0%})",
            f"{total:.2f} ({total / LADDER_BUDGET_S:.0%})",
        )
        if not report.ok:
            console.print(f"[red]{name}: {report.summary()}")
    console.print(table)
    console.print("times in seconds; 'steps to fit' is the overfit control's steps until its batch was memorised")


if __name__ == "__main__":
    main()
