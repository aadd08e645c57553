"""The calibrated interval and ``form="auto"`` on ColPret curves held out by scale.

This is the evaluation ``labcoat.scale``'s calibration and form choice are tuned on (the 92-task
benchmark is test data and is never read here). It mimics the benchmark's situation: each public
curve is split by scale, the smaller part fitted and the larger part predicted. Two splits per
curve: the largest 15 % and 25 % of the curve's log range held out (the benchmark's held-out
points reach about ×2 past the fitted ones, 0.5–0.8 log units, over fitted log ranges of 3–6).

For honesty about the shipped prior (fitted on these same curves by ``bench/scale_prior.py``),
each family is evaluated with a prior fitted on the *other* families only (leave one family out).

Printed: coverage and median width ((high − low) / predicted) of the calibrated 95 % interval
over all held-out points and by family; the median over curve-splits of the RMSE of log loss for
``form="auto"`` and each plain form.

Data: ColPret (../shared/data/scaling/colpret): GPT-3, RedPajama, DataBlations (single epoch),
Pile-T5, OLMo and OPT training curves (loss against tokens or steps).
Run: python bench/scale_colpret.py [--cache FILE]   (about ten minutes on two cores; with a
cache written by an earlier run, seconds)
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np
from scale_prior import COLPRET, DELTA, all_curves, olmo_curves, prior_slope

from labcoat.scale import calibrate as cal
from labcoat.scale.curves import AUTO_CANDIDATES, CURVES
from labcoat.scale.search import grid_search

LEVEL = 0.95
HOLDOUT_SHARES = (0.15, 0.25)


def collect(data, shares=HOLDOUT_SHARES, records=None) -> list[dict]:
    """Per curve and split: every candidate form's fit, backtest pairs and held-out errors."""
    records = list(records or [])
    done = {r["curve"] for r in records}
    for name, (x, y) in data.items():
        if name in done:
            continue
        lx = np.log(x)
        for share in shares:
            cut = lx.max() - share * (lx.max() - lx.min())
            fit, test = lx <= cut, lx > cut
            xf, yf = x[fit][None], y[fit]
            group = name.split("/")[0]
            rec = {
                "curve": name,
                "family": group.split("-")[0],
                "group": group,
                "share": share,
                "forms": {},
            }
            rec["distance"] = cal.distance(xf, x[test][None])
            for form_name in AUTO_CANDIDATES:
                form = CURVES[form_name]
                if yf.size < len(form.names) + 1:
                    continue
                theta = grid_search(form, xf, yf, DELTA).theta
                pairs = cal.rolling_pairs(form, xf, yf, DELTA, theta)
                error = np.log(y[test]) - form.log_predict(theta, x[test][None])[0]
                rec["forms"][form_name] = {"theta": theta, "pairs": pairs, "error": error}
            records.append(rec)
            print(f"  {name} (last {share:.0%} held out): {int(test.sum())} points", flush=True)
    return records


def family_priors(records) -> dict[str, dict]:
    """A prior table per family, fitted on the other families' backtest pairs only."""
    from labcoat.scale.prior_table import PRIOR

    out = {}
    for family in {r["family"] for r in records}:
        others = [r for r in records if r["family"] != family]
        forms = {}
        for form_name in AUTO_CANDIDATES:
            pairs = [r["forms"][form_name]["pairs"] for r in others if form_name in r["forms"]]
            forms[form_name] = prior_slope(pairs)
        forms["default"] = prior_slope([f["pairs"] for r in others for f in r["forms"].values()])
        out[family] = {**PRIOR, "forms": {**PRIOR["forms"], **forms}}
    return out


def select(rec: dict, level: float = LEVEL) -> dict:
    """What ``form="auto"`` picks from these candidates' backtests (its shipped rule)."""
    from labcoat.scale.api import select_form

    return select_form({k: v["pairs"] for k, v in rec["forms"].items()}, level)


