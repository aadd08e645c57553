"""Fit the prior that ``labcoat.scale`` calibrates with when a user's runs are too few.

For every public curve below and every form, the rolling-origin backtest of
:mod:`labcoat.scale.calibrate` records extrapolation errors against log distance; the prior is,
per form, the slope that puts the level's share of the errors beyond each curve's own residual
scatter under ``slope · distance`` (the 95 % quantile of ``(|error| − q95|residual|)⁺ / d``).
The table is written to ``src/labcoat/scale/prior_table.py``.

Data (ColPret, ../shared/data/scaling/colpret): GPT-3 training curves, RedPajama-INCITE
2.4B/6.7B, DataBlations single-epoch runs, Pile-T5, OPT and OLMo validation loss against steps
or tokens, and OLMo's downstream errors (1 − accuracy) against steps; for the two-variable form
(``chinchilla``), the 24 loss curves of Gadre et al.'s over-training grid
(:func:`overtrain_curves`). The same curves are those bench/scale_colpret.py and
bench/scale_two_variable.py hold out by scale to evaluate the calibration.
The 92-task benchmark (benchmark.*.csv) and the Chinchilla points are never read here: they are
held-out test data.
Run: python bench/scale_prior.py [--write] [--forms chinchilla]   (about five minutes on two
cores; ``--forms``: remake only these entries, the others kept as shipped)
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

from labcoat.scale.calibrate import frontier_reach, rolling_pairs
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


def all_curves() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The prior's curves plus OPT's validation trajectories (log perplexity against tokens)."""
    out = dict(curves())
    groups = defaultdict(list)
    with (COLPRET / "aggregated_eval/opt_trajectories.csv").open() as fh:
        for r in csv.DictReader(fh):
            groups[r["model_size"]].append((10 ** float(r["num_token"]), np.log(float(r["ppl"]))))
    for size, rows in groups.items():
        a = np.array(rows)
        x, y = _thin(a[:, 0], a[:, 1])
        if x.size >= 12:
            out[f"opt/{size}"] = (x, y)
    return out


OLMO_TASKS = (
    "piqa_len_norm",
    "arc_easy_acc",
    "hellaswag_len_norm",
    "openbook_qa_len_norm",
    "winogrande_acc",
    "sciq_acc",
)
OLMO_LOSSES = ("c4_en-validation/CrossEntropyLoss", "pile-validation/CrossEntropyLoss")


def olmo_curves() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """OLMo's validation losses and downstream errors (1 − accuracy) against steps: the
    error-rate curves are noisy and bend, like the benchmark's few-shot error curves."""
    columns = [f"downstream/{t}" for t in OLMO_TASKS] + list(OLMO_LOSSES)
    groups = defaultdict(list)
    with (COLPRET / "aggregated_eval/olmo.csv").open() as fh:
        for r in csv.DictReader(fh):
            if not r["Step"] or float(r["Step"]) <= 0:
                continue
            for col in columns:
                if r.get(col):
                    value = float(r[col])
                    value = 1.0 - value if col.startswith("downstream/") else value
                    groups[
                        (
                            r["model_name"].strip(),
                            col.split("/")[-1] if "downstream" in col else col.split("-")[0],
                        )
                    ].append((float(r["Step"]), value))
    out = {}
    for (model, what), rows in groups.items():
        a = np.array(rows)
        x, y = _thin(a[:, 0], a[:, 1])
        if x.size >= 12:
            out[f"olmo-{'err' if 'acc' in what or 'norm' in what else 'loss'}/{model}/{what}"] = (
                x,
                y,
            )
    return out


OVERTRAIN = COLPRET / "raw_data" / "overtrain" / "overtrain_downstreams.csv"


