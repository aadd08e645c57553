"""The two-variable calibration (L = E + A/N^α + B/D^β) tuned on the over-training grid.

The Chinchilla points are test data (bench/scale_extrapolation.py backtests them); the rules
of the two-variable band are chosen here instead, on Gadre et al.'s over-training grid
(ColPret's ``overtrain_downstreams.csv``, :func:`scale_prior.overtrain_curves`): 3 training sets
× 8 evaluation losses, 34–35 runs each at 6 model sizes and 5–640 tokens per parameter. Each
curve is backtested as the Chinchilla points are, by ``scale.backtest(interval="calibrated")``:
its largest runs held out by model size (the two largest sizes, 3 runs: the next size down
would hold out 11 of 35 and leave 3 sizes) and by compute (the 6 largest, 17 %, the share of
Chinchilla's 42 of 235). The prior's ``chinchilla`` entry is, per training set, made from the
other two sets' full curves only (leave one set out), so no held-out run informs its own band.

ColPret's IBM_MoE.csv is not used: it holds learning curves of six mixture-of-experts and dense
architectures at 4–17B parameters, not one family's grid over N and D; chinchila_extracted.csv is
the Chinchilla figure again.

Printed per rule variant (the two-variable constants of ``labcoat.scale.calibrate``): coverage
of the 95 % band, median width ((high − low) / predicted), mean interval score per unit of the
observed value and point error, by size, by compute and pooled.
Run: python bench/scale_two_variable.py [--cache FILE]   (about fifteen minutes on two cores;
with a cache written by an earlier run, about three)
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scale_colpret import with_rules
from scale_prior import COLPRET, DELTA, overtrain_curves, prior_slope

from labcoat import scale
from labcoat.scale import calibrate as cal
from labcoat.scale.forms import CHINCHILLA
from labcoat.scale.score import interval_score
from labcoat.scale.search import grid_search

LEVEL = 0.95
#: the runs each curve holds out, as ``scale.backtest(top=...)``
HOLDOUT_TOP = {"n": 3, "compute": 6}


def full_pairs(curves, thetas: dict | None = None) -> dict[str, cal.Pairs]:
    """Each whole curve's rolling-origin pairs under the rules in force: what the prior's
    two-variable entry is made of. ``thetas``: name -> the whole curve's fit, filled in."""
    thetas = {} if thetas is None else thetas
    out = {}
    for name, (x, y) in curves.items():
        if name not in thetas:
            thetas[name] = grid_search(CHINCHILLA, x, y, DELTA).theta
        out[name] = cal.rolling_pairs(CHINCHILLA, x, y, DELTA, thetas[name])
    return out


def collect(curves) -> list[dict]:
    """Per curve and holdout: ``scale.backtest``'s result (its fit keeps the rolling pairs)."""
    records = []
    for name, (x, y) in curves.items():
        for holdout, top in HOLDOUT_TOP.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = scale.backtest(
                    x[0], x[1], y, holdout=holdout, top=top, n_resamples=0, level=LEVEL
                )
            records.append(
                {"curve": name, "set": name.split("/")[0], "holdout": holdout, "result": result}
            )
        print(f"  {name}: {x.shape[1]} runs", flush=True)
    return records


def set_priors(state: dict) -> dict[str, dict]:
    """Per training set, the shipped prior with its ``chinchilla`` entry made by
    ``bench/scale_prior.py``'s rule from the other training sets' whole curves only, their
    rolling origins under the rules in force (``state``: the bench's cached fits)."""
    from labcoat.scale.prior_table import PRIOR

    key = cal.TWO_VARIABLE_MIN_LEVELS
    if key not in state["full"]:
        state["full"][key] = full_pairs(state["curves"], state["thetas"])
    full = state["full"][key]
    out = {}
    for name in {k.split("/")[0] for k in full}:
        others = [p for k, p in full.items() if k.split("/")[0] != name]
        forms = {**PRIOR["forms"], "chinchilla": {**prior_slope(others), "coverage": None}}
        out[name] = {**PRIOR, "forms": forms}
    return out


