"""Extrapolation on held-out data: calibrated against bootstrap intervals, auto against M1–M4.

1. The 92 tasks of Alabdulmohsin et al. (NeurIPS 2022; ../shared/data/scaling/benchmark.*.csv),
   with their own split (``Training`` 1: fitted, 0: held out; LM rows deduplicated, every
   curve sorted by x). Printed: coverage and median width ((high − low) / predicted) of 95 %
   prediction intervals, calibrated and bootstrap, over all held-out points and per task; the
   median over tasks of the RMSE of log loss for ``form="auto"`` and for M1–M4 fitted plainly.
   This data is test data only: nothing in labcoat was tuned on it.
2. The Chinchilla points (5 highest losses dropped), the 42 largest held out by model size and
   by compute: coverage, width, interval score and point error, calibrated and bootstrap, and
   scipy ``curve_fit`` of the same form on L with a delta-method interval, on the same split;
   and the calibrated band with the prior's floor slope made from the fitted runs alone (the
   shipped prior's ``chinchilla`` entry is made from the over-training grid, never from these
   points; the two-variable rules are tuned there too, by bench/scale_two_variable.py).
3. The downstream backtest on the over-training grid (ColPret's overtrain_downstreams.csv).
4. The ColPret curves held out by scale that the calibration and ``auto`` were tuned on
   (bench/scale_colpret.py).

Run: python bench/scale_extrapolation.py [--bootstrap 100] [--tasks K] [--jobs J]
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # scale_colpret, scale_families
SHARED = ROOT / ".." / "shared" / "data"
LEVEL = 0.95


def benchmark_tasks() -> dict[tuple[str, str, str], np.ndarray]:
    """(domain, task, model) -> rows (x, loss, training), deduplicated and sorted by x."""
    out = {}
    for part in ("lang", "vision"):
        groups = defaultdict(set)
        with (SHARED / "scaling" / f"benchmark.{part}.csv").open() as fh:
            for r in csv.DictReader(fh):
                groups[(r["Domain"], r["Task"], r["Model"])].add(
                    (float(r["Seen Examples"]), float(r["Loss"]), int(r["Training"]))
                )
        for key, rows in groups.items():
            out[key] = np.array(sorted(rows))
    return out


def one_task(rows: np.ndarray, bootstrap: int) -> dict:
    from labcoat import scale
    from labcoat.scale.curves import CURVES
    from labcoat.scale.search import grid_search

    fit_rows, test_rows = rows[rows[:, 2] == 1], rows[rows[:, 2] == 0]
    x, y = fit_rows[:, 0], fit_rows[:, 1]
    xt, yt = test_rows[:, 0], test_rows[:, 1]
    out: dict = {"n_fit": x.size, "n_test": xt.size}
    for name in ("m1", "m2", "m3", "m4"):
        theta = grid_search(CURVES[name], x[None], y, 1e-3).theta
        pred = CURVES[name].log_predict(theta, xt[None])[0]
        out[f"rmse_{name}"] = float(np.sqrt(np.mean((pred - np.log(yt)) ** 2)))
    fit = scale.fit(x, None, y, form="auto", n_resamples=bootstrap, seed=0, ledger=False)
    out["form"] = fit.selection["chosen"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for method in ("calibrated", "bootstrap"):
            p = fit.predict(xt, level=LEVEL, interval=method)
            lo, hi = p.interval
            out[f"covered_{method}"] = ((yt >= lo) & (yt <= hi)).tolist()
            out[f"width_{method}"] = ((hi - lo) / p.loss).tolist()
            out["calibration"] = (
                p.calibration["method"] if p.calibration else out.get("calibration")
            )
    out["rmse_auto"] = float(np.sqrt(np.mean((np.log(p.loss) - np.log(yt)) ** 2)))
    return out


def task_record(key, rows: np.ndarray) -> dict:
    """One task's fits, as bench/scale_colpret.py records a curve-split: every candidate
    form's parameters, rolling-origin pairs and held-out log errors, and curve_fit + delta."""
    from scale_families import curve_fit_delta

    from labcoat.scale import calibrate as cal
    from labcoat.scale.curves import AUTO_CANDIDATES, CURVES
    from labcoat.scale.search import grid_search

    fit_rows, test_rows = rows[rows[:, 2] == 1], rows[rows[:, 2] == 0]
    x, y = fit_rows[:, 0], fit_rows[:, 1]
    xt, yt = test_rows[:, 0], test_rows[:, 1]
    rec = {"curve": "/".join(key), "family": key[0], "group": key[0], "forms": {}}
    rec["distance"] = cal.distance(x[None], xt[None])
    start = time.perf_counter()
    for name in AUTO_CANDIDATES:
        form = CURVES[name]
        if y.size < len(form.names) + 1:
            continue
        theta = grid_search(form, x[None], y, 1e-3).theta
        pairs = cal.rolling_pairs(form, x[None], y, 1e-3, theta)
        error = np.log(yt) - form.log_predict(theta, xt[None])[0]
        rec["forms"][name] = {"theta": theta, "pairs": pairs, "error": error}
    rec["seconds"] = time.perf_counter() - start
    rec["observed"] = yt
    try:  # scipy curve_fit of a·x^−b + c with a delta-method interval
        rec["curve_fit"] = curve_fit_delta(x, y, xt, LEVEL)
    except Exception:  # curve_fit did not converge: counted as a failure
        rec["curve_fit"] = None
    return rec