def overtrain_curves() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Gadre et al.'s over-training grid, the two-variable curves: per training set
    (``dataset_name``: C4, RedPajama, RefinedWeb) and evaluation loss (every ``loss_*`` column
    but the bounds), the runs' (N, D) and that loss: 24 curves of 34–35 runs at 6 model sizes
    (11M–6.9B) and 5–640 tokens per parameter. Not the Chinchilla points: those are test data."""
    with OVERTRAIN.open() as fh:
        rows = list(csv.DictReader(fh))
    columns = [
        c
        for c in rows[0]
        if c.startswith("loss_") and not c.startswith(("loss_upper", "loss_lower"))
    ]
    out = {}
    for dataset in sorted({r["dataset_name"] for r in rows}):
        runs = [r for r in rows if r["dataset_name"] == dataset]
        x = np.array([[float(r["N"]), float(r["D"])] for r in runs]).T
        for column in columns:
            y = np.array([float(r[column]) if r[column] else np.nan for r in runs])
            keep = np.isfinite(y) & (y > 0)
            out[f"{dataset}/{column[len('loss_') :]}"] = (x[:, keep], y[keep])
    return out


def excess_slopes(pairs, share: float | None = 1.0) -> np.ndarray:
    """(|error| − the curve's q95 |residual|)⁺ / d for every pair with d > 0: the residual
    quantile over every size (``share=1``) or at its frontier (``share=None``: the
    library's :data:`~labcoat.scale.calibrate.FRONTIER_SHARE`; see ``frontier_reach``)."""
    floor = frontier_reach(pairs, LEVEL, share)
    d, e = pairs.distances, pairs.errors
    inside = d > 1e-3
    return np.maximum(np.abs(e[inside]) - floor, 0.0) / d[inside], d[inside]


def prior_slope(pairs_list) -> dict:
    """The prior's entry for one form from the backtest pairs of many curves: the slope
    beyond every size's residual reach (``upper``, the floor of a backtested band) and beyond
    the frontier's (``frontier``, the band where the prior alone calibrates)."""
    parts = [excess_slopes(p) for p in pairs_list]
    s = np.concatenate([p[0] for p in parts])
    d = np.concatenate([p[1] for p in parts])
    b = float(np.quantile(s, LEVEL))
    front = np.concatenate([excess_slopes(p, None)[0] for p in pairs_list])
    return {
        "upper": b,
        "lower": b,
        "frontier": float(np.quantile(front, LEVEL)),
        "max_distance": float(d.max()),
        "pairs": s.size,
    }


FRONTIER_LEVELS = (0.8, 0.9, 0.95, 0.99)


def frontier(records, levels=FRONTIER_LEVELS) -> dict:
    """The factor by which held-out-by-scale errors exceeded the fit's own backtest band.

    For every curve split of ``bench/scale_colpret.py`` (the larger 15 % or 25 % of each
    curve's log range held out), the form ``form="auto"`` picks is calibrated from its own
    backtests alone (no prior, no form-choice widening) and each held-out error is divided by
    the band's reach at its distance; the factor at a level is the split-conformal quantile of
    those ratios, the ``⌈(n + 1)·level⌉``-th smallest of n."""
    from labcoat.scale.api import select_form
    from labcoat.scale.calibrate import calibrate

    factors, n = [], 0
    for level in levels:
        ratios = []
        for rec in records:
            found = {k: v["pairs"] for k, v in rec["forms"].items()}
            if not any(np.isfinite(p.late_rmse) for p in found.values()):
                continue
            name = select_form(found, level)["chosen"]  # auto's own rule, refusals included
            band = calibrate(found[name], level, name, use_prior=False)
            if band.method == "prior":
                continue
            lo, hi = band.band(rec["distance"])
            e = rec["forms"][name]["error"]
            ratios.append(np.where(e >= 0, e / np.maximum(hi, 1e-12), e / np.minimum(lo, -1e-12)))
        r = np.sort(np.concatenate(ratios))
        n = r.size
        k = min(int(np.ceil((n + 1) * level)), n) - 1
        factors.append(max(float(r[k]), 1.0))
    return {"levels": list(levels), "factors": factors, "points": n, "splits": len(records)}


def _show(name: str, entry: dict) -> None:
    print(
        f"{name:10s} slope {entry['upper']:.4f} per log unit beyond every size's residuals, "
        f"{entry['frontier']:.4f} beyond the frontier's ({entry['pairs']} pairs, d up to "
        f"{entry['max_distance']:.2f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write prior_table.py")
    parser.add_argument(
        "--cache", type=Path, help="bench/scale_colpret.py's pickle of held-out-by-scale fits"
    )
    parser.add_argument(
        "--forms",
        help="comma-separated entries to remake (e.g. chinchilla); the rest and the frontier "
        "factors are kept from the shipped table",
    )
    args = parser.parse_args()
    if not COLPRET.is_dir():
        sys.exit(f"{COLPRET} not found: the prior needs ../shared/data")
    from labcoat.scale.prior_table import PRIOR

    start = time.perf_counter()
    forms = {**CURVES, "curve": CURVE}
    wanted = set(args.forms.split(",")) if args.forms else {*forms, "chinchilla", "default"}
    unknown = wanted - {*forms, "chinchilla", "default"}
    if unknown:
        sys.exit(f"--forms: no entry {', '.join(sorted(unknown))}")
    table: dict[str, dict] = {k: v for k, v in PRIOR["forms"].items() if k not in wanted}
    data = {**all_curves(), **olmo_curves()}
    if wanted - {"chinchilla"}:
        print(f"{len(data)} public curves: {', '.join(sorted(data))}")
        pooled = []
        for name, form in forms.items():
            found = []
            for x, y in data.values():
                xs = x[None]
                theta = grid_search(form, xs, y, DELTA).theta
                found.append(rolling_pairs(form, xs, y, DELTA, theta))
            pooled += found
            table[name] = prior_slope(found)
            _show(name, table[name])
        table["default"] = prior_slope(pooled)
        _show("default", table["default"])
    if "chinchilla" in wanted:
        found = []
        for x, y in overtrain_curves().values():
            theta = grid_search(CHINCHILLA, x, y, DELTA).theta
            found.append(rolling_pairs(CHINCHILLA, x, y, DELTA, theta))
        table["chinchilla"] = prior_slope(found)
        _show("chinchilla", table["chinchilla"])
    print(f"{time.perf_counter() - start:.0f} s")
    if args.forms:
        front = PRIOR["frontier"]
    else:
        import pickle

        from scale_colpret import collect

        if args.cache and args.cache.is_file():
            records = pickle.loads(args.cache.read_bytes())
        else:
            records = collect(data)
            if args.cache:
                args.cache.write_bytes(pickle.dumps(records))
        front = frontier(records)
    print(
        "frontier factors (held-out error / own backtest band): "
        + ", ".join(f"{lv:.0%} ×{f:.2f}" for lv, f in zip(front["levels"], front["factors"]))
        + f" over {front['points']} held-out points of {front['splits']} curve splits"
    )
    prior = {
        "frontier": front,
        "level": LEVEL,
        "source": "bench/scale_prior.py: ColPret curves (GPT-3, RedPajama, DataBlations, "
        "Pile-T5, OPT; OLMo losses and downstream errors; for the two-variable form, the "
        "over-training grid's loss curves)",
        "forms": {k: {**v, "coverage": None} for k, v in sorted(table.items())},
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