def score(records, priors: dict | None, level: float = LEVEL) -> dict[str, dict]:
    """Coverage, median width, interval score and point error of the calibrated band at the
    held-out runs, recalibrated under the rules in force (``priors``: training set -> prior
    table; None: the shipped one), by holdout and pooled."""
    parts: dict[str, list] = {}
    for rec in records:
        r = rec["result"]
        original = cal.load_prior
        if priors is not None:
            cal.load_prior = lambda: priors[rec["set"]]
        try:
            # the rolling origins depend on the rules in force: recomputed once per rule
            cached = rec.setdefault("pairs", {})
            key = cal.TWO_VARIABLE_MIN_LEVELS
            if key not in cached:
                r.fit._pairs = None
                cached[key] = r.fit.backtest_pairs()
            r.fit._pairs = cached[key]
            r.fit._calibrations.clear()
            N = np.array([p["N"] for p in r.points])
            D = np.array([p["D"] for p in r.points])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                p = r.fit.predict(N, D, level=level)
        finally:
            cal.load_prior = original
            r.fit._calibrations.clear()
        observed = np.array([q["observed"] for q in r.points])
        lo, hi = p.interval
        row = np.vstack(
            [
                (observed >= lo) & (observed <= hi),
                (hi - lo) / p.loss,
                interval_score(lo, hi, observed, level),
                100 * np.abs(p.loss - observed) / observed,
            ]
        )
        parts.setdefault(rec["holdout"], []).append(row)
        parts.setdefault("pooled", []).append(row)
    out = {}
    for key, rows in parts.items():
        a = np.hstack(rows)
        out[key] = {
            "coverage": float(a[0].mean()),
            "n": int(a.shape[1]),
            "median_width": float(np.median(a[1])),
            "interval_score": float(a[2].mean()),
            "point_error": float(a[3].mean()),
        }
    return out


#: the two-variable rules compared (``labcoat.scale.calibrate`` constants): the band's kind,
#: the prior's floor, and how many distinct sizes of each variable a rolling origin needs
BANDS = {
    f"{kind} band, {floor}": {"TWO_VARIABLE_BAND": kind, "TWO_VARIABLE_FLOOR": key}
    for kind in ("symmetric", "split")
    for key, floor in (
        ("every", "floor from every size"),
        ("frontier", "floor from the frontier"),
        ("none", "no floor"),
    )
}
BANDS["the prior's band alone (frontier intercept and slope)"] = {"TWO_VARIABLE_BAND": "prior"}
VARIANTS = {
    f"{label}; origins with {levels}+ sizes of N and D": {
        **rules,
        "TWO_VARIABLE_MIN_LEVELS": levels,
    }
    for levels in (1, 2, 3)
    for label, rules in BANDS.items()
}


def show(label: str, figures: dict[str, dict]) -> None:
    print(f"{label}:")
    for key in ("n", "compute", "pooled"):
        f = figures[key]
        print(
            f"  {('by ' + key) if key != 'pooled' else key:10s} coverage {f['coverage']:.1%} of "
            f"{f['n']}, median width {f['median_width']:.2%}, interval score "
            f"{f['interval_score']:.2%}, point error {f['point_error']:.2f}%"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cache", type=Path, help="pickle of the fits: read if present, else written"
    )
    args = parser.parse_args()
    if not COLPRET.is_dir():
        sys.exit(f"{COLPRET} not found")
    start = time.perf_counter()
    curves = overtrain_curves()
    if args.cache and args.cache.is_file():
        state = pickle.loads(args.cache.read_bytes())
    else:
        state = {"records": collect(curves), "full": {}, "thetas": {}}
    state["curves"] = curves
    records = state["records"]
    print(
        f"{len(curves)} over-training curves, {len(records)} splits, "
        f"{time.perf_counter() - start:.0f} s"
    )
    show(
        "as shipped, with the shipped prior (its chinchilla entry made from these curves, "
        "the held-out runs too: not a held-out figure)",
        score(records, None),
    )
    print("\nleave-one-training-set-out priors:")
    for label, rules in VARIANTS.items():
        show(label, with_rules(rules, lambda: score(records, set_priors(state))))
    if args.cache:
        args.cache.write_bytes(pickle.dumps(state))


if __name__ == "__main__":
    main()
