"""Benchmarks for labcoat.scale, measured within one run, idle and beside CPU-bound load.

1. The replication's grid search (Besiroglu et al. 2024: 4,500 L-BFGS-B starts, Huber δ=1e-3
   on log loss, best final objective wins) as a plain scipy loop, against labcoat's batched
   search on the same points; both optima are printed with their relative difference.
   The loop gets the analytic gradient (the replication's code used finite differences, which
   is several times slower still), so the ratio is against the faster loop.
2. 1,000 bootstrap refits warm-started from the full fit: one batch, and split over joblib
   workers.

Data: the replication's Chinchilla points (../shared/data/chinchilla, 5 highest losses
dropped) when present, else 240 synthetic runs of the same law.
3. With --extrapolation: the held-out figures of bench/scale_extrapolation.py in the same run
   (coverage and width of calibrated and bootstrap 95 % intervals on the 92-task benchmark and
   the Chinchilla points, auto against the best of M1–M4, the downstream backtest on the
   over-training grid, and the ColPret curves held out by scale that they were tuned on).

Run: python bench/scale.py [--starts K] [--extrapolation]   (a few minutes on two cores; the
extrapolation part about half an hour)
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from pathlib import Path

import numpy as np
from _load import cpu_load
from scipy.optimize import minimize

from labcoat.scale.forms import CHINCHILLA
from labcoat.scale.objective import value_and_grad
from labcoat.scale.search import bootstrap_counts, bootstrap_refits, grid_search

DATA = (
    Path(__file__).resolve().parents[1]
    / ".."
    / "shared"
    / "data"
    / "chinchilla"
    / "svg_extracted_data.csv"
)
DELTA = 1e-3


def load_points() -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    if DATA.is_file():
        with DATA.open() as fh:
            rows = list(csv.DictReader(fh))
        N = np.array([float(r["Model Size"]) for r in rows])
        D = np.array([float(r["Training FLOP"]) for r in rows]) / (6 * N)
        L = np.array([float(r["loss"]) for r in rows])
        keep = np.sort(np.argsort(L, kind="stable")[:-5])
        return N[keep], D[keep], L[keep], "Chinchilla points (240)"
    rng = np.random.default_rng(0)
    N, D = 10 ** rng.uniform(7.8, 10.2, 240), 10 ** rng.uniform(9.5, 11.5, 240)
    L = (1.82 + 482 * N**-0.348 + 2085 * D**-0.366) * np.exp(rng.normal(0, 0.01, 240))
    return N, D, L, "synthetic runs (240; Chinchilla data not found)"


def plain_loop(starts: np.ndarray, logx: np.ndarray, logy: np.ndarray) -> float:
    """One scipy L-BFGS-B call per start, as the replication runs it."""

    def fun(theta):
        f, g = value_and_grad(theta[None], logx, logy, DELTA)
        return float(f[0]), g[0]

    return min(minimize(fun, s, jac=True, method="L-BFGS-B").fun for s in starts)


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def run(label: str, N, D, L, starts: np.ndarray) -> None:
    x = np.vstack([N, D])
    logx, logy = np.log(x), np.log(L)
    loop_best, loop_s = timed(lambda: plain_loop(starts, logx, logy))
    form = CHINCHILLA if len(starts) == len(CHINCHILLA.grid()) else _SubGrid(starts)
    ours, ours_s = timed(lambda: grid_search(form, x, L, DELTA))
    rel = (ours.objective - loop_best) / loop_best
    print(
        f"[{label}] grid of {len(starts)} starts: scipy loop {loop_s:.1f}s, labcoat {ours_s:.2f}s "
        f"-> {loop_s / ours_s:.1f}x faster; objective {ours.objective:.10g} "
        f"vs loop {loop_best:.10g} "
        f"(relative difference {rel:+.1e}; negative: labcoat lower)"
    )
    counts = bootstrap_counts(L.size, 1000, seed=0)
    _, one_s = timed(
        lambda: bootstrap_refits(CHINCHILLA, ours.theta, x, L, DELTA, counts, n_jobs=1)
    )
    _, par_s = timed(
        lambda: bootstrap_refits(CHINCHILLA, ours.theta, x, L, DELTA, counts, n_jobs=os.cpu_count())
    )
    print(
        f"[{label}] 1,000 bootstrap refits: one batch {one_s:.2f}s, "
        f"joblib over {os.cpu_count()} workers "
        f"{par_s:.2f}s"
    )


class _SubGrid:
    """The Chinchilla form with a subsample of its grid (``--starts``)."""

    def __init__(self, starts):
        self._starts = starts

    def __getattr__(self, name):
        return getattr(CHINCHILLA, name)

    def grid(self):
        return self._starts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--starts",
        type=int,
        default=None,
        help="Subsample this many grid starts (default: all 4,500).",
    )
    parser.add_argument(
        "--extrapolation",
        action="store_true",
        help="Also run bench/scale_extrapolation.py's held-out figures (needs ../shared).",
    )
    parser.add_argument("--only-extrapolation", action="store_true", help="Skip the timing part.")
    args = parser.parse_args()
    if args.extrapolation or args.only_extrapolation:
        import scale_extrapolation

        sys.argv = [sys.argv[0]]
        scale_extrapolation.main()
        if args.only_extrapolation:
            return
    N, D, L, what = load_points()
    starts = CHINCHILLA.grid()
    if args.starts:
        starts = starts[np.random.default_rng(0).choice(len(starts), args.starts, replace=False)]
    print(
        f"data: {what}; {os.cpu_count()} CPUs; "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}"
    )
    run("idle", N, D, L, starts)
    with cpu_load():  # one busy loop per core
        run("busy", N, D, L, starts)


if __name__ == "__main__":
    main()
