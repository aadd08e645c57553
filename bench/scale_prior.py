"""Fit the prior that ``labcoat.scale`` calibrates with when a user's runs are too few.

For every public curve below and every form, the rolling-origin backtest of
:mod:`labcoat.scale.calibrate` records extrapolation errors against log distance; the prior is,
per form, the slope that puts the level's share of the errors beyond each curve's own residual
scatter under ``slope · distance`` (the 95 % quantile of ``(|error| − q95|residual|)⁺ / d``).
The table is written to ``src/labcoat/scale/prior_table.py``.

Data (ColPret, ../shared/data/scaling/colpret; and the Chinchilla points, ../shared/data/
chinchilla): GPT-3 training curves, RedPajama-INCITE 2.4B/6.7B, DataBlations single-epoch runs,
Pile-T5 and OLMo validation loss against steps; the Chinchilla points for the two-variable form.
The 92-task benchmark (benchmark.*.csv) is never read here: it is held-out test data.
Run: python bench/scale_prior.py [--write]   (about two minutes on two cores)
"""

from __future__ import annotations

import argparse
import csv
import pprint
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from labcoat.scale.calibrate import rolling_pairs
from labcoat.scale.curves import CURVES
from labcoat.scale.forms import CHINCHILLA, CURVE
from labcoat.scale.search import grid_search

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT / ".." / "shared" / "data"
COLPRET = SHARED / "scaling" / "colpret"
LEVEL = 0.95
DELTA = 1e-3
MAX_POINTS = 60


def _thin(x, y, limit=MAX_POINTS):
    order = np.argsort(x)
    x, y = x[order], y[order]
    keep = (x > 0) & (y > 0) & np.isfinite(y)
    x, y = x[keep], y[keep]
    x, y = x[x >= x.max() * 0.02], y[x >= x.max() * 0.02]  # past warm-up
    if x.size > limit:
        grid = np.linspace(np.log(x[0]), np.log(x[-1]), limit)
        idx = np.unique(np.searchsorted(np.log(x), grid).clip(0, x.size - 1))
        x, y = x[idx], y[idx]
    return x, y


def curves() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    groups = defaultdict(list)
    with (COLPRET / "raw_data/gpt3/extracted.csv").open() as fh:
        for r in csv.DictReader(fh):
            if r["train_loss"]:
                groups[r["model"]].append((float(r["step"]), float(r["train_loss"])))
    for model, rows in groups.items():
        a = np.array(rows)
        out[f"gpt3/{model}"] = _thin(a[:, 0], a[:, 1])
    for size in ("2.4B", "6.7B"):
        a = np.loadtxt(COLPRET / f"raw_data/redPajama/{size}.csv", delimiter=",")
        out[f"redpajama/{size}"] = _thin(a[:, 0], a[:, 1])
    groups = defaultdict(list)
    with (COLPRET / "aggregated_eval/datablations_losses.csv").open() as fh:
        for r in csv.DictReader(fh):
            if r["epochs"] == "1":
                groups[(r["data"], r["num_params"])].append(
                    (float(r["token_num"]), float(r["loss"]))
                )
    for key, rows in groups.items():
        a = np.array(rows)
        out[f"datablations/{key[0]}-{key[1]}"] = _thin(a[:, 0], a[:, 1])
    groups = defaultdict(list)
    with (COLPRET / "aggregated_eval/t5_pile.csv").open() as fh:
        for r in csv.DictReader(fh):
            if r["loss"] and float(r["steps"]) > 0:
                groups[r["model_name"]].append((float(r["steps"]), float(r["loss"])))
    for model, rows in groups.items():
        a = np.array(rows)
        out[f"t5_pile/{model}"] = _thin(a[:, 0], a[:, 1])
    column = "v2-small-c4_en-validation/CrossEntropyLoss"
    groups = defaultdict(list)
    with (COLPRET / "aggregated_eval/olmo.csv").open() as fh:
        for r in csv.DictReader(fh):
            if r.get(column) and float(r["Step"]) > 0:
                groups[r["model_name"].strip()].append((float(r["Step"]), float(r[column])))
    for model, rows in groups.items():
        a = np.array(rows)
        out[f"olmo/{model}"] = _thin(a[:, 0], a[:, 1])
    return {k: v for k, v in out.items() if v[0].size >= 12}


