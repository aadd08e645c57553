"""The survey-sampling core, vectorised over models: strata, allocation, draws, estimates.

Everything here works on index arrays and score matrices; :mod:`labcoat.evals.plan`,
:mod:`~labcoat.evals.estimate` and :mod:`~labcoat.evals.compare` wrap it with names and checks,
and ``bench/evals.py`` calls it directly to score thousands of replicate subsets.

The estimator is the stratified difference estimator (Särndal, Swensson & Wretman, *Model
Assisted Survey Sampling*, §6.3): with predictions ``p_i`` that may come from any model,

    theta_hat = mean_all(p) + sum_h W_h * mean_{sampled in h}(y - p),

which is design-unbiased for the full-benchmark mean whatever ``p`` is, as long as ``p`` does
not depend on which items were drawn (``p = 0`` gives the plain stratified mean). Predictions
that do use the drawn items (the ability is fitted on them) are cross-fitted: each item's
residual comes from an ability fitted without its fold, which keeps the bias to second order
and the residual variance honest.

The variance is the stratified formula with the finite-population correction, computed from
within-stratum residual variances that are shrunk towards their pooled value (a stratum of two
or three items says little about its own variance), with a floor that keeps a stratum whose
drawn items all agree from claiming zero variance: its items are scored as if one more item,
with the smoothed proportion's Bernoulli variance, had been drawn. The quantile is Student's t
with the pooled degrees of freedom.
"""

from __future__ import annotations

import functools
import math

import numpy as np

#: pseudo-items of pooled variance added to every stratum's own (shrinkage of small strata)
SHRINK = 4.0
#: pseudo-items of smoothed Bernoulli variance added to every stratum (the floor)
FLOOR = 1.0


def difficulty_strata(
    scores: np.ndarray, n_strata: int, clusters: np.ndarray | None = None
) -> np.ndarray:
    """Stratum of every item: runs of items of like difficulty (the history's mean score),
    within each cluster when ``clusters`` are given. Exactly ``n_strata`` strata (fewer only
    when there are fewer items), numbered so that neighbours in number are neighbours in
    difficulty within one cluster, sizes within one of each other inside a cluster."""
    mean = np.asarray(scores, dtype=float).mean(axis=1)
    n = mean.size
    n_strata = int(max(1, min(n_strata, n)))
    if clusters is None:
        clusters = np.zeros(n, dtype=int)
    cluster_ids, counts = np.unique(clusters, return_counts=True)
    # strata per cluster by largest remainders, at least one each
    share = n_strata * counts / n
    per = np.maximum(np.floor(share).astype(int), 1)
    while per.sum() < n_strata:
        gap = np.where(per < counts, share - per, -np.inf)
        per[int(np.argmax(gap))] += 1
    while per.sum() > n_strata:
        gap = np.where(per > 1, share - per, np.inf)
        per[int(np.argmin(gap))] -= 1
    labels = np.empty(n, dtype=int)
    next_label = 0
    for cluster, k in zip(cluster_ids, per):
        members = np.flatnonzero(clusters == cluster)
        order = members[np.argsort(mean[members], kind="stable")]
        for part in np.array_split(order, min(int(k), order.size)):
            labels[part] = next_label
            next_label += 1
    return labels


def collapse(strata: np.ndarray, alloc: np.ndarray) -> np.ndarray:
    """Variance groups: strata with one planned item are joined to a neighbour (the next in
    number, which is the next in difficulty) so every group holds at least two drawn items:
    the collapsed-strata variance estimator (Cochran, *Sampling Techniques*, §5A.12), which
    can only overstate the variance. Returns the group of every stratum."""
    H = alloc.size
    group = np.empty(H, dtype=int)
    g = 0
    count = 0
    for h in range(H):
        group[h] = g
        count += int(alloc[h])
        if count >= 2:
            g += 1
            count = 0
    if count and g > 0:  # a last group with one item joins the previous one
        group[group == g] = g - 1
    _, group = np.unique(group, return_inverse=True)
    return group


def cluster_strata(
    scores: np.ndarray, n_strata: int, *, dims: int = 4, seed: int = 0
) -> np.ndarray:
    """Strata of items that the history's models answer alike: k-means on each item's mean
    score (weighted 3x, so difficulty dominates) and its first ``dims`` principal components of
    the history's centred responses. Numbered 0..H-1, none empty."""
    y = np.asarray(scores, dtype=float)
    n_items, n_models = y.shape
    n_strata = int(max(1, min(n_strata, n_items)))
    mean = y.mean(axis=1, keepdims=True)
    r = min(dims, max(n_models - 1, 0))
    features = np.hstack([3.0 * mean, components(y - mean, r) / np.sqrt(n_models)])
    if n_strata == 1:
        return np.zeros(n_items, dtype=int)
    labels = kmeans(features, n_strata, seed=seed)
    _, labels = np.unique(labels, return_inverse=True)
    return labels.astype(int)


