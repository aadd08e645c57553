"""Mean with CLT and clustered standard errors: CR1 with t by default, Miller Eq 1-4 on request."""

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
    assert res.df == 56 and res.interval == "t"
    assert (hi - lo) / 2 == pytest.approx(sps.t.ppf(0.975, 56) * res.se, rel=1e-12)
    paper = mean(x, formula="miller")
    assert paper.se == res.se and paper.df is None and paper.interval == "z"
    assert paper.ci.width / 2 == pytest.approx(1.959964 * res.se, rel=1e-6)


def test_clustered_se_matches_equation_4_written_out():
    rng = np.random.default_rng(1)
    clusters = rng.integers(0, 9, size=60)
    x = rng.normal(size=60) + clusters * 0.3
    res = mean(x, cluster=clusters, formula="miller")
    assert res.se == pytest.approx(_eq4_by_hand(x, clusters))
    assert res.n_clusters == 9 and res.df is None
    assert res.se_clt == pytest.approx(sps.sem(x))


def test_singleton_clusters_change_nothing():
    x = np.random.default_rng(2).normal(size=40)
    assert mean(x, cluster=np.arange(40)).se == pytest.approx(mean(x).se)


def test_string_cluster_labels_work():
    x = np.random.default_rng(3).normal(size=30)
    labels = np.array([f"doc{i % 4}" for i in range(30)], dtype=object)
    assert mean(x, cluster=labels).se == pytest.approx(mean(x, cluster=np.arange(30) % 4).se)


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
    assert mean(x, cluster=clusters, ids=ids).se == pytest.approx(
        mean(per_question, cluster=np.arange(40) // 4).se
    )


def test_other_levels_from_the_result():
    res = mean(np.random.default_rng(7).normal(size=100))
    assert res.confidence_interval(0.99).width > res.ci.width > res.confidence_interval(0.5).width


@pytest.mark.parametrize(
    "scores, expect",
    [
        (np.ones(200), "every question scored 1"),
        (np.r_[np.ones(5), np.zeros(5)], "only 10 questions"),
        (np.r_[np.ones(3), np.zeros(297)], "3 correct answers of 300"),
    ],
)
def test_flags_untrustworthy_clt_intervals(scores, expect):
    warnings = mean(scores, formula="miller").notes
    assert any(expect in w for w in warnings), warnings


def test_healthy_eval_has_no_warnings():
    x = np.random.default_rng(8).binomial(1, 0.6, size=500)
    assert mean(x).notes == ()
    assert any("4 clusters" in w for w in mean(x, cluster=np.arange(500) % 4).notes)


def test_binary_scores_at_small_n_get_wilson_and_say_so():
    """A real 10-sample log: 9 of 10 right gave the CLT interval [0.539, 1.061]."""
    x = np.r_[np.ones(9), np.zeros(1)]
    res = mean(x)
    ref = sps.binomtest(9, 10).proportion_ci(0.95, method="wilson")
    assert res.interval == "wilson" and res.ci == pytest.approx((ref.low, ref.high), abs=1e-12)
    assert 0 <= res.ci.low and res.ci.high <= 1
    assert any("Wilson" in w for w in res.notes)
    assert res.confidence_interval(0.99).width > res.ci.width
    assert mean(x, formula="miller").ci.high > 1  # the paper's formula, as asked


def test_binary_scores_leaving_the_unit_interval_get_wilson_at_any_n():
    x = np.r_[np.ones(59), np.zeros(1)]  # t interval would reach above 1
    assert mean(x).interval == "wilson"
    healthy = (
        np.random.default_rng(9).binomial(1, 0.5, size=60).astype(float)
    )  # its twin, mid-range
    assert mean(healthy).interval == "t" and not any("Wilson" in w for w in mean(healthy).notes)
    graded = np.r_[np.full(9, 0.9), [1.0]]  # not 0/1: no Wilson
    assert mean(graded).interval == "t"


def test_one_cluster_is_refused_under_cr1():
    with pytest.raises(InputError, match="at least 2 clusters"):
        mean([1.0, 0.0, 1.0], cluster=["a", "a", "a"])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(scores=[1.0, np.nan, 0.0]), "`scores` has 1 non-finite value"),
        (dict(scores=[1.0]), "at least 2 questions"),
        (dict(scores=[1, 0, 1], cluster=[0, 1]), "`cluster` must have one label per question"),
        (
            dict(scores=[1, 0, 1, 1], ids=[0, 0, 1, 1], cluster=[0, 1, 2, 2]),
            "differs between answers to the same question",
        ),
        (dict(scores=np.ones((3, 2)), ids=[0, 1, 2]), "2-D"),
        (
            dict(scores=[1, 0, 1], level=95),
            "`level` must be a number strictly between 0 and 1",
        ),
        (dict(scores=["a", "b"]), "`scores` must be numbers"),
        (dict(scores=[1, 0, 1], formula="hc3"), "`formula` must be one of"),
    ],
)
def test_bad_input(kwargs, match):
    with pytest.raises(InputError, match=match):
        mean(**kwargs)


def test_a_wilson_bound_at_all_wrong_or_all_right_is_exactly_the_bound():
    from labcoat.stats.mean import wilson_interval

    for n in (10, 13, 15, 17, 40):
        assert wilson_interval(0.0, n, 0.95).low == 0.0  # was 2.776e-17 at n = 10
        assert wilson_interval(1.0, n, 0.95).high == 1.0  # was 0.9999999999999999
        ref = sps.binomtest(1, n).proportion_ci(0.95, method="wilson")
        inside = wilson_interval(1 / n, n, 0.95)  # a bound that is not at the edge is kept
        assert inside.low == pytest.approx(ref.low, abs=1e-12) and inside.low > 0.0
    shown = mean(np.zeros(10)).ci
    assert shown.low == 0.0 and f"{shown.low:.4g}" == "0"
