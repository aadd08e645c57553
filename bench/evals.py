"""Subset evals against the full benchmark, leave-models-out, beside plain random sampling.

On the two per-item matrices in ``../shared/data/items`` (MATH-500: 500 items x 70 models in two
prompt settings, coded +1/-1; ChemBench: 2854 items x 22 models), whole models are held out:
the plan (design, clusters and calibration) is built from the other models only, and the
held-out models are scored on subsets drawn from it. Both prompt settings of a MATH-500 model
(``<org>_<model>_zero_shot`` / ``_one_shot``) leave together. The splits are 5 random folds of
model groups plus one "top" split that holds out the strongest 20 % of groups, so that those
models are stronger than every model in their history.

For every budget (50/100/200/400) it prints, for the plan (labcoat) and for plain random
sampling with its t interval (random); with ``--method model`` the model-based plan's estimate
(model) beside the same plan's design-based stratified estimate (strat) and random:

* MAE: mean |estimate - full-benchmark score| over held-out models and subsets;
* cover: share of 95 % intervals containing the full score (cover+: the same for held-out
  models stronger than every model in their history);
* decided / right: share of held-out model pairs the subset ranks (paired interval excludes 0),
  and the share of those rankings that agree with the full benchmark; close: share of pairs
  within 0.03 of each other that are ranked (a method that refuses every close pair scores 0);
  a model-based plan ranks on its design-based paired difference, so model and strat agree;
* extrap (method model): share of held-out estimates that fell back to the design-based one
  because they lay outside the history's range;
* expected (method stratified): the ratio of the design's exact standard error (the stratified
  variance formula on the held-out models' full responses) to random sampling's, averaged over
  held-out models: the MAE ratio without the Monte-Carlo noise of the draws (about +-0.015 at
  --reps 30).

Run: python bench/evals.py [--reps 40] [--method stratified|irt|model] [--only math|chem]
[--seed N]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from labcoat.evals import _design as D
from labcoat.evals import plan_subset, read_history

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "items"
BUDGETS = (50, 100, 200, 400)
LEVEL = 0.95
CLOSE = 0.03
#: random draws per planned draw
RANDOM_FACTOR = 4


def splits(history, folds: int, rng: np.random.Generator) -> list[tuple[str, np.ndarray]]:
    """Held-out masks over models: random folds of groups, and the top 20 % of groups."""
    groups = history.groups
    uniq = np.unique(groups)
    fold_of = dict(zip(rng.permutation(uniq).tolist(), np.arange(uniq.size) % folds))
    out = [(f"fold{f}", np.array([fold_of[g] == f for g in groups.tolist()])) for f in range(folds)]
    means = {g: history.scores[:, groups == g].mean() for g in uniq}
    top = sorted(uniq, key=lambda g: means[g])[-max(2, uniq.size // 5) :]
    out.append(("top", np.isin(groups, top)))
    return out


def pair_index(n: int) -> tuple[np.ndarray, np.ndarray]:
    i, j = np.triu_indices(n, k=1)
    return i, j


def design_se(strata: np.ndarray, alloc: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The exact standard error of the stratified mean of every column of ``y`` (all items'
    scores) under the design: ``sqrt(sum_h W_h^2 (1 - n_h/N_h) S_h^2 / n_h)``."""
    sizes = np.bincount(strata, minlength=alloc.size).astype(float)
    var = np.zeros(y.shape[1])
    for h in np.flatnonzero((sizes > 1) & (alloc > 0)):
        s2 = y[strata == h].var(axis=0, ddof=1)
        var += (sizes[h] / strata.size) ** 2 * (1.0 - alloc[h] / sizes[h]) * s2 / alloc[h]
    return np.sqrt(var)