def chinchilla():
    path = SHARED / "chinchilla" / "svg_extracted_data.csv"
    with path.open() as fh:
        rows = list(csv.DictReader(fh))
    N = np.array([float(r["Model Size"]) for r in rows])
    C = np.array([float(r["Training FLOP"]) for r in rows])
    L = np.array([float(r["loss"]) for r in rows])
    keep = np.sort(np.argsort(L, kind="stable")[:-5])
    return np.vstack([N[keep], C[keep] / (6 * N[keep])]), L[keep]


def excess_slopes(pairs) -> np.ndarray:
    """(|error| − the curve's q95 |residual|)⁺ / d for every pair with d > 0."""
    floor = np.quantile(np.abs(pairs.residuals), LEVEL) if pairs.residuals.size else 0.0
    d, e = pairs.distances, pairs.errors
    inside = d > 1e-3
    return np.maximum(np.abs(e[inside]) - floor, 0.0) / d[inside], d[inside]


def prior_slope(pairs_list) -> dict:
    """The prior's entry for one form from the backtest pairs of many curves."""
    parts = [excess_slopes(p) for p in pairs_list]
    s = np.concatenate([p[0] for p in parts])
    d = np.concatenate([p[1] for p in parts])
    b = float(np.quantile(s, LEVEL))
    return {"upper": b, "lower": b, "max_distance": float(d.max()), "pairs": s.size}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write prior_table.py")
    args = parser.parse_args()
    if not COLPRET.is_dir():
        sys.exit(f"{COLPRET} not found: the prior needs ../shared/data")
    start = time.perf_counter()
    data = curves()
    print(f"{len(data)} public curves: {', '.join(sorted(data))}")
    forms = {**CURVES, "curve": CURVE}
    table: dict[str, dict] = {}
    pooled_slopes, pooled_d = [], []
    for name, form in forms.items():
        slopes, dists = [], []
        for x, y in data.values():
            xs = x[None]
            theta = grid_search(form, xs, y, DELTA).theta
            s, d = excess_slopes(rolling_pairs(form, xs, y, DELTA, theta))
            slopes.append(s)
            dists.append(d)
        s, d = np.concatenate(slopes), np.concatenate(dists)
        pooled_slopes.append(s)
        pooled_d.append(d)
        b = float(np.quantile(s, LEVEL))
        table[name] = {"upper": b, "lower": b, "max_distance": float(d.max()), "pairs": s.size}
        print(f"{name:8s} slope {b:.4f} per log unit ({s.size} pairs, d up to {d.max():.2f})")
    x, y = chinchilla()
    theta = grid_search(CHINCHILLA, x, y, DELTA).theta
    s, d = excess_slopes(rolling_pairs(CHINCHILLA, x, y, DELTA, theta))
    b = float(np.quantile(s, LEVEL))
    table["chinchilla"] = {"upper": b, "lower": b, "max_distance": float(d.max()), "pairs": s.size}
    print(f"chinchilla slope {b:.4f} per log unit ({s.size} pairs, d up to {d.max():.2f})")
    s_all = np.concatenate(pooled_slopes)
    d_all = np.concatenate(pooled_d)
    b = float(np.quantile(s_all, LEVEL))
    table["default"] = {
        "upper": b,
        "lower": b,
        "max_distance": float(d_all.max()),
        "pairs": s_all.size,
    }
    print(f"default  slope {b:.4f} per log unit; {time.perf_counter() - start:.0f} s")
    prior = {
        "level": LEVEL,
        "source": "bench/scale_prior.py: ColPret curves (GPT-3, RedPajama, DataBlations, "
        "Pile-T5, OLMo) and the Chinchilla points",
        "forms": {k: {**v, "coverage": None} for k, v in table.items()},
    }
    if args.write:
        target = ROOT / "src" / "labcoat" / "scale" / "prior_table.py"
        header = (
            '"""The shipped prior for calibrating extrapolation when the runs are too few: '
            "written by\n``bench/scale_prior.py`` from public scaling data; do not edit by "
            'hand."""\n\n'
        )
        target.write_text(header + "PRIOR = " + pprint.pformat(prior, width=96) + "\n")
        print(f"wrote {target}")


if __name__ == "__main__":
    main()
