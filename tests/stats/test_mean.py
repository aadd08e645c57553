"""Mean with CLT and clustered standard errors (Miller Eq 1-4)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from labcoat.errors import InputError
from labcoat.stats import mean


def _eq4_by_hand(x: np.ndarray, clusters: np.ndarray) -> float:
    """Eq 4 written out as the paper states it, with explicit loops over pairs."""
    n, xbar = x.size, x.mean()
    se2 = x.var(ddof=1) / n
    cross = 0.0
    for c in np.unique(clusters):
        members = x[clusters == c]
        for i in range(members.size):
            for j in range(members.size):
                if i != j:
                    cross += (members[i] - xbar) * (members[j] - xbar)
    return float(np.sqrt(se2 + cross / n**2))


def _clustered_scores(rng, n_clusters, size, icc, shape=()):
    """0/1 scores whose questions share a per-cluster difficulty (a random effect)."""
    effect = rng.normal(0, np.sqrt(icc), size=(*shape, n_clusters, 1))
    noise = rng.normal(0, np.sqrt(1 - icc), size=(*shape, n_clusters, size))
    return (effect + noise > 0).astype(float).reshape(*shape, n_clusters * size)


def test_clt_se_is_the_sample_standard_error():
    x = np.random.default_rng(0).normal(size=57)
    res = mean(x)
    assert res.mean == pytest.approx(x.mean())
    assert res.se == pytest.approx(sps.sem(x))
    assert res.n == 57 and res.n_clusters is None
    lo, hi = res.ci
    assert (hi - lo) / 2 == pytest.approx(1.959964 * res.se, rel=1e-6)


def test_clustered_se_matches_equation_4_written_out():
    rng = np.random.default_rng(1)
    clusters = rng.integers(0, 9, size=60)
    x = rng.normal(size=60) + clusters * 0.3
    res = mean(x, cluster=clusters)
    assert res.se == pytest.approx(_eq4_by_hand(x, clusters))
    assert res.n_clusters == 9
    assert res.se_clt == pytest.approx(sps.sem(x))


def test_singleton_clusters_change_nothing():
    x = np.random.default_rng(2).normal(size=40)
    assert mean(x, cluster=np.arange(40)).se == pytest.approx(mean(x).se)


def test_string_cluster_labels_work():
    x = np.random.default_rng(3).normal(size=30)
    labels = np.array([f"doc{i % 4}" for i in range(30)], dtype=object)
    assert mean(x, cluster=labels).se == pytest.approx(mean(x, cluster=np.arange(30) % 4).se)


def test_clustered_interval_covers_where_naive_does_not():
    rng = np.random.default_rng(4)
    reps, n_clusters, size, icc = 2000, 60, 10, 0.3
    data = _clustered_scores(rng, n_clusters, size, icc, shape=(reps,))
    truth = 0.5  # symmetric random effect and noise around 0 -> P(score = 1) = 1/2
    clusters = np.repeat(np.arange(n_clusters), size)
    clustered_hits = naive_hits = 0
    for x in data:
        clustered_hits += not mean(x, cluster=clusters).ci.excludes(truth)
        naive_hits += not mean(x).ci.excludes(truth)
    clustered, naive = clustered_hits / reps, naive_hits / reps
    assert abs(clustered - 0.95) <= 0.015, clustered
    assert naive < 0.80, naive


def test_repeated_answers_are_question_means_not_independent_questions():
    rng = np.random.default_rng(5)
    p = rng.uniform(size=200)
    answers = (rng.uniform(size=(200, 8)) < p[:, None]).astype(float)
    res = mean(answers)
    assert res.n == 200 and res.k == 8
    assert res.se == pytest.approx(sps.sem(answers.mean(axis=1)))
    rows = answers.reshape(-1)
    by_id = mean(rows, ids=np.repeat(np.arange(200), 8))
    assert by_id.se == pytest.approx(res.se) and by_id.n == 200
    pooled = mean(rows)  # the mistake: 1600 "independent" answers
    assert pooled.se < 0.75 * res.se


def test_cluster_given_per_row_with_ids():
    rng = np.random.default_rng(6)
    ids = np.repeat(np.arange(40), 3)
    clusters = ids // 4
    x = rng.normal(size=120)
    per_question = x.reshape(40, 3).mean(axis=1)
    assert mean(x, cluster=clusters, ids=ids).se == pytest.approx(mean(per_question, cluster=np.arange(40) // 4).se)


def test_other_levels_from_the_result():
    res = mean(np.random.default_rng(7).normal(size=100))
    assert res.confidence_interval(0.99).width > res.ci.width > res.confidence_interval(0.5).width


@pytest.mark.parametrize(
    "scores, expect",
    [(np.ones(200), "every question scored 1"), (np.r_[np.ones(5), np.zeros(5)], "only 10 questions"),
     (np.r_[np.ones(3), np.zeros(297)], "3 correct answers of 300")],
)
def test_flags_untrustworthy_clt_intervals(scores, expect):
    warnings = mean(scores).warnings
    assert any(expect in w for w in warnings), warnings


def test_healthy_eval_has_no_warnings():
    x = np.random.default_rng(8).binomial(1, 0.6, size=500)
    assert mean(x).warnings == ()
    assert any("4 clusters" in w for w in mean(x, cluster=np.arange(500) % 4).warnings)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(scores=[1.0, np.nan, 0.0]), "`scores` has 1 non-finite value"),
        (dict(scores=[1.0]), "at least 2 questions"),
        (dict(scores=[1, 0, 1], cluster=[0, 1]), "`cluster` must have one label per question"),
        (dict(scores=[1, 0, 1, 1], ids=[0, 0, 1, 1], cluster=[0, 1, 2, 2]), "differs between answers to the same question"),
        (dict(scores=np.ones((3, 2)), ids=[0, 1, 2]), "2-D"),
        (dict(scores=[1, 0, 1], confidence=95), "`confidence` must be a number strictly between 0 and 1"),
        (dict(scores=["a", "b"]), "`scores` must be numbers"),
    ],
)
def test_bad_input(kwargs, match):
    with pytest.raises(InputError, match=match):
        mean(**kwargs)