def run(name: str, history, method: str, reps: int, cal_reps: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    y_all = history.scores
    truth = y_all.mean(axis=0)
    n_items = history.n_items
    stats: dict = {}
    for split, held in splits(history, 5, rng):
        train = history.without(~held)
        strongest = truth[~held].max()
        yt, tt = y_all[:, held], truth[held]
        ia, ib = pair_index(int(held.sum()))
        true_diff = tt[ia] - tt[ib]
        for budget in BUDGETS:
            plan = plan_subset(train, budget, method=method, seed=seed, n_resamples=cal_reps)
            design, model, c = plan.design, plan.item_model, plan.inflation
            if method == "model":  # the design-based part alone, and pairs, are design-based
                model, c = None, plan.design_inflation
            if method == "stratified":  # the exact se of the stratified mean (no model)
                se_random = np.sqrt((1.0 - budget / n_items) * yt.var(axis=0, ddof=1) / budget)
                exact = stats.setdefault((budget, "expected"), {"design": [], "random": []})
                exact["design"].append(design_se(design.strata, design.alloc, yt))
                exact["random"].append(se_random)
            for _ in range(reps):
                rows = {}
                idx = design.draw(rng)
                est, se, df, _ = design.estimate(yt[idx], idx, model)
                q = c * D.t_quantile(LEVEL, df)
                d, dse, ddf, _ = design.estimate(
                    yt[idx][:, ia], idx, model, paired_with=yt[idx][:, ib]
                )
                dhalf = c * D.t_quantile(LEVEL, ddf) * dse
                if method == "model":
                    rows["strat"] = [(est, q * se, d, dhalf, None)]
                    mest, mse, mdf, infl, out, _, _ = plan.combined(yt[idx], idx)
                    rows["model"] = [(mest, infl * D.t_quantile(LEVEL, mdf) * mse, d, dhalf, out)]
                else:
                    rows["labcoat"] = [(est, q * se, d, dhalf, None)]
                rows["random"] = []
                for _ in range(RANDOM_FACTOR):  # random is cheap: more draws, a steadier base
                    ridx = np.argsort(rng.random(n_items))[:budget]
                    est, se, df = D.srs(yt[ridx], n_items)
                    d, dse, ddf = D.srs(yt[ridx][:, ia] - yt[ridx][:, ib], n_items)
                    tq = D.t_quantile(LEVEL, df)
                    rows["random"].append((est, tq * se, d, tq * dse, None))
                for method_name, (est, half, d, dhalf, out) in (
                    (m, draw) for m, draws in rows.items() for draw in draws
                ):
                    s = stats.setdefault((budget, method_name), _empty())
                    err = np.abs(est - tt)
                    s["err"].append(err)
                    s["cover"].append(err <= half)
                    s["cover_strong"].append((err <= half)[tt > strongest])
                    claimed = np.abs(d) > dhalf
                    s["claimed"].append(claimed)
                    s["right"].append((np.sign(d) == np.sign(true_diff))[claimed])
                    s["close"].append(claimed[np.abs(true_diff) < CLOSE])
                    if out is not None:
                        s["extrap"].append(out)
    return {
        k: {m: np.concatenate(v) if v else np.zeros(0) for m, v in s.items()}
        for k, s in stats.items()
    }


def expected_ratio(stats: dict, budget: int) -> float:
    e = stats[(budget, "expected")]
    return float(e["design"].mean() / e["random"].mean())


def _empty() -> dict:
    keys = ("err", "cover", "cover_strong", "claimed", "right", "close", "extrap")
    return {k: [] for k in keys}


def report(name: str, stats: dict) -> dict:
    print(f"\n{name}")
    print(
        f"{'budget':>6} {'method':>8} {'MAE':>7} {'ratio':>6} {'cover':>6} {'cover+':>11} "
        f"{'decided':>8} {'right':>7} {'close':>6} {'extrap':>6} {'expected':>8}"
    )
    pooled: dict = {}
    for budget in BUDGETS:
        exact = (budget, "expected") in stats
        base = stats[(budget, "random")]["err"].mean()
        names = [m for m in ("labcoat", "strat", "model", "random") if (budget, m) in stats]
        for method in names:
            s = stats[(budget, method)]
            extrap = f"{s['extrap'].mean():6.3f}" if s["extrap"].size else f"{'':>6}"
            strong = s["cover_strong"]
            print(
                f"{budget:>6} {method:>8} {s['err'].mean():7.4f} {s['err'].mean() / base:6.2f} "
                f"{s['cover'].mean():6.3f} {strong.mean() if strong.size else float('nan'):6.3f}"
                f"({strong.size:>3}) {s['claimed'].mean():8.3f} "
                f"{s['right'].mean() if s['right'].size else float('nan'):7.3f} "
                f"{s['close'].mean() if s['close'].size else float('nan'):6.3f} {extrap}"
                + (f" {expected_ratio(stats, budget):8.3f}" if exact and method != "random" else "")
            )
            pooled.setdefault(method, []).append(s["cover"])
    for method, covers in pooled.items():
        print(f"pooled coverage {method}: {np.concatenate(covers).mean():.3f}")
    return stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=40, help="subsets per split and budget")
    parser.add_argument("--cal-reps", type=int, default=20, help="subsets per calibration fold")
    parser.add_argument("--method", default="stratified", choices=["stratified", "irt", "model"])
    parser.add_argument("--only", default=None, choices=["math", "chem"])
    parser.add_argument("--seed", type=int, default=0, help="seed of the folds, plans and draws")
    args = parser.parse_args(argv)
    if not DATA.is_dir():
        print(f"no reference data at {DATA}; nothing to measure", file=sys.stderr)
        return 0
    sets = {
        "math": ("MATH-500 (500 items x 70 models x 2 prompt settings)", "math500_cbmm_Y.csv"),
        "chem": ("ChemBench (2854 items x 22 models)", "chembench_binary_matrix.csv"),
    }
    for key, (title, file) in sets.items():
        if args.only and key != args.only:
            continue
        history = read_history(DATA / file)
        start = time.perf_counter()
        stats = run(key, history, args.method, args.reps, args.cal_reps, seed=args.seed)
        report(f"{title}, method={args.method}, {time.perf_counter() - start:.0f} s", stats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
