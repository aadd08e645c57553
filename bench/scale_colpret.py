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


#: the thinned variant: each curve cut to each of these numbers of log-spaced sizes
THIN_SIZES = (7, 8, 9, 10)


def thinned(data) -> dict:
    """Each curve subsampled to 7, 8, 9 and 10 log-spaced sizes (the run nearest to each of
    evenly spaced points of its log range): the few-sizes regime of a user's learning curve,
    where no form has the origins a choice needs, so the rules for thin evidence are tuned
    here and not on the families they are tested on."""
    out = {}
    for name, (x, y) in sorted(data.items()):
        lx = np.log(x)
        for k in THIN_SIZES:
            targets = np.linspace(lx.min(), lx.max(), k)
            keep = np.unique([int(np.argmin(np.abs(lx - t))) for t in targets])
            out[f"{name}@{k}"] = (x[keep], y[keep])
    return out


def by_backtest(rec: dict) -> str:
    """The plain form (M1–M4) its own late-origin backtest picks; m2 (else m1) without one."""
    late = {k: v["pairs"].late_rmse for k, v in rec["forms"].items() if k != "broken"}
    late = {k: v for k, v in late.items() if np.isfinite(v)}
    return min(late, key=late.get) if late else ("m2" if "m2" in rec["forms"] else "m1")


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
    treatment of the forms auto cannot tell apart (False: the chosen form alone);
    ``use_prior``: the prior's floor. The point and band are built by the library's own
    functions (select_form, calibrate, combine), as ``fit(form="auto").predict`` builds them."""
    from labcoat.scale.score import interval_score

    covered, widths, scores, points, plain, fam_cov = [], [], [], [], [], defaultdict(list)
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
        # log predicted − log observed per form: the held-out observations sit at 0
        names = [name, *sel["indistinguishable"]] if widen else [name]
        predictions = {k: -rec["forms"][k]["error"] for k in names}
        weights = sel.get("weights") if widen else None
        center, lo, hi = cal.combine(predictions, weights, calibration, rec["distance"])
        e = -center  # log observed − log point
        inside = (lo <= 0) & (hi >= 0)
        covered.append(inside)
        fam_cov[rec.get("group", rec["family"])].append(inside)
        widths.append((np.exp(hi) - np.exp(lo)) / np.exp(center))
        # the band and the score per unit of the observed value
        scores.append(interval_score(np.exp(lo), np.exp(hi), np.ones_like(lo), level))
        points.append(100 * np.abs(np.expm1(-e)))
        rmse["auto"].append(np.sqrt(np.mean(e**2)))
        for k, v in rec["forms"].items():
            rmse[k].append(np.sqrt(np.mean(v["error"] ** 2)))
        plain.append(100 * np.abs(np.expm1(-rec["forms"][by_backtest(rec)]["error"])))
    covered, widths = np.concatenate(covered), np.concatenate(widths)
    return {
        "coverage": float(covered.mean()),
        "n": int(covered.size),
        "median_width": float(np.median(widths)),
        "interval_score": float(np.mean(np.concatenate(scores))),
        "median_interval_score": float(np.median(np.concatenate(scores))),
        "point_error": float(np.mean(np.concatenate(points))),
        "plain_point_error": float(np.mean(np.concatenate(plain))),
        "by_family": {k: float(np.concatenate(v).mean()) for k, v in sorted(fam_cov.items())},
        "rmse": {k: float(np.median(v)) for k, v in rmse.items()},
        "chosen": dict(chosen),
    }


#: the rules before sharpening: the band the union of every indistinguishable form's, the
#: chosen form's point, m2 by rule on thin evidence, prior intercepts from every fitted size
BEFORE = "before (union band, chosen form's point, m2 by rule, intercepts from every size)"
#: the rules evaluated side by side: module constants of labcoat.scale (api, calibrate)
VARIANTS = {
    BEFORE: {
        "CHOICE_BAND": "union",
        "CHOICE_POINT": "chosen",
        "THIN_RULE": "rule",
        "FRONTIER_SHARE": 1.0,
    },
    "+ spread band (the chosen form's point)": {
        "CHOICE_POINT": "chosen",
        "THIN_RULE": "rule",
        "FRONTIER_SHARE": 1.0,
    },
    "+ stacked point": {"THIN_RULE": "rule", "FRONTIER_SHARE": 1.0},
    "+ thin evidence: average by the partial backtest": {"FRONTIER_SHARE": 1.0},
    "thin evidence: AICc average instead": {"THIN_RULE": "aicc"},
    "thin evidence: equal average instead": {"THIN_RULE": "equal"},
    "stacked point, union band": {"CHOICE_BAND": "union"},
    "the chosen form's point": {"CHOICE_POINT": "chosen"},
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
        f"{cal.CHOICE_BAND} band, {cal.CHOICE_POINT} point, {api.CHOICE_MIN_ORIGINS} origins and "
        f"{api.CHOICE_MIN_FORMS} forms to choose, thin evidence: {cal.THIN_RULE}, prior "
        f"intercepts from the largest {cal.FRONTIER_SHARE:.0%} of sizes, floor refusal at "
        f"{api.FLOOR_REFUSAL_Z:g} SE"
    )


def report(result: dict) -> None:
    print(
        f"calibrated 95% intervals: coverage {result['coverage']:.1%} of {result['n']} held-out "
        f"points, median width {result['median_width']:.1%}, interval score "
        f"{result['interval_score']:.2%} of the value (median {result['median_interval_score']:.2%}"
        f"), point error {result['point_error']:.2f}% (best plain form by its own backtest "
        f"{result['plain_point_error']:.2f}%)"
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


def fits(data, cache: Path | None) -> list[dict]:
    """:func:`collect` on ``data``, through a pickle ``cache`` (read if present, else written)."""
    records = pickle.loads(cache.read_bytes()) if cache and cache.is_file() else []
    if {r["curve"] for r in records} != set(data):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            records = collect(data, records=records)
        if cache:
            cache.write_bytes(pickle.dumps(records))
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cache", type=Path, help="pickle of the fits: read if present, else written"
    )
    parser.add_argument(
        "--thin-cache", type=Path, help="the same for the thinned curves (7–10 sizes each)"
    )
    args = parser.parse_args()
    if not COLPRET.is_dir():
        sys.exit(f"{COLPRET} not found")
    start = time.perf_counter()
    data = {**all_curves(), **olmo_curves()}
    records = fits(data, args.cache)
    thin = fits(thinned(data), args.thin_cache)
    records = [
        r for r in records if any(np.isfinite(f["pairs"].late_rmse) for f in r["forms"].values())
    ]
    print(
        f"{len(records)} curve-splits with backtests, {len(thin)} thinned, "
        f"{time.perf_counter() - start:.0f} s"
    )
    for label, rules in {"as shipped": {}, **VARIANTS}.items():
        for kind, recs in (("curves", records), ("thinned to 7–10 sizes", thin)):
            print(f"\n== {label}, {kind} ==" + (f" ({shipped_rules()})" if not rules else ""))
            # each family's prior from the other families' full curves, under these rules
            report(with_rules(rules, lambda: evaluate(recs, family_priors(records))))
    priors = family_priors(records)
    print("\n== without the form-choice widening ==")
    report(evaluate(records, priors, widen=False))
    print("\n== the chosen form's own backtests only (no prior, no widening) ==")
    report(evaluate(records, priors, widen=False, use_prior=False))


if __name__ == "__main__":
    main()