def run_benchmark_cached(cache: Path, every: int, jobs: int) -> None:
    """The benchmark through cached fits: fitted once, then scored by the library's own
    selection and band code (bench/scale_colpret.py's evaluate), as shipped."""
    import pickle

    from scale_colpret import VARIANTS, evaluate, report, shipped_rules, with_rules

    from labcoat.scale.score import interval_score

    tasks = benchmark_tasks()
    keys = list(tasks)[::every]
    records = pickle.loads(cache.read_bytes()) if cache.is_file() else []
    have = {r["curve"] for r in records}
    todo = [k for k in keys if "/".join(k) not in have]
    if todo:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if jobs > 1:
                from joblib import Parallel, delayed

                new = Parallel(n_jobs=jobs)(delayed(task_record)(k, tasks[k]) for k in todo)
            else:
                new = [task_record(k, tasks[k]) for k in todo]
        records += new
        cache.write_bytes(pickle.dumps(records))
    wanted = {"/".join(k) for k in keys}
    records = [r for r in records if r["curve"] in wanted]
    print(f"\n== benchmark (their split), {len(records)} tasks (every {every}), cached fits ==")
    print(f"as shipped ({shipped_rules()}):")
    report(evaluate(records))
    for label, rules in VARIANTS.items():
        print(f"{label}:")
        report(with_rules(rules, lambda: evaluate(records)))
    cf = [r for r in records if r["curve_fit"] is not None]
    pred = np.concatenate([r["curve_fit"][0] for r in cf])
    lo = np.concatenate([r["curve_fit"][1] for r in cf])
    hi = np.concatenate([r["curve_fit"][2] for r in cf])
    obs = np.concatenate([r["observed"] for r in cf])
    print(
        f"curve_fit + delta ({len(cf)} of {len(records)} tasks converged): coverage "
        f"{np.mean((obs >= lo) & (obs <= hi)):.1%} of {obs.size}, median width "
        f"{np.median((hi - lo) / np.abs(pred)):.1%}, interval score "
        f"{np.mean(interval_score(lo, hi, obs, LEVEL)):.2%} of the value, point error "
        f"{np.mean(100 * np.abs(pred - obs) / obs):.2f}%"
    )
    for name in ("m1", "m2", "m3", "m4", "broken"):
        e = np.concatenate([r["forms"][name]["error"] for r in records if name in r["forms"]])
        print(f"  plain {name:6s}: point error {np.mean(100 * np.abs(np.expm1(-e))):.2f}%")
    seconds = np.median([r["seconds"] for r in records])
    print(f"fit time per task (all candidates): median {seconds:.1f} s")