def evaluate(records, priors=None, level=LEVEL, widen=True, use_prior=True) -> dict:
    """Coverage, width, interval score and point error of ``form="auto"``'s calibrated band.

    ``priors``: family -> prior table (None: the shipped one); ``widen``: the shipped
    treatment of the forms auto cannot tell apart (False: none); ``use_prior``: the prior's
    floor. The band is built by the library's own functions (select_form, calibrate,
    Calibration.band), as ``fit(form="auto").predict`` builds it."""
    from labcoat.scale.score import interval_score

    covered, widths, scores, points, fam_cov = [], [], [], [], defaultdict(list)
    rmse = defaultdict(list)
    chosen = defaultdict(int)
    for rec in records:
        rec.setdefault("group", rec["family"])
        sel = select(rec, level)
        name = sel["chosen"]
        chosen[name] += 1
        form = rec["forms"][name]
        original = cal.load_prior
        if priors is not None:
            cal.load_prior = lambda: priors[rec["family"]]
        try:
            calibration = cal.calibrate(form["pairs"], level, name, use_prior=use_prior)
        finally:
            cal.load_prior = original
        e = form["error"]
        # another form's prediction minus the chosen one's, from their held-out errors
        shifts = [e - rec["forms"][k]["error"] for k in sel["indistinguishable"]] if widen else []
        lo, hi = calibration.band(rec["distance"], shifts, sel.get("weights"))
        inside = (e >= lo) & (e <= hi)
        covered.append(inside)
        fam_cov[rec.get("group", rec["family"])].append(inside)
        widths.append(np.exp(hi) - np.exp(lo))
        # observed / predicted = exp(e): the band and the score per unit of the prediction,
        # divided by exp(e) to put the score per unit of the observed value
        scores.append(interval_score(np.exp(lo), np.exp(hi), np.exp(e), level))
        points.append(100 * np.abs(np.expm1(-e)))
        rmse["auto"].append(np.sqrt(np.mean(e**2)))
        for k, v in rec["forms"].items():
            rmse[k].append(np.sqrt(np.mean(v["error"] ** 2)))
    covered, widths = np.concatenate(covered), np.concatenate(widths)
    return {
        "coverage": float(covered.mean()),
        "n": int(covered.size),
        "median_width": float(np.median(widths)),
        "interval_score": float(np.mean(np.concatenate(scores))),
        "median_interval_score": float(np.median(np.concatenate(scores))),
        "point_error": float(np.mean(np.concatenate(points))),
        "by_family": {k: float(np.concatenate(v).mean()) for k, v in sorted(fam_cov.items())},
        "rmse": {k: float(np.median(v)) for k, v in rmse.items()},
        "chosen": dict(chosen),
    }


#: the rules evaluated side by side: module constants of labcoat.scale (api, calibrate)
VARIANTS = {
    "before (union band, any origins, no floor refusal)": {
        "CHOICE_BAND": "union",
        "CHOICE_MIN_ORIGINS": 1,
        "CHOICE_MIN_FORMS": 1,
        "FLOOR_REFUSAL_Z": float("inf"),
    },
    "+ floor refusal": {
        "CHOICE_BAND": "union",
        "CHOICE_MIN_ORIGINS": 1,
        "CHOICE_MIN_FORMS": 1,
    },
    "+ evidence before choice (3 origins, 2 forms)": {"CHOICE_BAND": "union"},
    "+ spread band instead of union": {"CHOICE_BAND": "spread"},
    "spread band alone": {
        "CHOICE_BAND": "spread",
        "CHOICE_MIN_ORIGINS": 1,
        "CHOICE_MIN_FORMS": 1,
        "FLOOR_REFUSAL_Z": float("inf"),
    },
}


def with_rules(rules: dict, run):
    """``run()`` with the library's rule constants set as ``rules`` says, then restored."""
    from labcoat.scale import api

    owners = {name: (api if hasattr(api, name) else cal) for name in rules}
    saved = {name: getattr(owners[name], name) for name in rules}
    try:
        for name, value in rules.items():
            setattr(owners[name], name, value)
        return run()
    finally:
        for name, value in saved.items():
            setattr(owners[name], name, value)


def shipped_rules() -> str:
    from labcoat.scale import api

    return (
        f"{cal.CHOICE_BAND} band, {api.CHOICE_MIN_ORIGINS} origins and {api.CHOICE_MIN_FORMS} "
        f"forms to choose, floor refusal at {api.FLOOR_REFUSAL_Z:g} SE"
    )


def report(result: dict) -> None:
    print(
        f"calibrated 95% intervals: coverage {result['coverage']:.1%} of {result['n']} held-out "
        f"points, median width {result['median_width']:.1%}, interval score "
        f"{result['interval_score']:.2%} of the value (median {result['median_interval_score']:.2%}"
        f"), point error {result['point_error']:.2f}%"
    )
    print("  by family: " + ", ".join(f"{k} {v:.1%}" for k, v in result["by_family"].items()))
    rmse = result["rmse"]
    plain = {k: v for k, v in rmse.items() if k != "auto"}
    best = min(plain, key=plain.get)
    print(
        "median RMSE of log loss: auto "
        f"{rmse['auto']:.4f}; " + ", ".join(f"{k} {v:.4f}" for k, v in plain.items())
    )
    print(
        f"auto vs best plain ({best}): {rmse['auto'] / plain[best]:.3f}x; chose {result['chosen']}"
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
    records = []
    if args.cache and args.cache.is_file():
        records = pickle.loads(args.cache.read_bytes())
    data = {**all_curves(), **olmo_curves()}
    if {r["curve"] for r in records} != set(data):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            records = collect(data, records=records)
        if args.cache:
            args.cache.write_bytes(pickle.dumps(records))
    records = [
        r for r in records if any(np.isfinite(f["pairs"].late_rmse) for f in r["forms"].values())
    ]
    print(f"{len(records)} curve-splits with backtests, {time.perf_counter() - start:.0f} s")
    priors = family_priors(records)
    print(f"\n== as shipped ({shipped_rules()}) ==")
    report(evaluate(records, priors))
    for label, rules in VARIANTS.items():
        print(f"\n== {label} ==")
        report(with_rules(rules, lambda: evaluate(records, priors)))
    print("\n== without the form-choice widening ==")
    report(evaluate(records, priors, widen=False))
    print("\n== the chosen form's own backtests only (no prior, no widening) ==")
    report(evaluate(records, priors, widen=False, use_prior=False))


if __name__ == "__main__":
    main()