def components(z: np.ndarray, r: int) -> np.ndarray:
    """The first ``r`` principal component scores ``U S`` of ``z`` (items x models), from the
    models x models Gram matrix (far cheaper than an SVD when items outnumber models)."""
    if r <= 0:
        return np.zeros((z.shape[0], 0))
    values, vectors = np.linalg.eigh(z.T @ z)
    top = np.argsort(values)[::-1][:r]
    return z @ vectors[:, top]


def kmeans(x: np.ndarray, k: int, *, seed: int = 0, iterations: int = 30) -> np.ndarray:
    """Lloyd's k-means with k-means++ seeding (a few milliseconds on thousands of items)."""
    rng = np.random.default_rng(seed)
    n = x.shape[0]
    centres = [x[rng.integers(n)]]
    dist = ((x - centres[0]) ** 2).sum(axis=1)
    for _ in range(1, k):
        total = dist.sum()
        pick = rng.choice(n, p=dist / total) if total > 0 else rng.integers(n)
        centres.append(x[pick])
        dist = np.minimum(dist, ((x - x[pick]) ** 2).sum(axis=1))
    c = np.array(centres)
    labels = np.zeros(n, dtype=int)
    for _ in range(iterations):
        d2 = (x**2).sum(axis=1)[:, None] - 2 * x @ c.T + (c**2).sum(axis=1)[None]
        new = d2.argmin(axis=1)
        if (new == labels).all() and _ > 0:
            break
        labels = new
        for j in range(k):
            members = labels == j
            if members.any():
                c[j] = x[members].mean(axis=0)
    return labels


def allocate(sizes: np.ndarray, budget: int, minimum: int = 1) -> np.ndarray:
    """Proportional allocation of ``budget`` items over strata of ``sizes`` (largest remainders),
    at least ``minimum`` per stratum (fewer only where a stratum is smaller)."""
    sizes = np.asarray(sizes, dtype=int)
    floor = np.minimum(sizes, minimum)
    rest = budget - int(floor.sum())
    if rest < 0:
        raise ValueError("budget below the minimum allocation")
    room = sizes - floor
    share = rest * sizes / sizes.sum()
    alloc = np.minimum(np.floor(share).astype(int), room)
    left = rest - int(alloc.sum())
    while left > 0:
        gap = np.where(alloc < room, share - alloc, -np.inf)
        if not np.isfinite(gap).any():
            break
        h = int(np.argmax(gap))
        alloc[h] += 1
        share[h] = min(share[h], alloc[h])  # one extra at most per pass, by remainder
        left -= 1
    return floor + alloc