def run_benchmark(bootstrap: int, limit: int | None, jobs: int) -> None:
    tasks = benchmark_tasks()
    keys = list(tasks)[:limit] if limit else list(tasks)
    start = time.perf_counter()
    if jobs > 1:
        from joblib import Parallel, delayed

        results = Parallel(n_jobs=jobs)(delayed(one_task)(tasks[k], bootstrap) for k in keys)
    else:
        results = [one_task(tasks[k], bootstrap) for k in keys]
    elapsed = time.perf_counter() - start
    print(f"\n== 92-task benchmark (their split), {len(keys)} tasks, {elapsed:.0f} s ==")
    for method in ("calibrated", "bootstrap"):
        covered = np.concatenate([r[f"covered_{method}"] for r in results])
        width = np.concatenate([r[f"width_{method}"] for r in results])
        per_task = [np.mean(r[f"covered_{method}"]) for r in results]
        print(
            f"{method:10s} 95% intervals: coverage {covered.mean():.1%} of {covered.size} held-out "
            f"points (mean over tasks {np.mean(per_task):.1%}); median width "
            f"{np.median(width):.1%} of the prediction (per-task median of medians "
            f"{np.median([np.median(r[f'width_{method}']) for r in results]):.1%})"
        )
    medians = {n: np.median([r[f"rmse_{n}"] for r in results]) for n in ("m1", "m2", "m3", "m4")}
    best = min(medians, key=medians.get)
    auto = np.median([r["rmse_auto"] for r in results])
    shown = ", ".join(f"{k} {v:.4f}" for k, v in medians.items())
    print(f"median RMSE of log loss: auto {auto:.4f}; plain {shown}; best plain {best}")
    print(f"auto vs best plain: {auto / medians[best]:.3f}x (below 1: auto better)")
    chosen = defaultdict(int)
    for r in results:
        chosen[r["form"]] += 1
    methods = defaultdict(int)
    for r in results:
        methods[r["calibration"]] += 1
    print(f"forms auto chose: {dict(chosen)}; calibrations: {dict(methods)}")
    by_domain = defaultdict(list)
    for k, r in zip(keys, results):
        by_domain[k[0]].append(r)
    for domain, rs in by_domain.items():
        cov = np.concatenate([r["covered_calibrated"] for r in rs]).mean()
        bcov = np.concatenate([r["covered_bootstrap"] for r in rs]).mean()
        print(
            f"  {domain:4s} {len(rs):2d} tasks: calibrated {cov:.1%}, bootstrap {bcov:.1%}; "
            f"median RMSE auto {np.median([r['rmse_auto'] for r in rs]):.4f}"
        )


def run_chinchilla(bootstrap: int) -> None:
    sys.path.insert(0, str(ROOT / "tests" / "scale"))
    from conftest import chinchilla_points

    from labcoat import scale
    from labcoat.scale.score import interval_score

    N, D, L = chinchilla_points()
    print("\n== Chinchilla points, 42 largest held out ==")
    methods = ("calibrated", "bootstrap") if bootstrap else ("calibrated",)
    for holdout in ("n", "compute"):
        for method in methods:
            r = scale.backtest(
                N,
                D,
                L,
                holdout=holdout,
                top=42,
                interval=method,
                n_resamples=bootstrap,
                level=LEVEL,
            )
            print(
                f"by {holdout:7s} {method:10s}: coverage {r.coverage:.1%} of {r.n_holdout}, "
                f"median width {r.median_width:.2%}, interval score {r.interval_score:.2%}, "
                f"point error {r.mape:.2f}%, RMSE log {r.rmse:.4f}"
                + (f", own coverage {r.calibration['coverage']:.1%}" if r.calibration else "")
            )
            if method == "calibrated":
                lo, hi, pred, observed = with_own_floor(r)
                print(
                    f"by {holdout:7s} calibrated, floor slope from the fitted runs only: coverage "
                    f"{np.mean((observed >= lo) & (observed <= hi)):.1%}, median width "
                    f"{np.median((hi - lo) / pred):.2%}, interval score "
                    f"{np.mean(interval_score(lo, hi, observed, LEVEL)):.2%}"
                )
        pred, lo, hi, observed = chinchilla_curve_fit(N, D, L, holdout)
        print(
            f"by {holdout:7s} curve_fit + delta: coverage "
            f"{np.mean((observed >= lo) & (observed <= hi)):.1%} of {observed.size}, median width "
            f"{np.median((hi - lo) / pred):.2%}, interval score "
            f"{np.mean(interval_score(lo, hi, observed, LEVEL)):.2%}, point error "
            f"{np.mean(100 * np.abs(pred - observed) / observed):.2f}%"
        )


