"""Benchmarks for labcoat.stats, measured within one run.

1. Reading: wall time of ``labcoat stats mean`` on a 100k-row CSV (as a user runs it, a fresh
   process) against ``errorbars summarize`` 0.2.4 when it is installed, else against a plain
   Python reference loop written here (csv module, running sums); median of 5 runs each.
2. Confusion-matrix bootstrap: one multinomial draw of the C x C counts per resample against
   the vectorised numpy resample of item indices, 10k items x 10k resamples, same SE (the
   multinomial takes milliseconds, so its time is the best of 5 runs).
3. Bootstrap speed: resampling per-item sufficient statistics (labcoat) against the naive loop
   that resamples items and recomputes the metric (scikit-learn's f1_score; sacrebleu's corpus
   BLEU when installed, else labcoat's text-level BLEU), same items, same number of resamples.
4. Sequential evaluation: items an anytime-valid confidence sequence needed before it could
   stop, against the full eval set, on simulated pairs of models with known differences.

1 and 2 run twice: idle, and with CPU-bound load beside them (one busy process per core,
started and stopped by this script). Run: python bench/stats.py   (a few minutes on two cores)
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _load import cpu_load
from sklearn.metrics import f1_score

from labcoat.stats import (
    ConfidenceSequence,
    bleu_statistics,
    bootstrap_confusion,
    bootstrap_metric,
    classification_statistics,
    compare,
    corpus_bleu,
)

ITEMS = 10_000
RNG = np.random.default_rng(0)


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def _write_rows(path: Path, rows: int, clusters: int) -> None:
    rng = np.random.default_rng(0)
    score = (rng.uniform(size=rows) < 0.7).astype(int)
    cluster = np.sort(rng.integers(0, clusters, size=rows))
    with path.open("w") as fh:
        fh.write("question_id,model,score,cluster_id\n")
        fh.writelines(f"q{i},m,{score[i]},c{cluster[i]}\n" for i in range(rows))


_REFERENCE_LOOP = """
import csv, math, sys
n = s = ss = 0.0
with open(sys.argv[1], newline="") as fh:
    for row in csv.DictReader(fh):
        x = float(row["score"]); n += 1; s += x; ss += x * x
