"""The proof: in a world where the two arms do not differ, registered plans keep the family-wise
false-positive rate at α, a garden-of-forking-paths analyst does not, and labcoat flags every
one of the analyst's runs as deviating (and none of the registered ones).

The world: a family of 3 hypotheses (3 tasks), each comparing arm A with arm B on 240 items in
30 clusters of 8, with up to 6 seeds per arm and 5 correlated metrics, and no true difference
anywhere. Per-item differences are ``cluster effect + item effect + seed noise``; since the CR1
standard error of a mean needs only each cluster's sum, the world is drawn at that level
(exact in distribution), vectorised over 2,000 simulated studies. Two runs drawn item by item
are judged by the real pipeline (:func:`labcoat.verdicts.analyse`), and the vectorised
statistics must equal it, so the fast path is the library's arithmetic, not a second one.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from labcoat.interval import ConfidenceInterval
from labcoat.verdicts import Observation, Plan, PriorVerdict, analyse, find_deviations
from labcoat.verdicts.verdict import adjust, decide, t_pvalue

SIMS, TASKS, METRICS, SEEDS = 2000, 3, 5, 6
CLUSTERS, PER_CLUSTER = 30, 8
ITEMS = CLUSTERS * PER_CLUSTER
LOOKS = (8, 15, 23, 30)  # clusters seen at each look; the plan's fixed n is the last
PLANNED_SEEDS = 3
TAU, SIGMA_ITEM, SIGMA_SEED, RHO = 0.1, 0.3, 0.4, 0.5  # cluster, item, seed SDs; metric corr.

PLAN = Plan(
    metric="m0",
    column="m0",
    id="item",
    comparison="superiority",
    items=ITEMS,
    cluster="cluster",
    seeds=PLANNED_SEEDS,
    seed_column="seed",
    alpha=0.05,
    sides="one-sided",
    family="tasks",
    family_size=TASKS,
    correction="holm",
)


def _correlated(rng, shape, metric_axis=2):
    """Normals correlated ``RHO`` across metrics (axis 2), independent elsewhere."""
    shared_shape = list(shape)
    shared_shape[metric_axis] = 1
    return np.sqrt(RHO) * rng.standard_normal(shared_shape) + np.sqrt(
        1 - RHO
    ) * rng.standard_normal(shape)


def cluster_sums(rng, sims):
    """Per cluster, the sum over its items of the seed-averaged difference A − B, for every
    number of seeds k = 1..SEEDS: shape (sims, TASKS, METRICS, SEEDS, CLUSTERS)."""
    shape = (sims, TASKS, METRICS, 1, CLUSTERS)
    fixed = PER_CLUSTER * TAU * _correlated(rng, shape)
    fixed += np.sqrt(PER_CLUSTER) * SIGMA_ITEM * _correlated(rng, shape)
    noise = (
        np.sqrt(PER_CLUSTER)
        * SIGMA_SEED
        * _correlated(rng, (sims, TASKS, METRICS, SEEDS, CLUSTERS))
    )
    k = np.arange(1, SEEDS + 1)[:, None]
    return fixed + np.cumsum(noise, axis=3) / k


def cr1(sums, clusters):
    """Mean difference, CR1 SE and df over the first ``clusters`` clusters (the library's
    formula, vectorised): ``sqrt(G / (G - 1) * sum_c (S_c - m n_c)^2) / n``."""
    part = sums[..., :clusters]
    n = clusters * PER_CLUSTER
    diff = part.sum(-1) / n
    centred = part - PER_CLUSTER * diff[..., None]
    se = np.sqrt(clusters / (clusters - 1) * (centred**2).sum(-1)) / n
    return diff, se, clusters - 1


def one_sided_p(diff, se, df):
    return sps.t.sf(diff / se, df)


def _items(rng, seeds=PLANNED_SEEDS, clusters=CLUSTERS):
    """One study drawn item by item (rows per item and seed, the first ``seeds`` seeds and
    ``clusters`` clusters), for the real pipeline; with the per-cluster sums the fast path uses."""
    cluster = np.repeat(np.arange(CLUSTERS), PER_CLUSTER)
    c = TAU * _correlated(rng, (1, 1, METRICS, 1, CLUSTERS))[0, 0, :, 0][:, cluster]
    v = SIGMA_ITEM * _correlated(rng, (1, 1, METRICS, 1, ITEMS))[0, 0, :, 0]
    e = SIGMA_SEED * _correlated(rng, (1, 1, METRICS, SEEDS, ITEMS))[0, 0]
    d = (c + v)[:, None, :] + e  # (metrics, seeds, items)
    q = rng.random(ITEMS)  # item difficulty: shared by both arms, cancels in the pairs
    n = clusters * PER_CLUSTER
    rows = {"item": [], "cluster": [], "seed": []}
    a = {f"m{m}": [] for m in range(METRICS)}
    b = {f"m{m}": [] for m in range(METRICS)}
    for s in range(seeds):
        rows["item"] += [str(i) for i in range(n)]
        rows["cluster"] += [str(g) for g in cluster[:n]]
        rows["seed"] += [str(s)] * n
        for m in range(METRICS):
            a[f"m{m}"] += list(q[:n] + d[m, s, :n] / 2)
            b[f"m{m}"] += list(q[:n] - d[m, s, :n] / 2)
    sums = d[:, :seeds, :n].mean(axis=1).reshape(METRICS, clusters, PER_CLUSTER).sum(-1)
    return {**rows, **a}, {**rows, **b}, sums


def test_the_vectorised_statistics_are_the_pipelines():
    rng = np.random.default_rng(7)
    for _ in range(2):
        a, b, sums = _items(rng)
        result = analyse(PLAN, a, b)
        diff, se, df = cr1(sums[0], CLUSTERS)
        assert result.estimate == pytest.approx(diff, abs=1e-12)
        assert result.pvalue == pytest.approx(one_sided_p(diff, se, df), rel=1e-6, abs=1e-12)
        assert result.pvalue == pytest.approx(t_pvalue(PLAN, diff, se, df), rel=1e-9)
        assert result.deviations == []  # the registered analysis deviates from nothing


def test_a_forking_analysis_is_seen_by_the_pipeline_as_the_fast_path_sees_it():
    """One garden analysis (first look, 4 seeds, metric m2) run by :func:`analyse` on real
    rows: the same p-value as the vectorised path and the same deviation kinds as the
    :class:`Observation` the simulation builds for it."""
    look, k, m = 0, 3, 2
    a, b, sums = _items(np.random.default_rng(11), seeds=k + 1, clusters=LOOKS[look])
    result = analyse(PLAN, a, b, column=f"m{m}", metric=f"m{m}")
    diff, se, df = cr1(sums[m], LOOKS[look])
    assert result.pvalue == pytest.approx(one_sided_p(diff, se, df), rel=1e-6, abs=1e-12)
    simulated = find_deviations(_observation(look, k, m, earlier_looks=0))
    assert (
        {d["kind"] for d in result.deviations}
        == {f.evidence["kind"] for f in simulated if f.status == "fail"}
        == {"metric", "column", "items", "seeds"}
    )


def _garden(p):
    """The analyst: look after each batch of clusters, try 3..6 seeds and each of 5 metrics,
    stop at the first p ≤ α. Returns (significant, look, seeds index, metric) per run."""
    sims, tasks = p.shape[:2]
    order = [
        (look, k, m)
        for look in range(len(LOOKS))
        for k in range(PLANNED_SEEDS - 1, SEEDS)
        for m in range(METRICS)
    ]
    flat = np.stack([p[:, :, m, k, look] for look, k, m in order], axis=-1)
    hit = flat <= PLAN.alpha
    first = np.where(hit.any(-1), hit.argmax(-1), flat.argmin(-1))
    chosen = np.array(order)[first]  # (sims, tasks, 3)
    return hit.any(-1), chosen


def _observation(look: int, k: int, m: int, earlier_looks: int) -> Observation:
    """What labcoat sees of one analysis: the column it scored, the items and seeds in the
    files, and the verdicts the analyst recorded at the earlier looks."""
    seeds = tuple(str(s) for s in range(k + 1))
    previous = tuple(
        PriorVerdict(f"2026-01-01T00:0{j}:00+00:00", {"a": f"look{j}"}, LOOKS[j] * PER_CLUSTER)
        for j in range(earlier_looks)
    )
    return Observation(
        plan=PLAN,
        column=f"m{m}",
        metric=f"m{m}",
        n_a=LOOKS[look] * PER_CLUSTER,
        n_b=LOOKS[look] * PER_CLUSTER,
        n_paired=LOOKS[look] * PER_CLUSTER,
        seeds_a=seeds,
        seeds_b=seeds,
        fingerprints={"a": f"look{look}"},
        previous=previous,
    )


@pytest.mark.slow  # about 3 s: 2,000 studies and 18,000 deviation reviews
def test_registered_plans_hold_alpha_and_forking_paths_do_not_and_are_flagged(record_property):
    rng = np.random.default_rng(2026)
    chunks = []
    for _ in range(SIMS // 500):
        sums = cluster_sums(rng, 500)
        p = np.empty((500, TASKS, METRICS, SEEDS, len(LOOKS)))
        for j, g in enumerate(LOOKS):
            diff, se, df = cr1(sums, g)
            p[..., j] = one_sided_p(diff, se, df)
        registered = cr1(sums[:, :, 0, PLANNED_SEEDS - 1], CLUSTERS)
        chunks.append((p, registered))
    p = np.concatenate([c[0] for c in chunks])
    diff = np.concatenate([c[1][0] for c in chunks])
    se = np.concatenate([c[1][1] for c in chunks])

    # registered plans: metric m0, 3 seeds, all 240 items, Holm across the family of 3
    q = sps.t.ppf(1 - PLAN.alpha, CLUSTERS - 1)
    registered_fp = np.zeros(SIMS, dtype=bool)
    for s in range(SIMS):
        ps = [t_pvalue(PLAN, diff[s, t], se[s, t], CLUSTERS - 1) for t in range(TASKS)]
        assert ps == pytest.approx(p[s, :, 0, PLANNED_SEEDS - 1, -1].tolist(), rel=1e-6, abs=1e-12)
        for t in range(TASKS):
            p_adj = adjust(PLAN, ps[t], ps[:t] + ps[t + 1 :])
            ci = ConfidenceInterval(diff[s, t] - q * se[s, t], diff[s, t] + q * se[s, t])
            registered_fp[s] |= decide(PLAN, ci, p_adj, diff[s, t]) == "confirmed"
    registered_rate = registered_fp.mean()

    # the garden of forking paths: per task, the first "significant" of 4 looks x 4 seed
    # counts x 5 metrics, reported uncorrected
    significant, chosen = _garden(p)
    garden_rate = significant.any(axis=1).mean()
    per_hypothesis = significant.mean()

    # every garden run is flagged; no registered run is
    flagged = alone = 0
    kinds: dict[str, int] = {}
    for s in range(SIMS):
        for t in range(TASKS):
            look, k, m = chosen[s, t]
            found = find_deviations(_observation(look, k, m, earlier_looks=look))
            bad = [f.evidence["kind"] for f in found if f.status == "fail"]
            flagged += bool(bad)
            alone += any(  # from the reported analysis alone, without the earlier looks
                f.status == "fail" for f in find_deviations(_observation(look, k, m, 0))
            )
            for kind in set(bad):
                kinds[kind] = kinds.get(kind, 0) + 1
    registered_flags = sum(
        f.status == "fail"
        for f in find_deviations(_observation(len(LOOKS) - 1, PLANNED_SEEDS - 1, 0, 0))
    )

    record_property(
        "summary",
        f"verdicts null world ({SIMS} studies, family of {TASKS}): registered plans "
        f"family-wise FP {registered_rate:.2%} (alpha {PLAN.alpha:.0%}); forking paths "
        f"{garden_rate:.2%} family-wise, {per_hypothesis:.2%} per hypothesis; flagged "
        f"{flagged}/{SIMS * TASKS} forking runs ({kinds}; {alone} from the reported analysis "
        "alone, without the verdicts at earlier looks)",
    )
    assert abs(registered_rate - PLAN.alpha) <= 0.01
    assert garden_rate > 3 * PLAN.alpha and per_hypothesis > 2 * PLAN.alpha
    assert flagged == SIMS * TASKS
    assert registered_flags == 0
