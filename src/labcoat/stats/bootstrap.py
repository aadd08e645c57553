"""Fast bootstrap for corpus-level metrics through their sufficient statistics.

F1, precision, recall, MCC, perplexity and corpus BLEU are not means of per-item scores, so
they get no CLT standard error, and lm-eval-harness bootstraps them by recomputing the metric
from the items' texts 100,000 times. But each is a function of *sums* of per-item counts
(tp/fp/fn/tn, summed NLL and token counts, n-gram matches and totals). A bootstrap resample is
a vector of multiplicities ``w`` over the items, so its totals are ``w @ stats``: one matrix
product gives every resample at once, with the same distribution as the naive loop.

When the items take only a few distinct rows of statistics (a confusion matrix: every item is
one of C x C cells), a resample is fully described by how many items fall in each cell, which
is one multinomial draw. The bootstrap then never touches the items at all: the cost is
independent of their number (:func:`bootstrap_confusion`, and automatically in
:func:`bootstrap_metric`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from labcoat._validation import PROBABILITY, Interval, Seed, renamed, validate_params
from labcoat.errors import InputError
from labcoat.stats._results import BootstrapResult
from labcoat.stats._validation import (
    check_random_state,
    check_same_length,
    check_scores,
)

#: rows x items of resample counts built at once (bounds memory to ~32 MB of int64)
_CHUNK_CELLS = 1 << 22
BLEU_ORDER = 4
#: at most this many distinct rows of statistics: resample their counts (multinomial)
_MULTINOMIAL_ROWS = 256


@dataclass(frozen=True)
class SufficientMetric:
    """A metric computed from per-item statistics summed over items.

    ``from_totals`` maps totals of shape ``(..., len(columns))`` to metric values of shape
    ``(...)``, so it scores every bootstrap resample in one call.
    """

    name: str
    columns: tuple[str, ...]
    from_totals: Callable[[np.ndarray], np.ndarray]
    description: str

    def __call__(self, stats: np.ndarray) -> float:
        return float(self.from_totals(np.asarray(stats, dtype=float).sum(axis=0)))


#: the registry of metrics :func:`bootstrap_metric` knows by name
METRICS: dict[str, SufficientMetric] = {}


def sufficient_metric(name: str, columns: Sequence[str], description: str):
    """Register ``fn(totals) -> values`` as a :class:`SufficientMetric` called ``name``."""

    def register(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
        if name in METRICS:
            raise ValueError(f"metric {name!r} is already registered")
        METRICS[name] = SufficientMetric(name, tuple(columns), fn, description)
        return fn

    return register


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den`` with 0 where ``den`` is 0 (scikit-learn's ``zero_division=0``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), 0.0)


@sufficient_metric("mean", ("score", "count"), "mean score")
def _mean(t: np.ndarray) -> np.ndarray:
    return _ratio(t[..., 0], t[..., 1])


@sufficient_metric("precision", ("tp", "fp", "fn", "tn"), "tp / (tp + fp)")
def _precision(t: np.ndarray) -> np.ndarray:
    return _ratio(t[..., 0], t[..., 0] + t[..., 1])


@sufficient_metric("recall", ("tp", "fp", "fn", "tn"), "tp / (tp + fn)")
def _recall(t: np.ndarray) -> np.ndarray:
    return _ratio(t[..., 0], t[..., 0] + t[..., 2])


@sufficient_metric("f1", ("tp", "fp", "fn", "tn"), "2 tp / (2 tp + fp + fn)")
def _f1(t: np.ndarray) -> np.ndarray:
    return _ratio(2 * t[..., 0], 2 * t[..., 0] + t[..., 1] + t[..., 2])


@sufficient_metric("mcc", ("tp", "fp", "fn", "tn"), "Matthews correlation coefficient")
def _mcc(t: np.ndarray) -> np.ndarray:
    tp, fp, fn, tn = (t[..., i] for i in range(4))
    den = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return _ratio(tp * tn - fp * fn, den)


@sufficient_metric("perplexity", ("nll", "tokens"), "exp(summed NLL / tokens)")
def _perplexity(t: np.ndarray) -> np.ndarray:
    return np.exp(_ratio(t[..., 0], t[..., 1]))


_BLEU_COLUMNS = (
    *(f"match{n}" for n in range(1, BLEU_ORDER + 1)),
    *(f"total{n}" for n in range(1, BLEU_ORDER + 1)),
    "hyp_len",
    "ref_len",
)


@sufficient_metric("bleu", _BLEU_COLUMNS, "corpus BLEU-4 (0-100, no smoothing)")
def _bleu(t: np.ndarray) -> np.ndarray:
    matches, totals = t[..., :BLEU_ORDER], t[..., BLEU_ORDER : 2 * BLEU_ORDER]
    hyp, ref = t[..., -2], t[..., -1]
    with np.errstate(divide="ignore", invalid="ignore"):
        log_precision = np.where(
            matches > 0, np.log(matches) - np.log(np.where(totals > 0, totals, 1)), -np.inf
        )
        brevity = np.where(hyp < ref, 1.0 - ref / np.where(hyp > 0, hyp, 1), 0.0)
        brevity = np.where(hyp > 0, brevity, -np.inf)
    return 100.0 * np.exp(log_precision.mean(axis=-1) + brevity)


# -- per-item statistics from raw predictions ----------------------------------------------
def classification_statistics(y_true: Any, y_pred: Any, *, pos_label: Any = 1) -> np.ndarray:
    """Per-item ``tp, fp, fn, tn`` indicators (binary task, ``pos_label`` positive)."""
    t = np.asarray(y_true)
    p = np.asarray(y_pred)
    if t.ndim != 1 or p.ndim != 1:
        raise InputError(
            f"`y_true` and `y_pred` must be 1-D labels; got shapes {t.shape} and {p.shape}."
        )
    check_same_length(t, p, ("y_true", "y_pred"))
    if not (np.any(t == pos_label) or np.any(p == pos_label)):
        raise InputError(
            f"`pos_label` {pos_label!r} appears in neither `y_true` nor `y_pred`; pass the label "
            "of the positive class."
        )
    truth, guess = t == pos_label, p == pos_label
    return np.stack(
        [truth & guess, ~truth & guess, truth & ~guess, ~truth & ~guess], axis=1
    ).astype(float)


def perplexity_statistics(nll: Any, tokens: Any) -> np.ndarray:
    """Per-item ``nll, tokens``: summed negative log-likelihood (nats) and token count."""
    a, b = check_scores(nll, "nll"), check_scores(tokens, "tokens")
    check_same_length(a, b, ("nll", "tokens"))
    if (b <= 0).any():
        raise InputError("`tokens` must be positive counts; found an item with 0 or fewer tokens.")
    return np.stack([a, b], axis=1)


def bleu_statistics(
    hypotheses: Sequence[str], references: Sequence[str] | Sequence[Sequence[str]]
) -> np.ndarray:
    """Per-sentence clipped n-gram matches, n-gram totals, hypothesis and reference lengths.

    Sentences are split on whitespace: tokenise beforehand the way your benchmark does (the
    numbers then match sacrebleu with ``tokenize="none"``). ``references`` holds one string
    per hypothesis or a list of strings (several references); the reference length is the
    one closest to the hypothesis, the shorter on ties.
    """
    if len(hypotheses) != len(references):
        raise InputError(
            f"`hypotheses` and `references` must pair up; got {len(hypotheses)} and "
            f"{len(references)}."
        )
    out = np.zeros((len(hypotheses), len(_BLEU_COLUMNS)))
    for i, (hyp, refs) in enumerate(zip(hypotheses, references)):
        refs = [refs] if isinstance(refs, str) else list(refs)
        if not isinstance(hyp, str) or not refs or not all(isinstance(r, str) for r in refs):
            raise InputError(f"`hypotheses` and `references` must be strings; item {i} is not.")
        words = hyp.split()
        ref_words = [r.split() for r in refs]
        for n in range(1, BLEU_ORDER + 1):
            grams = _ngrams(words, n)
            best: Counter = Counter()
            for rw in ref_words:
                best |= _ngrams(rw, n)
            out[i, n - 1] = sum(min(c, best[g]) for g, c in grams.items())
            out[i, BLEU_ORDER + n - 1] = max(len(words) - n + 1, 0)
        out[i, -2] = len(words)
        out[i, -1] = min((abs(len(rw) - len(words)), len(rw)) for rw in ref_words)[1]
    return out


def _ngrams(words: list[str], n: int) -> Counter:
    return Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))


def corpus_bleu(
    hypotheses: Sequence[str], references: Sequence[str] | Sequence[Sequence[str]]
) -> float:
    """Corpus BLEU-4 on whitespace tokens, 0-100 (:func:`bleu_statistics` summed)."""
    return METRICS["bleu"](bleu_statistics(hypotheses, references))


#: the parameters every resampling function takes, declared once
RESAMPLING = {"n_resamples": Interval(int, 2), "level": PROBABILITY, "seed": Seed(generator=True)}


# -- resampling ----------------------------------------------------------------------------
@renamed(confidence="level", random_state="seed")
@validate_params(
    {"n_resamples": Interval(int, 2), "level": PROBABILITY, "seed": Seed(generator=True)}
)
def bootstrap_metric(
    stats: Any,
    metric: str | SufficientMetric,
    *,
    n_resamples: int = 2000,
    level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
) -> BootstrapResult:
    """Bootstrap a corpus-level metric by resampling items' sufficient statistics.

    ``stats`` is ``(n_items, len(metric.columns))`` in the metric's column order (see
    ``METRICS[name].columns`` and the ``*_statistics`` helpers).
    """
    spec, data, n_resamples, level, rng = _bootstrap_iv(stats, metric, n_resamples, level, seed)
    values = np.concatenate(
        [spec.from_totals(totals) for totals in resampled_totals(data, n_resamples, rng)]
    )
    return BootstrapResult(
        spec(data), float(values.std(ddof=1)), values, spec.name, data.shape[0], level
    )


#: multiclass metrics of a confusion matrix, vectorised over leading axes (rows: true class)
def _confusion_accuracy(m: np.ndarray) -> np.ndarray:
    return _ratio(np.trace(m, axis1=-2, axis2=-1), m.sum(axis=(-2, -1)))


def _confusion_macro_f1(m: np.ndarray) -> np.ndarray:
    tp = np.diagonal(m, axis1=-2, axis2=-1)
    return _ratio(2 * tp, m.sum(axis=-1) + m.sum(axis=-2)).mean(axis=-1)


def _confusion_mcc(m: np.ndarray) -> np.ndarray:
    """Gorodkin's multiclass MCC (scikit-learn's ``matthews_corrcoef``); binary MCC at C = 2."""
    t, p = m.sum(axis=-1), m.sum(axis=-2)
    c, s = np.trace(m, axis1=-2, axis2=-1), m.sum(axis=(-2, -1))
    cov = c * s - (t * p).sum(axis=-1)
    den = np.sqrt((s**2 - (p * p).sum(axis=-1)) * (s**2 - (t * t).sum(axis=-1)))
    return _ratio(cov, den)


def _confusion_f1(m: np.ndarray) -> np.ndarray:
    """Binary F1 of the second class (index 1, the positive label)."""
    tp = m[..., 1, 1]
    return _ratio(2 * tp, 2 * tp + m[..., 0, 1] + m[..., 1, 0])


CONFUSION_METRICS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "accuracy": _confusion_accuracy,
    "f1": _confusion_f1,
    "macro_f1": _confusion_macro_f1,
    "mcc": _confusion_mcc,
}


@renamed(confidence="level", random_state="seed")
@validate_params(
    {"n_resamples": Interval(int, 2), "level": PROBABILITY, "seed": Seed(generator=True)}
)
def bootstrap_confusion(
    confusion: Any,
    metric: str,
    *,
    n_resamples: int = 2000,
    level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
) -> BootstrapResult:
    """Bootstrap a metric of a C x C confusion matrix (rows: true class, columns: predicted).

    Resampling n items with replacement and tabulating them is a multinomial draw of n items
    over the C x C cells with the observed cell shares; one draw per resample gives the same
    distribution as resampling items, at a cost that does not grow with n. ``metric`` is
    ``accuracy``, ``macro_f1``, ``mcc`` (multiclass) or ``f1`` (binary, class 1 positive).
    """
    m = np.asarray(confusion)
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] < 2:
        raise InputError(
            f"`confusion` must be a square C x C matrix of counts with C >= 2; got shape {m.shape}."
        )
    if not np.issubdtype(m.dtype, np.number) or (m < 0).any() or not np.all(m == np.round(m)):
        raise InputError(
            "`confusion` must hold non-negative whole counts (rows: true class, columns: "
            "predicted)."
        )
    fn = CONFUSION_METRICS.get(metric)
    if fn is None:
        raise InputError(
            f"`metric` must be one of {', '.join(sorted(CONFUSION_METRICS))}; got {metric!r}."
        )
    if metric == "f1" and m.shape[0] != 2:
        raise InputError(f"`f1` is the binary F1; for {m.shape[0]} classes use 'macro_f1'.")
    counts = m.astype(np.int64).reshape(-1)
    n = int(counts.sum())
    if n < 2:
        raise InputError(f"`confusion` needs at least 2 items to bootstrap; got {n}.")
    rng = check_random_state(seed)
    draws = rng.multinomial(n, counts / n, size=n_resamples).reshape(n_resamples, *m.shape)
    values = fn(draws.astype(float))
    return BootstrapResult(
        float(fn(m.astype(float))), float(values.std(ddof=1)), values, metric, n, level
    )


@renamed(confidence="level", random_state="seed")
@validate_params(
    {"n_resamples": Interval(int, 2), "level": PROBABILITY, "seed": Seed(generator=True)}
)
def bootstrap_difference(
    stats_a: Any,
    stats_b: Any,
    metric: str | SufficientMetric,
    *,
    n_resamples: int = 2000,
    level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
) -> BootstrapResult:
    """Paired bootstrap of ``metric(A) - metric(B)`` on the same items (row ``i`` = item ``i``).

    Both systems get the same resample of items, which is what makes the comparison paired.
    """
    spec, a, n_resamples, level, rng = _bootstrap_iv(stats_a, metric, n_resamples, level, seed)
    _, b, *_ = _bootstrap_iv(stats_b, spec, n_resamples, level, None)
    check_same_length(a, b, ("stats_a", "stats_b"))
    both = np.concatenate([a, b], axis=1)
    d = a.shape[1]
    values = np.concatenate(
        [
            spec.from_totals(t[:, :d]) - spec.from_totals(t[:, d:])
            for t in resampled_totals(both, n_resamples, rng)
        ]
    )
    return BootstrapResult(
        spec(a) - spec(b),
        float(values.std(ddof=1)),
        values,
        f"{spec.name} difference",
        a.shape[0],
        level,
    )


def resampled_totals(
    data: np.ndarray, n_resamples: int, rng: np.random.Generator
) -> Iterator[np.ndarray]:
    """Column totals of ``n_resamples`` bootstrap resamples of the rows of ``data``, in chunks.

    Each resample draws ``n`` row indices with replacement; ``bincount`` turns them into
    multiplicities and one matrix product sums the statistics. When the rows take at most
    ``_MULTINOMIAL_ROWS`` distinct values, the multiplicities of those values are drawn
    directly (one multinomial per resample), which has the same distribution.
    """
    n = data.shape[0]
    distinct, counts = np.unique(data, axis=0, return_counts=True)
    if distinct.shape[0] <= _MULTINOMIAL_ROWS and distinct.shape[0] < n:
        # few distinct rows (confusion cells, 0/1 scores): resample their counts directly
        shares = counts / n
        rows = max(1, _CHUNK_CELLS // distinct.shape[0])
        for start in range(0, n_resamples, rows):
            b = min(rows, n_resamples - start)
            yield rng.multinomial(n, shares, size=b) @ distinct
        return
    rows = max(1, _CHUNK_CELLS // n)
    for start in range(0, n_resamples, rows):
        b = min(rows, n_resamples - start)
        idx = rng.integers(0, n, size=(b, n))
        idx += np.arange(b)[:, None] * n
        counts = np.bincount(idx.ravel(), minlength=b * n).reshape(b, n)
        yield counts @ data


def _bootstrap_iv(stats, metric, n_resamples, level, seed):
    if isinstance(metric, SufficientMetric):
        spec = metric
    elif metric in METRICS:
        spec = METRICS[metric]
    else:
        raise InputError(f"`metric` must be one of {', '.join(sorted(METRICS))}; got {metric!r}.")
    data = np.asarray(stats, dtype=float)
    if data.ndim == 1 and len(spec.columns) == 1:
        data = data[:, None]
    if data.ndim != 2 or data.shape[1] != len(spec.columns):
        raise InputError(
            f"`stats` for {spec.name} must have one row per item and columns "
            f"{', '.join(spec.columns)}; "
            f"got shape {data.shape}."
        )
    if data.shape[0] < 2:
        raise InputError(f"`stats` needs at least 2 items to bootstrap; got {data.shape[0]}.")
    if not np.isfinite(data).all():
        raise InputError("`stats` has NaN or infinite entries; drop or fix those items first.")
    return spec, data, n_resamples, level, check_random_state(seed)
