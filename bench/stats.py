"""Benchmarks for labcoat.stats, measured within one run.

1. Bootstrap speed: resampling per-item sufficient statistics (labcoat) against the naive loop
   that resamples items and recomputes the metric (scikit-learn's f1_score; sacrebleu's corpus
   BLEU when installed, else labcoat's text-level BLEU), same items, same number of resamples.
2. Sequential evaluation: items an anytime-valid confidence sequence needed before it could
   stop, against the full eval set, on simulated pairs of models with known differences.

Run: python bench/stats.py   (about half a minute on two cores)
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.metrics import f1_score

from labcoat.stats import (
    ConfidenceSequence,
    bleu_statistics,
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


def _naive_bootstrap(n_items: int, reps: int, recompute) -> float:
    rng = np.random.default_rng(1)
    values = [recompute(rng.integers(0, n_items, size=n_items)) for _ in range(reps)]
    return float(np.std(values, ddof=1))


def bench_f1(reps: int = 200) -> None:
    y = RNG.integers(0, 2, size=ITEMS)
    p = np.where(RNG.uniform(size=ITEMS) < 0.85, y, 1 - y)
    naive_se, naive_s = _timed(lambda: _naive_bootstrap(ITEMS, reps, lambda i: f1_score(y[i], p[i])))
    fast, fast_s = _timed(
        lambda: bootstrap_metric(classification_statistics(y, p), "f1", n_resamples=reps, random_state=2)
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
        hyp = np.where(keep, ref, RNG.choice(vocab, ref.size))[: max(1, ref.size - RNG.integers(0, 4))]
        refs.append(" ".join(ref))
        hyps.append(" ".join(hyp))
    try:
        import sacrebleu

        def recompute(i):
            return sacrebleu.corpus_bleu([hyps[j] for j in i], [[refs[j] for j in i]], tokenize="none", smooth_method="none").score

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
        f"({naive_s / (fast_s + extract_s):.0f}x counting the one-off n-gram extraction, {extract_s:.2f}s); "
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
                if cs.update(a[start : start + batch] - b[start : start + batch]).done(threshold=0.0):
                    break
            used.append(cs.n)
            full_decides = compare(a, b).p_value < 0.05
            agree += (cs.n < n_items) == full_decides
        print(
            f"  true gain {gain:+.2f}: median {int(np.median(used)):>5,} of {n_items:,} items "
            f"({np.median(used) / n_items:.0%}); stopped in {sum(u < n_items for u in used)}/{trials}; "
            f"same call as the full-set paired test in {agree}/{trials}"
        )


if __name__ == "__main__":
    total = time.perf_counter()
    bench_f1()
    bench_bleu()
    bench_sequential()
    print(f"total {time.perf_counter() - total:.1f}s")