m = s / n
se = math.sqrt((ss - n * m * m) / (n - 1) / n)
print(m, se, m - 1.96 * se, m + 1.96 * se)
"""


def _median_wall(cmd: list[str], env: dict, runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(
            cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True
        )
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_reading(label: str, rows: int = 100_000) -> None:
    env = dict(
        os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "src"), OMP_NUM_THREADS="1"
    )
    errorbars = shutil.which("errorbars") or str(Path(sys.executable).with_name("errorbars"))
    with tempfile.TemporaryDirectory() as tmp:
        for clusters in (2000, 14):
            path = Path(tmp) / f"rows_{clusters}.csv"
            _write_rows(path, rows, clusters)
            ours = _median_wall(
                [
                    sys.executable,
                    "-m",
                    "labcoat",
                    "stats",
                    "mean",
                    str(path),
                    "--score",
                    "score",
                    "--cluster",
                    "cluster_id",
                    "--json",
                ],
                env,
            )
            if Path(errorbars).exists():
                name, theirs = (
                    "errorbars 0.2.4 summarize",
                    _median_wall([errorbars, "summarize", str(path), "--json"], env),
                )
            else:
                name = "plain-Python csv loop (errorbars not installed)"
                theirs = _median_wall([sys.executable, "-c", _REFERENCE_LOOP, str(path)], env)
            print(
                f"  [{label}] {rows:,} rows, {clusters} clusters: labcoat stats mean {ours:.2f}s, "
                f"{name} {theirs:.2f}s -> labcoat takes {ours / theirs:.2f}x the time"
            )


def _index_resample_confusion(
    cell: np.ndarray, n_resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """The vectorised item bootstrap: draw item indices, count each resample's cells."""
    n = cell.size
    rows = max(1, (1 << 22) // n)
    out = []
    for start in range(0, n_resamples, rows):
        b = min(rows, n_resamples - start)
        idx = rng.integers(0, n, size=(b, n))
        codes = cell[idx] + 4 * np.arange(b)[:, None]
        out.append(np.bincount(codes.ravel(), minlength=4 * b).reshape(b, 2, 2))
    return np.concatenate(out)


def bench_confusion(label: str, items: int = 10_000, reps: int = 10_000) -> None:
    from labcoat.stats.bootstrap import CONFUSION_METRICS

    y = RNG.integers(0, 2, size=items)
    p = np.where(RNG.uniform(size=items) < 0.85, y, 1 - y)
    cell = 2 * y + p  # row-major index into the 2 x 2 matrix (rows: true class)
    confusion = np.bincount(cell, minlength=4).reshape(2, 2)
    for metric in ("f1", "mcc"):
        fn = CONFUSION_METRICS[metric]
        draws, index_s = _timed(
            lambda: _index_resample_confusion(cell, reps, np.random.default_rng(1))
        )
        index_se = float(np.std(fn(draws.astype(float)), ddof=1))
        runs = [
            _timed(lambda: bootstrap_confusion(confusion, metric, n_resamples=reps, random_state=2))
            for _ in range(5)
        ]
        fast, fast_s = runs[0][0], min(t for _, t in runs)  # milliseconds: best of 5
        mc = (
            fast.se * np.sqrt(2) / np.sqrt(2 * (reps - 1))
        )  # SE of the difference of two SE estimates
        print(
            f"  [{label}] {metric}, {items:,} items x {reps:,} resamples: index resample "
            f"{index_s:.2f}s, "
            f"multinomial counts {fast_s * 1000:.1f}ms -> {index_s / fast_s:.0f}x faster; "
            f"SE {fast.se:.5f} vs {index_se:.5f} (differ by {abs(fast.se - index_se) / mc:.1f} MC "
            "SEs)"
        )


def _naive_bootstrap(n_items: int, reps: int, recompute) -> float:
    rng = np.random.default_rng(1)
    values = [recompute(rng.integers(0, n_items, size=n_items)) for _ in range(reps)]
    return float(np.std(values, ddof=1))


def bench_f1(reps: int = 200) -> None:
    y = RNG.integers(0, 2, size=ITEMS)
    p = np.where(RNG.uniform(size=ITEMS) < 0.85, y, 1 - y)
    naive_se, naive_s = _timed(
        lambda: _naive_bootstrap(ITEMS, reps, lambda i: f1_score(y[i], p[i]))
    )
    fast, fast_s = _timed(
        lambda: bootstrap_metric(
            classification_statistics(y, p), "f1", n_resamples=reps, random_state=2
        )
    )
    print(
        f"F1, {ITEMS:,} items, {reps} resamples: naive {naive_s:.2f}s, sufficient statistics "
        f"{fast_s:.3f}s -> {naive_s / fast_s:.0f}x faster; SE {fast.se:.5f} vs naive {naive_se:.5f}"
    )


def bench_bleu(reps: int = 20) -> None:
    vocab = np.array([f"w{i}" for i in range(2000)])
    refs, hyps = [], []
    for _ in range(ITEMS):
        ref = RNG.choice(vocab, RNG.integers(8, 30))
        keep = RNG.uniform(size=ref.size) < 0.75
        hyp = np.where(keep, ref, RNG.choice(vocab, ref.size))[
            : max(1, ref.size - RNG.integers(0, 4))
        ]
        refs.append(" ".join(ref))
        hyps.append(" ".join(hyp))
    try:
        import sacrebleu

        def recompute(i):
            return sacrebleu.corpus_bleu(
                [hyps[j] for j in i], [[refs[j] for j in i]], tokenize="none", smooth_method="none"
            ).score

        naive_name = "sacrebleu"
    except ImportError:

        def recompute(i):
            return corpus_bleu([hyps[j] for j in i], [refs[j] for j in i])

        naive_name = "text-level BLEU"
    naive_se, naive_s = _timed(lambda: _naive_bootstrap(ITEMS, reps, recompute))
    stats, extract_s = _timed(lambda: bleu_statistics(hyps, refs))
    fast, fast_s = _timed(lambda: bootstrap_metric(stats, "bleu", n_resamples=reps, random_state=2))
    print(
        f"corpus BLEU, {ITEMS:,} sentences, {reps} resamples: naive ({naive_name}) {naive_s:.2f}s, "
        f"sufficient statistics {fast_s:.3f}s -> {naive_s / fast_s:.0f}x faster "
        f"({naive_s / (fast_s + extract_s):.0f}x counting the one-off n-gram extraction, "
        f"{extract_s:.2f}s); "
        f"SE {fast.se:.3f} vs naive {naive_se:.3f}"
    )


def bench_sequential(n_items: int = 5_000, batch: int = 25, trials: int = 5) -> None:
    print(
        f"sequential paired eval: stop when the 95% confidence sequence on A - B excludes 0 "
        f"(checked every {batch} items), full set {n_items:,} items, {trials} simulated pairs each"
    )
    for gain in (0.0, 0.03, 0.05, 0.10, 0.20):
        used, agree = [], 0
        for t in range(trials):
            rng = np.random.default_rng(100 + t)
            difficulty = rng.uniform(size=n_items)
            a = (rng.uniform(size=n_items) < np.clip(difficulty + gain, 0, 1)).astype(float)
            b = (rng.uniform(size=n_items) < difficulty).astype(float)
            cs = ConfidenceSequence(-1, 1)
            for start in range(0, n_items, batch):
                if cs.update(a[start : start + batch] - b[start : start + batch]).done(
                    threshold=0.0
                ):
                    break
            used.append(cs.n)
            full_decides = compare(a, b).pvalue < 0.05
            agree += (cs.n < n_items) == full_decides
        print(
            f"  true gain {gain:+.2f}: median {int(np.median(used)):>5,} of {n_items:,} items "
            f"({np.median(used) / n_items:.0%}); stopped in "
            f"{sum(u < n_items for u in used)}/{trials}; "
            f"same call as the full-set paired test in {agree}/{trials}"
        )


if __name__ == "__main__":
    total = time.perf_counter()
    cores = os.cpu_count() or 2
    print("reading a 100k-row CSV and computing a clustered mean (fresh process each run):")
    bench_reading("idle")
    with cpu_load(cores):
        bench_reading(f"busy, {cores} spinning processes")
    print("bootstrap of a confusion matrix:")
    bench_confusion("idle")
    with cpu_load(cores):
        bench_confusion(f"busy, {cores} spinning processes")
    bench_f1()
    bench_bleu()
    bench_sequential()
    print(f"total {time.perf_counter() - total:.1f}s")
