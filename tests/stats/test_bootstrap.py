"""Sufficient-statistic bootstrap: same metric and same SE as resampling and recomputing."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import f1_score, matthews_corrcoef, precision_score, recall_score

from labcoat.errors import InputError
from labcoat.stats import (
    METRICS,
    bleu_statistics,
    bootstrap_confusion,
    bootstrap_difference,
    bootstrap_metric,
    classification_statistics,
    corpus_bleu,
    perplexity_statistics,
)

VOCAB = [f"w{i}" for i in range(40)]


def _labels(rng, n=600, accuracy=0.8):
    y = rng.integers(0, 2, size=n)
    return y, np.where(rng.uniform(size=n) < accuracy, y, 1 - y)


def _sentences(rng, n=200):
    refs = [" ".join(rng.choice(VOCAB, rng.integers(6, 16))) for _ in range(n)]
    hyps = [
        " ".join(
            w if rng.uniform() < 0.7 else rng.choice(VOCAB)
            for w in r.split()[: len(r.split()) - rng.integers(0, 3)]
        )
        for r in refs
    ]
    return hyps, refs


@pytest.mark.parametrize(
    "name, reference",
    [
        ("f1", f1_score),
        ("precision", precision_score),
        ("recall", recall_score),
        ("mcc", matthews_corrcoef),
    ],
)
def test_classification_metrics_match_scikit_learn(name, reference):
    y, p = _labels(np.random.default_rng(0))
    assert METRICS[name](classification_statistics(y, p)) == pytest.approx(reference(y, p))


def test_bleu_matches_sacrebleu():
    sacrebleu = pytest.importorskip("sacrebleu")
    hyps, refs = _sentences(np.random.default_rng(1))
    other = _sentences(np.random.default_rng(2))[1]
    assert corpus_bleu(hyps, refs) == pytest.approx(
        sacrebleu.corpus_bleu(hyps, [refs], tokenize="none", smooth_method="none").score
    )
    assert corpus_bleu(hyps, list(zip(refs, other))) == pytest.approx(
        sacrebleu.corpus_bleu(hyps, [refs, other], tokenize="none", smooth_method="none").score
    )


def test_perplexity_is_exp_of_token_weighted_nll():
    nll, tokens = np.array([10.0, 30.0]), np.array([5.0, 15.0])
    assert METRICS["perplexity"](perplexity_statistics(nll, tokens)) == pytest.approx(np.exp(2.0))


def _naive_se(rng, n, recompute, reps):
    return np.std([recompute(rng.integers(0, n, size=n)) for _ in range(reps)], ddof=1)


def test_f1_se_equals_the_naive_resample_and_recompute_loop():
    rng = np.random.default_rng(3)
    y, p = _labels(rng, n=800)
    reps = 1500

    def f1_from_labels(i):  # recomputed from the resampled items' labels, as a naive loop does
        t, g = y[i] == 1, p[i] == 1
        return 2 * np.sum(t & g) / (2 * np.sum(t & g) + np.sum(~t & g) + np.sum(t & ~g))

    fast = bootstrap_metric(classification_statistics(y, p), "f1", n_resamples=reps, seed=4)
    naive = _naive_se(rng, y.size, f1_from_labels, reps)
    # SEs estimated from 1500 resamples each agree to a few percent (MC error ~ 1/sqrt(2 reps))
    assert fast.se == pytest.approx(naive, rel=0.1)
    assert fast.statistic == pytest.approx(f1_score(y, p))


def test_bleu_se_equals_recomputing_from_the_texts():
    rng = np.random.default_rng(5)
    hyps, refs = _sentences(rng, n=100)
    reps = 300
    fast = bootstrap_metric(bleu_statistics(hyps, refs), "bleu", n_resamples=reps * 4, seed=6)
    naive = _naive_se(
        rng, len(hyps), lambda i: corpus_bleu([hyps[j] for j in i], [refs[j] for j in i]), reps
    )
    assert fast.se == pytest.approx(naive, rel=0.15)


def test_resampling_is_the_bootstrap_not_a_permutation():
    """A planted bug (resampling without replacement) would give SE 0; the real one does not."""
    y, p = _labels(np.random.default_rng(7))
    res = bootstrap_metric(classification_statistics(y, p), "f1", n_resamples=500, seed=0)
    assert res.se > 0.005
    lo, hi = res.ci
    assert lo < res.statistic < hi
    assert res.confidence_interval(0.5).width < res.ci.width
    assert res.bootstrap_distribution.shape == (500,)


def test_seed_makes_it_reproducible():
    stats = classification_statistics(*_labels(np.random.default_rng(8)))
    a = bootstrap_metric(stats, "f1", n_resamples=200, seed=1)
    b = bootstrap_metric(stats, "f1", n_resamples=200, seed=1)
    np.testing.assert_array_equal(a.bootstrap_distribution, b.bootstrap_distribution)


@pytest.mark.parametrize("bad", [-1, 1.5, "seed", True])
def test_a_bad_seed_is_an_input_error(bad):
    stats = classification_statistics(*_labels(np.random.default_rng(8)))
    with pytest.raises(InputError, match="`seed` must be an int seed >= 0"):
        bootstrap_metric(stats, "f1", n_resamples=10, seed=bad)


def test_paired_difference_is_tighter_than_independent_errors():
    rng = np.random.default_rng(9)
    y = rng.integers(0, 2, size=1000)
    hard = rng.uniform(size=1000) < 0.25  # both models fail the same hard items
    pa = np.where(hard, 1 - y, y)
    pb = np.where(hard | (rng.uniform(size=1000) < 0.05), 1 - y, y)
    sa, sb = classification_statistics(y, pa), classification_statistics(y, pb)
    diff = bootstrap_difference(sa, sb, "f1", n_resamples=1000, seed=0)
    assert diff.statistic == pytest.approx(f1_score(y, pa) - f1_score(y, pb))
    one = bootstrap_metric(sa, "f1", n_resamples=1000, seed=1).se
    two = bootstrap_metric(sb, "f1", n_resamples=1000, seed=2).se
    assert diff.se < 0.5 * np.hypot(one, two)
    assert diff.ci.low > 0


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: bootstrap_metric(np.ones((10, 3)), "f1"), "columns tp, fp, fn, tn"),
        (lambda: bootstrap_metric(np.ones((10, 4)), "f2"), "`metric` must be one of"),
        (lambda: bootstrap_metric(np.full((10, 2), np.nan), "perplexity"), "NaN"),
        (lambda: bootstrap_metric(np.ones((10, 2)), "mean", n_resamples=1), "`n_resamples`"),
        (lambda: classification_statistics([0, 1], [0, 1, 1]), "one entry per item"),
        (lambda: classification_statistics(["a", "b"], ["a", "a"], pos_label="c"), "`pos_label`"),
        (lambda: perplexity_statistics([1.0, 2.0], [3, 0]), "`tokens` must be positive"),
        (lambda: bleu_statistics(["a b"], ["a", "b"]), "must pair up"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(InputError, match=match):
        call()


def _multiclass(rng, n=3000, classes=4, accuracy=0.7):
    y = rng.integers(0, classes, size=n)
    return y, np.where(rng.uniform(size=n) < accuracy, y, rng.integers(0, classes, size=n))


@pytest.mark.parametrize(
    "metric, reference",
    [
        ("mcc", matthews_corrcoef),
        ("macro_f1", lambda y, p: f1_score(y, p, average="macro")),
        ("accuracy", lambda y, p: float(np.mean(y == p))),
    ],
)
def test_confusion_metrics_match_scikit_learn(metric, reference):
    from sklearn.metrics import confusion_matrix

    y, p = _multiclass(np.random.default_rng(3))
    res = bootstrap_confusion(confusion_matrix(y, p), metric, n_resamples=200, seed=0)
    assert res.statistic == pytest.approx(reference(y, p), rel=1e-12) and res.n == y.size


@pytest.mark.parametrize("metric", ["f1", "mcc"])
def test_multinomial_resample_of_the_counts_has_the_item_resample_se(metric):
    """One multinomial draw of the C x C counts is the item bootstrap: same SE within MC error."""
    from sklearn.metrics import confusion_matrix

    rng = np.random.default_rng(4)
    y, p = _labels(rng, n=1000)
    reps = 3000
    reference = f1_score if metric == "f1" else matthews_corrcoef
    idx = rng.integers(0, y.size, size=(reps, y.size))  # the item bootstrap, resample by resample
    cell = classification_statistics(y, p).argmax(axis=1)  # 0..3: tp, fp, fn, tn
    cells = (cell[idx][..., None] == np.arange(4)).sum(axis=1).astype(float)
    naive = np.std(METRICS[metric].from_totals(cells), ddof=1)
    assert METRICS[metric].from_totals(cells[0]) == pytest.approx(reference(y[idx[0]], p[idx[0]]))
    res = bootstrap_confusion(confusion_matrix(y, p), metric, n_resamples=reps, seed=1)
    # the SE of an SE estimated from B draws is about SE / sqrt(2 (B - 1)); two of them differ
    assert res.se == pytest.approx(naive, rel=4 * np.sqrt(2) / np.sqrt(2 * (reps - 1)))
    via_items = bootstrap_metric(classification_statistics(y, p), metric, n_resamples=reps, seed=1)
    assert via_items.se == pytest.approx(res.se, rel=4 * np.sqrt(2) / np.sqrt(2 * (reps - 1)))


def test_bad_confusion_matrices():
    with pytest.raises(InputError, match="square"):
        bootstrap_confusion(np.ones((2, 3)), "mcc")
    with pytest.raises(InputError, match="whole counts"):
        bootstrap_confusion(np.array([[1.5, 2], [3, 4]]), "mcc")
    with pytest.raises(InputError, match="macro_f1"):
        bootstrap_confusion(np.ones((3, 3)), "f1")
