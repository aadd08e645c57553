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

``--history-sizes`` measures instead how the intervals hold on a thin history: for every
history size (5 to 134 models of MATH-500's 140), ``--seeds`` times, three random model groups
(six models) are held out, the history is that many random models of the remaining 134, the
plan is made by ``plan_subset`` with its defaults (``method="auto"``, calibrated), and every
held-out model is scored on ``--reps`` subsets drawn from the plan's design, with the plan's
own interval. It prints the coverage per size (held-out models x draws), its binomial p against
the level, the coverage of held-out models whose score lies outside the history's range (and
their share), how often the calibration narrowed the design's intervals and the coverage of
the plans that narrowed, and the factors.

Run: python bench/evals.py [--reps 40] [--method stratified|irt|model] [--only math|chem]
[--seed N]; python bench/evals.py --history-sizes [--seeds 30] [--reps 10] [--budget 100]
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


HISTORY_SIZES = (5, 6, 8, 12, 16, 24, 34, 50, 67, 100, 134)
#: model groups held out of MATH-500 per seed in the history-size bench (six models)
HELD_GROUPS = 3


def plan_intervals(plan, yt: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The estimates and half-widths ``estimate`` gives models scoring ``yt`` on items ``idx``
    of ``plan`` (vectorised over models)."""
    if plan.method == "model":
        est, se, df, infl, _, _, _ = plan.combined(yt[idx], idx)
        return est, infl * D.t_quantile(plan.level, df) * se
    est, se, df, _ = plan.design.estimate(yt[idx], idx, plan.item_model)
    return est, plan.inflation * D.t_quantile(plan.level, df) * se


def history_sizes(history, sizes, seeds: int, reps: int, budget: int) -> list[dict]:
    """Coverage of the default plan's intervals, per history size, leave-models-out."""
    from scipy.stats import binomtest

    y_all = history.scores
    truth = y_all.mean(axis=0)
    groups = np.unique(history.groups)
    print(
        f"{'models':>6} {'groups':>6} {'cover':>6} {'trials':>6} {'p(<.95)':>8} "
        f"{'cover out':>13} {'narrowed':>8} {'cover':>6} {'factor':>11} {'model':>5} {'s':>4}"
    )
    rows = []
    for size in sizes:
        start = time.perf_counter()
        covered, outside, narrowed, factors, n_groups, models = [], [], [], [], [], 0
        for seed in range(seeds):
            rng = np.random.default_rng([seed, size])
            held = np.isin(history.groups, rng.choice(groups, HELD_GROUPS, replace=False))
            rest = np.flatnonzero(~held)
            keep = np.zeros(history.n_models, dtype=bool)
            keep[rng.choice(rest, min(size, rest.size), replace=False)] = True
            train = history.without(keep)
            plan = plan_subset(train, budget, seed=seed)
            factors.append(plan.inflation)
            n_groups.append(np.unique(train.groups).size)
            models += plan.method == "model"
            yt, tt = y_all[:, held], truth[held]
            lo, hi = plan.history_range
            for _ in range(reps):
                est, half = plan_intervals(plan, yt, plan.design.draw(rng))
                covered.append(np.abs(np.clip(est, 0, 1) - tt) <= half)
                outside.append((tt < lo) | (tt > hi))
                narrowed.append(np.full(tt.size, plan.inflation < 1.0))
        cover = np.concatenate(covered)
        out = np.concatenate(outside)
        narrow = np.concatenate(narrowed)
        factors = np.array(factors)
        # per draw and held-out model; draws of one model share its bias, so the p is optimistic
        p = binomtest(int(cover.sum()), cover.size, LEVEL, alternative="less").pvalue
        row = {
            "models": size,
            "groups": float(np.mean(n_groups)),
            "cover": float(cover.mean()),
            "trials": int(cover.size),
            "p": float(p),
            "cover_outside": float(cover[out].mean()) if out.any() else float("nan"),
            "outside": float(out.mean()),
            "narrowed": float(np.mean(factors < 1.0)),
            "cover_narrowed": float(cover[narrow].mean()) if narrow.any() else float("nan"),
            "factor": (float(factors.min()), float(factors.max())),
            "model": models,
        }
        rows.append(row)
        print(
            f"{size:>6} {row['groups']:6.1f} {row['cover']:6.3f} {row['trials']:>6} {p:8.3f} "
            f"{row['cover_outside']:6.3f} ({row['outside']:4.0%}) {row['narrowed']:8.2f} "
            f"{row['cover_narrowed']:6.3f} "
            f"{factors.min():5.2f}-{factors.max():4.2f} {models:>5} "
            f"{time.perf_counter() - start:4.0f}",
            flush=True,
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=40, help="subsets per split and budget")
    parser.add_argument("--cal-reps", type=int, default=20, help="subsets per calibration fold")
    parser.add_argument("--method", default="stratified", choices=["stratified", "irt", "model"])
    parser.add_argument("--only", default=None, choices=["math", "chem"])
    parser.add_argument("--seed", type=int, default=0, help="seed of the folds, plans and draws")
    parser.add_argument(
        "--history-sizes",
        nargs="*",
        type=int,
        default=None,
        metavar="N",
        help=f"coverage on thin histories of MATH-500 (default sizes {HISTORY_SIZES})",
    )
    parser.add_argument("--seeds", type=int, default=30, help="histories per size")
    parser.add_argument("--budget", type=int, default=100, help="items planned (history sizes)")
    args = parser.parse_args(argv)
    if not DATA.is_dir():
        print(f"no reference data at {DATA}; nothing to measure", file=sys.stderr)
        return 0
    if args.history_sizes is not None:
        history = read_history(DATA / "math500_cbmm_Y.csv")
        print(
            f"MATH-500, {args.budget} items, {HELD_GROUPS} groups held out, {args.seeds} "
            f"histories per size, {args.reps} draws each"
        )
        history_sizes(
            history, args.history_sizes or HISTORY_SIZES, args.seeds, args.reps, args.budget
        )
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
