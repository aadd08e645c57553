"""Leaderboards (rank intervals, Holm-corrected pairs, indistinguishable groups), release gates."""

from __future__ import annotations

import numpy as np
import pytest

from labcoat.errors import InputError
from labcoat.stats import compare, gate, leaderboard
from labcoat.stats.leaderboard import indistinguishable_groups

multitest = pytest.importorskip("statsmodels.stats.multitest")


def _models(rng, gains, n=400):
    p = rng.uniform(size=n)
    return {
        f"m{k}": (rng.uniform(size=n) < np.clip(p + g, 0, 1)).astype(float)
        for k, g in enumerate(gains)
    }


def test_pairs_are_paired_comparisons_with_holm_over_all_pairs():
    scores = _models(np.random.default_rng(0), [0.0, 0.03, 0.06, 0.2])
    res = leaderboard(scores, n_resamples=200)
    assert len(res.pairs) == 6
    for pair in res.pairs:
        ref = compare(scores[pair.a], scores[pair.b])
        assert pair.diff == pytest.approx(ref.diff) and pair.pvalue == pytest.approx(ref.pvalue)
        assert pair.diff >= 0  # listed best first
    holm = multitest.multipletests([p.pvalue for p in res.pairs], method="holm")[1]
    assert [p.pvalue_holm for p in res.pairs] == pytest.approx(list(holm))
    assert [m.name for m in res.models] == ["m3", "m2", "m1", "m0"] and [
        m.rank for m in res.models
    ] == [1, 2, 3, 4]


def test_groups_and_rank_intervals_separate_what_the_data_separates():
    scores = _models(np.random.default_rng(1), [0.0, 0.005, 0.3])
    res = leaderboard(scores, n_resamples=500)
    assert res.groups == [["m2"], ["m1", "m0"]] or res.groups == [["m2"], ["m0", "m1"]]
    top = res.models[0]
    assert top.name == "m2" and top.rank_ci == (1, 1)
    close = {m.name: m.rank_ci for m in res.models[1:]}
    assert close["m0"] == (2, 3) and close["m1"] == (2, 3)


def test_a_chain_of_ties_gives_overlapping_groups():
    distinct = {frozenset(("a", "c"))}
    assert indistinguishable_groups(["a", "b", "c"], distinct) == [["a", "b"], ["b", "c"]]
    assert indistinguishable_groups(["a", "b", "c"], set()) == [["a", "b", "c"]]


def test_rank_intervals_resample_whole_clusters():
    """m1 wins on half of the passages and loses on the rest: by question the ranks look sure,
    by passage (what was sampled) they are not."""
    rng = np.random.default_rng(2)
    n_clusters, size = 16, 40
    cluster = np.repeat(np.arange(n_clusters), size)
    edge = np.where(rng.permutation(n_clusters) < 8, 0.25, -0.22)[cluster]
    base = rng.uniform(0.3, 0.7, size=cluster.size)
    scores = {
        "m0": (rng.uniform(size=cluster.size) < base).astype(float),
        "m1": (rng.uniform(size=cluster.size) < np.clip(base + edge, 0, 1)).astype(float),
    }
    by_question = leaderboard(scores, n_resamples=400)
    by_cluster = leaderboard(scores, cluster={"m0": cluster}, n_resamples=400)
    width = lambda r: max(m.rank_ci[1] - m.rank_ci[0] for m in r.models)
    assert width(by_cluster) == 1 and by_cluster.n_clusters == n_clusters
    assert by_cluster.pairs[0].pvalue > by_question.pairs[0].pvalue


def test_only_questions_every_model_answered_are_used():
    rng = np.random.default_rng(3)
    scores = _models(rng, [0.0, 0.1, 0.2], n=100)
    ids = {name: np.array([f"q{i}" for i in range(100)]) for name in scores}
    scores["m2"], ids["m2"] = scores["m2"][10:], ids["m2"][10:]
    res = leaderboard(scores, ids, n_resamples=100)
    assert res.n == 90 and {m.name: m.n_dropped for m in res.models} == {
        "m0": 10,
        "m1": 10,
        "m2": 0,
    }
    assert any("90 questions every model answered" in w for w in res.notes)
    with pytest.raises(InputError, match="share 0 question"):
        leaderboard({"a": [1.0, 0.0], "b": [1.0, 1.0]}, {"a": ["x", "y"], "b": ["z", "w"]})


def _pair(rng, n, drop):
    p = rng.uniform(size=n)
    return (rng.uniform(size=n) < np.clip(p - drop, 0, 1)).astype(float), (
        rng.uniform(size=n) < p
    ).astype(float)


def test_gate_allows_rejects_and_knows_when_it_cannot_tell():
    rng = np.random.default_rng(4)
    new, old = _pair(rng, 2000, 0.0)
    assert gate(new, old, 0.05).decision == "ALLOW"
    worse_new, old2 = _pair(rng, 2000, 0.2)
    res = gate(worse_new, old2, 0.05)
    assert res.decision == "REJECT" and res.exit_code == 1 and res.ci.high < -0.05
    unsure = gate(*_pair(rng, 200, 0.0), 0.02)
    assert unsure.decision == "INCONCLUSIVE" and unsure.exit_code == 4 and unsure.more_items > 0


def test_more_items_is_about_what_would_decide():
    """Repeating the questions keeps the difference and shrinks the SE as 1/sqrt(n): the gate
    decides at the size it named, and not well before it."""
    rng = np.random.default_rng(5)
    better, worse = _pair(rng, 300, 0.0)
    res = gate(worse, better, 0.01)  # 2.3 points worse, margin 1 point: thousands more needed
    assert res.decision == "INCONCLUSIVE" and res.more_items > 3000
    target = 300 + res.more_items
    enough, short = int(np.ceil(1.1 * target / 300)), int(0.7 * target / 300)
    assert gate(np.tile(worse, enough), np.tile(better, enough), 0.01).decision == "REJECT"
    assert gate(np.tile(worse, short), np.tile(better, short), 0.01).decision == "INCONCLUSIVE"


def test_rank_intervals_agree_with_the_holm_adjusted_pairs_the_groups_come_from():
    """A top model the bootstrap always ranks first (1-1) while Holm cannot separate it from the
    second (p 0.12): its rank interval must reach 2, as its group says."""
    rng = np.random.default_rng(34)
    n = 300
    p = rng.uniform(size=n)
    scores = {
        f"m{k}": (rng.uniform(size=n) < np.clip(p + g, 0, 1)).astype(float)
        for k, g in enumerate([0.0, 0.02, 0.045, 0.07])
    }
    res = leaderboard(scores, n_resamples=1000)
    top, pair = res.models[0], res.pairs[0]
    assert top.rank_ci_bootstrap == (1, 1) and pair.pvalue_holm > res.alpha  # the planted case
    assert top.rank_ci == (1, 2) and [pair.a, pair.b] in res.groups
    for m in res.models:  # every model: its interval spans exactly the models it is not told from
        apart = [q for q in res.pairs if m.name in (q.a, q.b) and q.pvalue_holm <= res.alpha]
        above = sum(1 for q in apart if q.b == m.name)
        below = sum(1 for q in apart if q.a == m.name)
        assert m.rank_ci == (1 + above, len(res.models) - below)
    healthy = leaderboard(_models(np.random.default_rng(1), [0.0, 0.005, 0.3]), n_resamples=500)
    assert healthy.models[0].rank_ci == healthy.models[0].rank_ci_bootstrap == (1, 1)