def draw(strata: np.ndarray, alloc: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A stratified simple random sample without replacement: ``alloc[h]`` items of stratum h,
    shuffled into one random order (so any prefix is as good as any other)."""
    keys = rng.random(strata.size)
    order = np.lexsort((keys, strata))  # by stratum, randomly within
    sizes = np.bincount(strata, minlength=alloc.size)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    rank = np.arange(strata.size) - np.repeat(starts, sizes)
    picked = order[rank < np.repeat(alloc, sizes)]
    return rng.permutation(picked)


def folds(strata_of_sample: np.ndarray, k: int) -> np.ndarray:
    """Cross-fitting folds: drawn items in their (random) planned order, dealt round-robin."""
    return np.arange(strata_of_sample.size) % k


def stratified(
    y: np.ndarray,
    strata_of_sample: np.ndarray,
    sizes: np.ndarray,
    pred_sample: np.ndarray | None = None,
    pred_total: np.ndarray | float = 0.0,
    groups: np.ndarray | None = None,
    *,
    paired: bool = False,
) -> tuple[np.ndarray, np.ndarray, int]:
    """The difference estimate, its standard error and degrees of freedom for every model.

    ``y``: ``(n, models)`` scores of the drawn items; ``strata_of_sample``: each drawn item's
    stratum; ``sizes``: every stratum's size in the full benchmark; ``pred_sample``: the
    predictions for the drawn items (``None``: no model); ``pred_total``: the mean prediction
    over the full benchmark per model; ``groups``: the variance group of every stratum (from
    :func:`collapse`; ``None``: every stratum is its own); ``paired``: ``y`` holds differences
    of two models' scores (in [-1, 1]), whose floor is their smoothed second moment.
    """
    sizes = np.asarray(sizes, dtype=float)
    estimate = _point(y, strata_of_sample, sizes, pred_sample, pred_total)
    if groups is not None:
        strata_of_sample = groups[strata_of_sample]
        sizes = np.bincount(groups, weights=sizes)
    se, df = _variance(y, strata_of_sample, sizes, pred_sample, paired)
    return estimate, se, df


def _point(y, strata_of_sample, sizes, pred_sample, pred_total) -> np.ndarray:
    y = np.asarray(y, dtype=float)
    if y.ndim == 1:
        y = y[:, None]
    resid = y if pred_sample is None else y - pred_sample
    H = sizes.size
    n_h = np.bincount(strata_of_sample, minlength=H).astype(float)
    sums = np.zeros((H, resid.shape[1]))
    np.add.at(sums, strata_of_sample, resid)
    present = n_h > 0
    means = np.where(present[:, None], sums / np.maximum(n_h, 1.0)[:, None], resid.mean(axis=0))
    return np.asarray(pred_total, dtype=float) + (sizes / sizes.sum()) @ means


def _variance(y, strata_of_sample, sizes, pred_sample, paired):
    y = np.asarray(y, dtype=float)
    if y.ndim == 1:
        y = y[:, None]
    resid = y if pred_sample is None else y - pred_sample
    sizes = np.asarray(sizes, dtype=float)
    n_total = sizes.sum()
    H = sizes.size
    n_h = np.bincount(strata_of_sample, minlength=H).astype(float)
    present = n_h > 0
    onehot = np.zeros((H, strata_of_sample.size))
    onehot[strata_of_sample, np.arange(strata_of_sample.size)] = 1.0
    sums = onehot @ resid  # H x models
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(present[:, None], sums / n_h[:, None], 0.0)
    weights = sizes / n_total
    sse = onehot @ resid**2 - n_h[:, None] * means**2 * present[:, None]
    sse = np.maximum(sse, 0.0)
    df = int(max(1, strata_of_sample.size - present.sum()))
    pooled = sse.sum(axis=0) / df
    if paired:  # differences: the smoothed share of their square (discordance for 0/1 scores)
        floor = (onehot @ y**2 + 0.5) / (n_h[:, None] + 1.0)
    else:  # the smoothed Bernoulli variance of the stratum's raw scores (y in [0, 1])
        p_smooth = (onehot @ y + 0.5) / (n_h[:, None] + 1.0)
        floor = p_smooth * (1.0 - p_smooth)
    if pred_sample is not None:  # residuals of a fitted model vary less than raw scores
        floor = np.minimum(floor, pooled[None] + floor / (n_h[:, None] + 1.0))
    denom = np.maximum(n_h - 1.0, 0.0)[:, None] + SHRINK + FLOOR
    s2 = (sse + SHRINK * pooled[None] + FLOOR * floor) / denom
    fpc = np.where(present, 1.0 - n_h / np.maximum(sizes, 1.0), 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        var_h = np.where(present[:, None], fpc[:, None] * s2 / np.maximum(n_h, 1.0)[:, None], 0.0)
    # an empty stratum is estimated by the pooled mean: its weight adds the pooled variance
    var_h = np.where(present[:, None], var_h, s2 / max(strata_of_sample.size, 1))
    var = (weights**2) @ var_h
    return np.sqrt(var), df


def srs(y: np.ndarray, n_total: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Plain random sampling: the sample mean, its standard error (with the finite-population
    correction) and degrees of freedom: the baseline every plan is measured against."""
    y = np.asarray(y, dtype=float)
    if y.ndim == 1:
        y = y[:, None]
    n = y.shape[0]
    var = y.var(axis=0, ddof=1) * (1.0 - n / n_total) / n
    return y.mean(axis=0), np.sqrt(var), n - 1


@functools.lru_cache(maxsize=4096)
def t_quantile(level: float, df: float) -> float:
    """The two-sided ``level`` quantile of Student's t with ``df`` degrees of freedom."""
    from scipy.special import ndtri, stdtrit  # far lighter to import than scipy.stats

    if not math.isfinite(df):
        return float(ndtri(0.5 + level / 2.0))
    return float(stdtrit(df, 0.5 + level / 2.0))


__all__ = ["allocate", "difficulty_strata", "draw", "folds", "srs", "stratified", "t_quantile"]
