"""labcoat.scale against scipy ``curve_fit`` + delta method on families generated for the purpose.

Families (generated once on CPU by this script, committed as bench/data/scale_families.csv;
``--regenerate`` trains them again):

1. Learning curves: logistic regression, histogram gradient boosting and an MLP (scikit-learn)
   trained on n = 50·2^k examples (k = 0…9) of one synthetic 3-class task, 3 seeds (each seed
   a different draw of the training examples and of the model's own randomness); test log loss
   and test error on 10,000 fixed examples: 6 curves of 30 runs.
2. CNN learning curve: a small PyTorch CNN (CPU, one thread) trained on n = 50·2^k (k = 0…9)
   12×12 one-channel images of smoothed noise, labelled (4 classes) by sampling from the softmax
   of a fixed random teacher CNN whose global max pool makes the label translation-invariant
   (Bayes log loss 0.62, Bayes error 25 %); a fifth of each n is the validation split for early
   stopping, epochs capped at 100 and at about 100,000 examples seen; 3 seeds (training draw,
   split, initialisation and batch order); test log loss and error on 10,000 fixed images:
   2 curves of 30 runs, of kind "learning curve" beside the 6 above.
3. Width family: one-hidden-layer MLPs of width 4…512 regressing a fixed random teacher network
   (tanh, 10 inputs) from 4,000 noisy examples, 3 seeds; test MSE: 24 runs.
4. Accuracy with a planted jump: a smooth loss law over x = 50·2^k (k = 0…11) and an accuracy
   that jumps (a steep sigmoid in log x) at k = 3.5, 4.5 or 5.5, measured on 1,000 binomial
   items, 3 seeds each.

Scored on the largest 3 sizes (every seed; 9 held-out runs per curve), fitted on the rest:

* labcoat: ``scale.fit(form="auto")``, calibrated 95 % interval for one new run;
* scipy ``curve_fit`` of ``a·x^−b + c``, interval ``ŷ ± t·√(J Σ Jᵀ + s²)`` (delta method plus
  the residual variance);
* the best plain form of M1–M4 chosen by its own rolling-origin backtest, and the best of M1–M4
  chosen after the fact (point error only).

Printed per family: coverage, median width ((high − low) / prediction), mean interval score
(Gneiting & Raftery 2007, per unit of the observed value, :mod:`labcoat.scale.score`) and
point error (mean |%| error). Downstream: labcoat's verdict and held-out MAE against a sigmoid
``curve_fit`` in log x. ``--speed``: ``form="auto"`` on 21 runs (7 sizes × 3 seeds) against
``curve_fit``, idle and beside CPU-bound load.

Run: python bench/scale_families.py [--regenerate [FAMILY]] [--speed]   (``--regenerate`` trains
every family again, ``--regenerate cnn`` that one only; generation a few minutes on two cores,
the CNN family about five on one busy core; the evaluation about two)
"""

from __future__ import annotations

import argparse
import csv
import time
import warnings
from pathlib import Path

import numpy as np
from scipy import stats
from scipy.optimize import curve_fit

DATA = Path(__file__).resolve().parent / "data" / "scale_families.csv"
COLUMNS = ("family", "kind", "curve", "x", "seed", "value", "accuracy")
LEVEL = 0.95
SIZES = 50 * 2 ** np.arange(10)
SEEDS = (0, 1, 2)
HELD_SIZES = 3


# ---------------------------------------------------------------- generation (cached)