def with_own_floor(r):
    """The calibrated band at the held-out runs with the prior's floor slope made by
    bench/scale_prior.py's rule from the fitted runs' own backtest pairs instead of the shipped
    prior's (made from the over-training grid). (low, high, prediction, observed)."""
    from scale_prior import excess_slopes

    band = r.fit.calibration(LEVEL)
    slopes, _ = excess_slopes(band.pairs)
    shipped = band.floor
    band.floor = (shipped[0], float(np.quantile(slopes, LEVEL)))
    try:
        N = np.array([p["N"] for p in r.points])
        D = np.array([p["D"] for p in r.points])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p = r.fit.predict(N, D, level=LEVEL)
    finally:
        band.floor = shipped
    observed = np.array([q["observed"] for q in r.points])
    return p.interval[0], p.interval[1], p.loss, observed


def chinchilla_curve_fit(N, D, L, holdout: str, top: int = 42):
    """scipy ``curve_fit`` of ``E + A·N^−α + B·D^−β`` on L (least squares, starts from a small
    exponent grid) with a delta-method interval for one new run, on ``scale.backtest``'s split:
    (prediction, low, high, observed) at the held-out runs."""
    from scale_families import chinchilla_law, chinchilla_starts, curve_fit_delta

    from labcoat.scale.backtest import _holdout_mask
    from labcoat.scale.forms import resolve_form

    x = np.vstack([N, D])
    held, _ = _holdout_mask(holdout, top, None, x, resolve_form("chinchilla", None, 2))
    xf, yf = x[:, ~held], L[~held]
    pred, lo, hi = curve_fit_delta(
        xf, yf, x[:, held], LEVEL, law=chinchilla_law, starts=chinchilla_starts(xf, yf)
    )
    return pred, lo, hi, L[held]


def run_downstream() -> None:
    from labcoat.scale.downstream import overtrain_backtest

    print("\n== downstream: over-training grid (Gadre et al.), largest compute held out ==")
    overtrain_backtest(
        SHARED / "scaling" / "colpret" / "raw_data" / "overtrain" / "overtrain_downstreams.csv",
        verbose=True,
    )


def run_colpret(cache: str | None = None) -> None:
    """The figures calibration and auto were tuned on (bench/scale_colpret.py)."""
    import scale_colpret

    print("\n== ColPret curves held out by scale (the tuning data; leave-one-family-out prior) ==")
    sys.argv = [sys.argv[0]] + (["--cache", cache] if cache else [])
    scale_colpret.main()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", type=int, default=100)
    parser.add_argument("--tasks", type=int, default=None, help="only the first K tasks")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--parts", default="benchmark,chinchilla,downstream,colpret")
    parser.add_argument("--colpret-cache", default=None, help="bench/scale_colpret.py --cache")
    parser.add_argument("--every", type=int, default=1, help="only every K-th benchmark task")
    parser.add_argument(
        "--benchmark-cache",
        type=Path,
        default=None,
        help="pickle of the benchmark fits (read if present, else written); scored as shipped",
    )
    args = parser.parse_args()
    if not (SHARED / "scaling").is_dir():
        sys.exit("../shared/data/scaling not found")
    print(f"{os.cpu_count()} CPUs")
    parts = args.parts.split(",")
    if "chinchilla" in parts:
        run_chinchilla(args.bootstrap)
    if "downstream" in parts:
        run_downstream()
    if "colpret" in parts:
        run_colpret(args.colpret_cache)
    if "benchmark" in parts and args.benchmark_cache:
        run_benchmark_cached(args.benchmark_cache, args.every, args.jobs)
    elif "benchmark" in parts:
        run_benchmark(args.bootstrap, args.tasks, args.jobs)


if __name__ == "__main__":
    main()