def _learning_curves() -> dict[str, dict]:
    from sklearn.datasets import make_classification
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import log_loss
    from sklearn.neural_network import MLPClassifier

    X, y = make_classification(
        n_samples=int(SIZES.max()) + 10_000,
        n_features=20,
        n_informative=10,
        n_redundant=4,
        n_classes=3,
        n_clusters_per_class=2,
        flip_y=0.05,
        class_sep=0.8,
        random_state=0,
    )
    X_test, y_test = X[-10_000:], y[-10_000:]
    pool_X, pool_y = X[:-10_000], y[:-10_000]
    models = {
        "logreg": lambda s: LogisticRegression(C=1.0, max_iter=1000),
        "hgb": lambda s: HistGradientBoostingClassifier(max_iter=100, random_state=s),
        "mlp": lambda s: MLPClassifier(
            hidden_layer_sizes=(32,), max_iter=60, random_state=s, alpha=1e-3
        ),
    }
    out: dict[str, dict] = {}
    for name, make in models.items():
        rows = {"loss": [], "error": []}
        for seed in SEEDS:
            order = np.random.default_rng(seed).permutation(len(pool_y))
            for n in SIZES:
                idx = order[:n]
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model = make(seed).fit(pool_X[idx], pool_y[idx])
                proba = np.clip(model.predict_proba(X_test), 1e-6, 1)
                proba /= proba.sum(axis=1, keepdims=True)
                rows["loss"].append([int(n), seed, float(log_loss(y_test, proba))])
                rows["error"].append([int(n), seed, float(np.mean(proba.argmax(axis=1) != y_test))])
            print(f"  {name} seed {seed} done", flush=True)
        for metric, r in rows.items():
            out[f"{name}/{metric}"] = {"kind": "learning curve", "runs": r}
    return out


CNN_SIDE = 12
CNN_CLASSES = 4
CNN_TEMPERATURE = 0.15  # the teacher's standardised logits / this: the labels' aleatoric noise
CNN_SEEN = 100_000  # training examples seen per run at most (epochs = min(100, this / n))


def _cnn_images(rng: np.random.Generator, m: int):
    """Gaussian noise blurred by a 5×5 binomial kernel: structure at the scale of the filters."""
    import torch

    z = rng.normal(0, 1, (m, 1, CNN_SIDE + 4, CNN_SIDE + 4)).astype(np.float32)
    k = np.outer([1, 4, 6, 4, 1], [1, 4, 6, 4, 1]).astype(np.float32)
    k = torch.from_numpy(k / k.sum())[None, None]
    with torch.no_grad():
        x = torch.nn.functional.conv2d(torch.from_numpy(z), k)
    return x / x.std()


def _cnn_teacher_labels(X, gen):
    """Labels sampled from a random two-layer CNN with a global max pool (translation-invariant)."""
    import torch
    from torch import nn

    teacher = nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2),
        nn.ReLU(),
        nn.Conv2d(6, CNN_CLASSES, 3, padding=1),
        nn.AdaptiveMaxPool2d(1),
        nn.Flatten(),
    )
    with torch.no_grad():
        for w in teacher.parameters():
            scale = 1 / np.sqrt(w[0].numel()) if w.dim() > 1 else 0.3
            w.copy_(torch.randn(w.shape, generator=gen) * scale)
        logits = teacher(X)
    logits = (logits - logits.mean(0)) / logits.std()  # roughly balanced classes
    return torch.multinomial(torch.softmax(logits / CNN_TEMPERATURE, 1), 1, generator=gen)[:, 0]


def _cnn_student():
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(1, 12, 5, padding=2),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(12, 24, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveMaxPool2d(1),
        nn.Flatten(),
        nn.Linear(24, CNN_CLASSES),
    )


def _cnn_train(X, y, idx: np.ndarray, seed: int, patience: int = 8):
    """Adam on all but a fifth of ``idx`` (the early-stopping split); the best epoch's weights."""
    import torch
    from torch import nn

    torch.manual_seed(seed)
    n_val = max(10, idx.size // 5)
    val, train = torch.from_numpy(idx[:n_val]), torch.from_numpy(idx[n_val:])
    net = _cnn_student()
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    best, state, bad = np.inf, None, 0
    for _ in range(int(min(100, np.ceil(CNN_SEEN / train.numel())))):
        net.train()
        perm = train[torch.randperm(train.numel())]
        for i in range(0, perm.numel(), 64):
            b = perm[i : i + 64]
            loss = nn.functional.cross_entropy(net(X[b]), y[b])
            opt.zero_grad()
            loss.backward()
            opt.step()
        net.eval()
        with torch.no_grad():
            v = float(nn.functional.cross_entropy(net(X[val]), y[val]))
        if v < best - 1e-4:
            best, bad = v, 0
            state = {k: w.clone() for k, w in net.state_dict().items()}
        elif (bad := bad + 1) >= patience:
            break
    net.load_state_dict(state)
    return net.eval()


def _cnn_curves() -> dict[str, dict]:
    import torch
    from torch import nn

    torch.set_num_threads(1)
    n_test = 10_000
    X = _cnn_images(np.random.default_rng(0), int(SIZES.max()) + n_test)
    y = _cnn_teacher_labels(X, torch.Generator().manual_seed(0))
    X_test, y_test = X[-n_test:], y[-n_test:]
    rows = {"loss": [], "error": []}
    for seed in SEEDS:
        t0 = time.perf_counter()
        order = np.random.default_rng(seed).permutation(len(y) - n_test)
        for n in SIZES:
            net = _cnn_train(X, y, order[:n], seed)
            with torch.no_grad():
                out = net(X_test)
            rows["loss"].append([int(n), seed, float(nn.functional.cross_entropy(out, y_test))])
            rows["error"].append([int(n), seed, float((out.argmax(1) != y_test).float().mean())])
        print(f"  cnn seed {seed} done, {time.perf_counter() - t0:.0f} s", flush=True)
    return {f"cnn/{m}": {"kind": "learning curve", "runs": r} for m, r in rows.items()}


def _width_family() -> dict[str, dict]:
    from sklearn.neural_network import MLPRegressor

    rng = np.random.default_rng(0)
    W1, b1 = rng.normal(0, 1, (10, 32)), rng.normal(0, 0.5, 32)
    w2 = rng.normal(0, 1 / np.sqrt(32), 32)

    def teacher(X):
        return np.tanh(X @ W1 + b1) @ w2

    X_test = rng.normal(0, 1, (10_000, 10))
    y_test = teacher(X_test)
    runs = []
    for seed in SEEDS:
        r = np.random.default_rng(100 + seed)
        X = r.normal(0, 1, (4000, 10))
        y = teacher(X) + r.normal(0, 0.1, 4000)
        for width in 4 * 2 ** np.arange(8):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = MLPRegressor(
                    hidden_layer_sizes=(int(width),),
                    max_iter=200,
                    random_state=seed,
                    alpha=1e-4,
                    tol=1e-6,
                ).fit(X, y)
            runs.append([int(width), seed, float(np.mean((model.predict(X_test) - y_test) ** 2))])
        print(f"  width family seed {seed} done", flush=True)
    return {"mlp-width/mse": {"kind": "width family", "runs": runs}}


def _jump_tasks() -> dict[str, dict]:
    x = 50 * 2.0 ** np.arange(12)
    out = {}
    for at in (3.5, 4.5, 5.5):
        runs = []
        for seed in SEEDS:
            rng = np.random.default_rng(int(10 * at) + seed)
            loss = (0.3 + 2 * x**-0.3) * np.exp(rng.normal(0, 0.005, x.size))
            p = 0.25 + 0.6 / (1 + np.exp(-3 * (np.log(x) - np.log(50 * 2**at))))
            acc = rng.binomial(1000, p) / 1000
            runs += [[float(a), seed, float(b), float(c)] for a, b, c in zip(x, loss, acc)]
        out[f"jump-at-2^{at}"] = {"kind": "planted jump", "runs": runs}
    return out


FAMILIES = {
    "learning": _learning_curves,
    "cnn": _cnn_curves,
    "width": _width_family,
    "jump": _jump_tasks,
}


def read(path: Path = DATA) -> dict:
    """curve -> {"family", "kind", "runs": [[x, seed, value(, accuracy)], ...]} from the CSV."""
    data: dict = {}
    with path.open() as fh:
        for r in csv.DictReader(fh):
            curve = data.setdefault(r["curve"], {"family": r["family"], "kind": r["kind"]})
            row = [float(r["x"]), int(r["seed"]), float(r["value"])]
            if r["accuracy"]:
                row.append(float(r["accuracy"]))
            curve.setdefault("runs", []).append(row)
    return data


def write(data: dict, path: Path = DATA) -> None:
    path.parent.mkdir(exist_ok=True)
    with path.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(COLUMNS)
        for name, curve in data.items():
            for r in curve["runs"]:
                extra = repr(float(r[3])) if len(r) > 3 else ""
                out.writerow(
                    [curve["family"], curve["kind"], name, repr(float(r[0])), int(r[1])]
                    + [repr(float(r[2])), extra]
                )


def generate(only: str | None = None, fresh: bool = False) -> dict:
    """Train the families missing from the CSV, writing it after each; ``only`` (one of
    :data:`FAMILIES`): that family alone, again; ``fresh``: every family again."""
    data = {} if fresh or not DATA.is_file() else read()
    for name, make in FAMILIES.items():
        present = any(v["family"] == name for v in data.values())
        if (only and name != only) or (not only and present):
            continue
        print(f"generating the {name} family (written to {DATA.name})")
        t0 = time.perf_counter()
        made = make()
        for curve in made.values():
            curve["family"] = name
        data = {k: v for k, v in data.items() if v["family"] != name} | made
        write(data)
        print(f"  {name} family: {time.perf_counter() - t0:.0f} s", flush=True)
    return data


# ---------------------------------------------------------------- methods


def _law(x, a, b, c):
    return a * x ** (-b) + c


def chinchilla_law(x, E, A, B, alpha, beta):
    """``E + A·N^−α + B·D^−β`` with ``x = (N, D)``: the two-variable form for ``curve_fit``."""
    return E + A * x[0] ** (-alpha) + B * x[1] ** (-beta)


def chinchilla_starts(x, y, exponents=(0.2, 0.35, 0.5)) -> list[tuple[float, ...]]:
    """Starts for ``chinchilla_law``: on a small grid of (α, β), (E, A, B) by linear least
    squares (the law is linear in them once the exponents are fixed)."""
    starts = []
    for alpha in exponents:
        for beta in exponents:
            design = np.column_stack([np.ones(y.size), x[0] ** -alpha, x[1] ** -beta])
            E, A, B = np.linalg.lstsq(design, y, rcond=None)[0]
            starts.append((E, max(A, 1e-3), max(B, 1e-3), alpha, beta))
    return starts


def curve_fit_delta(x, y, x_new, level=LEVEL, law=_law, starts=None):
    """``law`` (default ``a·x^−b + c``) by curve_fit from each of ``starts`` (the lowest
    squared error kept); interval ŷ ± t·√(J Σ Jᵀ + s²) for one new run. ``x`` and ``x_new``
    are whatever ``law`` takes: one array, or (N, D) rows for ``chinchilla_law``."""
    if starts is None:
        starts = [(max(y[0] - y.min(), 1e-3) * x[0] ** 0.5, 0.5, 0.9 * y.min())]
    best = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for p0 in starts:
            try:
                theta, cov = curve_fit(law, x, y, p0=p0, maxfev=20000)
            except RuntimeError:  # this start did not converge
                continue
            sse = float(np.sum((y - law(x, *theta)) ** 2))
            if best is None or sse < best[0]:
                best = (sse, theta, cov)
    if best is None:
        raise RuntimeError("curve_fit converged from no start")
    sse, theta, cov = best
    k = theta.size
    pred = law(x_new, *theta)
    eps = 1e-6 * np.maximum(np.abs(theta), 1e-8)
    J = np.column_stack(
        [(law(x_new, *(theta + np.eye(k)[i] * eps[i])) - pred) / eps[i] for i in range(k)]
    )
    s2 = sse / max(y.size - k, 1)
    var = np.einsum("ij,jk,ik->i", J, cov, J) + s2
    half = stats.t.ppf(0.5 + level / 2, max(y.size - k, 1)) * np.sqrt(np.maximum(var, 0))
    return pred, pred - half, pred + half


def plain_forms(x, y, x_new):
    """Each of M1–M4 fitted plainly: predictions, and the one its own backtest picks."""
    from labcoat.scale.calibrate import rolling_pairs
    from labcoat.scale.curves import CURVES
    from labcoat.scale.search import grid_search

    preds, late = {}, {}
    for name in ("m1", "m2", "m3", "m4"):
        form = CURVES[name]
        theta = grid_search(form, x[None], y, 1e-3).theta
        preds[name] = np.exp(form.log_predict(theta, x_new[None])[0])
        late[name] = rolling_pairs(form, x[None], y, 1e-3, theta).late_rmse
    chosen = min(late, key=lambda k: late[k] if np.isfinite(late[k]) else np.inf)
    return preds, chosen


def labcoat_auto(x, y, x_new, variants=None):
    """``form="auto"``'s point and calibrated interval for one new run, as shipped and under
    each variant of its rules (bench/scale_colpret.py's ``VARIANTS``: label -> constants)."""
    from scale_colpret import with_rules

    from labcoat import scale

    def once():
        fit = scale.fit(x, None, y, form="auto", n_resamples=0, ledger=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p = fit.predict(x_new, level=LEVEL)
        return (p.loss, p.interval[0], p.interval[1]), fit.selection["chosen"]

    shipped, chosen = once()
    out = {"shipped": shipped}
    for label, rules in (variants or {}).items():
        out[label] = with_rules(rules, once)[0]
    return out, chosen


# ---------------------------------------------------------------- evaluation


def _scores(lo, hi, pred, obs):
    from labcoat.scale.score import interval_score

    out = {"point": 100 * np.abs(pred - obs) / obs}
    if lo is not None:
        out.update(
            covered=(obs >= lo) & (obs <= hi),
            width=(hi - lo) / pred,
            score=interval_score(lo, hi, obs, LEVEL),
        )
    return out


def _family_variants() -> dict:
    from scale_colpret import BEFORE, VARIANTS

    keep = (BEFORE, "+ spread band (the chosen form's point)", "+ stacked point")
    keep += ("+ thin evidence: average by the partial backtest",)
    keep += ("thin evidence: AICc average instead", "thin evidence: equal average instead")
    return {k: VARIANTS[k] for k in keep}


def evaluate_curves(data: dict) -> dict:
    variants = _family_variants()
    rows: dict[str, dict[str, list]] = {}
    for name, curve in data.items():
        if curve["kind"] == "planted jump":
            continue
        runs = np.array(curve["runs"], dtype=float)
        x, y = runs[:, 0], runs[:, 2]
        sizes = np.unique(x)
        held = x >= sizes[-HELD_SIZES]
        xf, yf, xh, yh = x[~held], y[~held], x[held], y[held]
        family = curve["kind"]
        t0 = time.perf_counter()
        auto, _ = labcoat_auto(xf, yf, xh, variants)
        results = {f"labcoat auto, {label}": v for label, v in auto.items()}
        results["curve_fit + delta"] = curve_fit_delta(xf, yf, xh)
        preds, chosen = plain_forms(xf, yf, xh)
        results["best plain form by its own backtest"] = (preds[chosen], None, None)
        oracle = min(preds, key=lambda k: np.mean(np.abs(preds[k] - yh) / yh))
        results["best of M1–M4 after the fact"] = (preds[oracle], None, None)
        elapsed = time.perf_counter() - t0
        for method, (pred, lo, hi) in results.items():
            s = _scores(lo, hi, pred, yh)
            for key in (family, name):
                bucket = rows.setdefault(key, {}).setdefault(method, [])
                bucket.append(s)
        print(f"  {name}: {int(held.sum())} held out, {elapsed:.1f} s", flush=True)
    return rows


def report(rows: dict) -> None:
    for key, methods in rows.items():
        print(f"\n{key}")
        print(
            f"  {'':66s} {'coverage':>10s} {'med width':>10s} {'int score':>10s} {'point err':>10s}"
        )
        for method, parts in methods.items():
            point = np.concatenate([p["point"] for p in parts])
            if "covered" in parts[0]:
                cov = np.concatenate([p["covered"] for p in parts])
                width = np.median(np.concatenate([p["width"] for p in parts]))
                score = np.mean(np.concatenate([p["score"] for p in parts]))
                cells = f"{cov.sum():4d}/{cov.size:<5d} {width:10.1%} {score:10.1%}"
            else:
                cells = f"{'—':>10s} {'—':>10s} {'—':>10s}"
            print(f"  {method:66s} {cells} {np.mean(point):9.2f}%")


def evaluate_jumps(data: dict) -> None:
    from labcoat.scale.downstream import fit_downstream

    print("\nplanted jumps (accuracy, fitted on k = 0…8, held out k = 9…11)")
    for name, curve in data.items():
        if curve["kind"] != "planted jump":
            continue
        runs = np.array(curve["runs"], dtype=float)
        for seed in SEEDS:
            r = runs[runs[:, 1] == seed]
            x, loss, acc = r[:, 0], r[:, 2], r[:, 3]
            fit_rows, held = slice(0, 9), slice(9, None)
            fit = fit_downstream(
                x[fit_rows], None, loss[fit_rows], acc[fit_rows], target="accuracy"
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                p = fit.predict(x[held])
            mae = float(np.mean(np.abs(p.value - acc[held])))
            covered = (acc[held] >= p.interval[0]) & (acc[held] <= p.interval[1])
            width = float(np.median(p.interval[1] - p.interval[0]))

            def sig(u, b, a, k, u0):
                return b + a / (1 + np.exp(-k * (u - u0)))

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                u = np.log(x)
                try:
                    th, _ = curve_fit(
                        sig,
                        u[fit_rows],
                        acc[fit_rows],
                        p0=(0.2, 0.6, 2.0, float(np.median(u))),
                        maxfev=20000,
                    )
                    cf = float(np.mean(np.abs(sig(u[held], *th) - acc[held])))
                except RuntimeError:
                    cf = float("nan")
            jump = fit.backtest.get("jump")
            where = f"jump at {jump['at']:.0f}" if jump else "no jump found"
            print(
                f"  {name} seed {seed}: {'predictable' if fit.predictable else 'NOT predictable'}"
                f" ({where}); MAE {mae:.3f} vs sigmoid curve_fit {cf:.3f}; covered "
                f"{int(covered.sum())}/3, median width {width:.3f}"
            )


def speed() -> None:
    from _load import cpu_load

    from labcoat import scale

    x = np.repeat(50 * 2.0 ** np.arange(7), 3)
    y = (0.3 + 2 * x**-0.4) * np.exp(np.random.default_rng(0).normal(0, 0.01, x.size))

    def once():
        t0 = time.perf_counter()
        scale.fit(x, None, y, form="auto", n_resamples=0, ledger=False)
        t1 = time.perf_counter()
        for _ in range(20):
            curve_fit_delta(x, y, x[-3:])
        t2 = time.perf_counter()
        return t1 - t0, (t2 - t1) / 20

    for label in ("idle", "busy"):
        if label == "busy":
            with cpu_load():
                ours, theirs = once()
        else:
            ours, theirs = once()
        print(
            f"[{label}] form='auto' on 21 runs: {ours:.2f} s; curve_fit + delta {theirs * 1e3:.1f}"
            f" ms ({ours / theirs:.0f}x)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--regenerate",
        nargs="?",
        const="all",
        choices=("all", *FAMILIES),
        help="train every family again, or the one named",
    )
    parser.add_argument("--speed", action="store_true", help="time auto against curve_fit")
    parser.add_argument("--no-jumps", action="store_true")
    args = parser.parse_args()
    if args.regenerate in FAMILIES:
        data = generate(only=args.regenerate)
    else:
        data = generate(fresh=args.regenerate == "all")
    report(evaluate_curves(data))
    if not args.no_jumps:
        evaluate_jumps(data)
    if args.speed:
        speed()


if __name__ == "__main__":
    main()
