"""The sampling core: exact inclusion probabilities, allocations that add up, collapsed groups
of two or more, and intervals that cover over many repetitions (and a too-narrow twin that
the same coverage check catches)."""

from __future__ import annotations

import numpy as np

from labcoat.evals import _design as D
from labcoat.evals.plan import build_design

from .conftest import new_model, simulate


def test_draw_takes_the_allocated_items_of_every_stratum_with_equal_chances():
    strata = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2])
    alloc = np.array([1, 2, 3])
    rng = np.random.default_rng(0)
    counts = np.zeros(strata.size)
    for _ in range(4000):
        idx = D.draw(strata, alloc, rng)
        assert np.bincount(strata[idx], minlength=3).tolist() == [1, 2, 3]
        counts[idx] += 1
    expected = (alloc / np.bincount(strata))[strata]
    assert np.allclose(counts / 4000, expected, atol=0.03)


def test_allocation_adds_up_and_is_proportional():
    alloc = D.allocate(np.array([100, 50, 50, 2]), 40)
    assert alloc.sum() == 40 and alloc[0] > alloc[1] >= 9 and alloc[3] >= 1


def test_collapsed_groups_hold_two_planned_items_or_more():
    alloc = np.ones(7, dtype=int)
    groups = D.collapse(np.arange(7), alloc)
    assert np.bincount(groups, weights=alloc).min() >= 2


def test_strata_are_exactly_as_many_as_asked_and_never_empty():
    _, y = simulate(200)
    clusters = D.cluster_strata(y, 4)
    strata = D.difficulty_strata(y, 50, clusters)
    assert strata.max() + 1 == 50 and np.bincount(strata).min() >= 1


def _coverage(shrink_se: float = 1.0, reps: int = 300) -> float:
    """Share of 95 % intervals that cover the full mean of a model stronger than the history."""
    _, y = simulate(300)
    design = build_design(y, 60)
    target = new_model(2.0)  # stronger than every model in the history
    truth = target.mean()
    rng = np.random.default_rng(1)
    hits = 0
    for _ in range(reps):
        idx = design.draw(rng)
        est, se, df, _ = design.estimate(target[idx], idx)
        hits += abs(est[0] - truth) <= D.t_quantile(0.95, df) * se[0] * shrink_se
    return hits / reps


def test_intervals_cover_a_stronger_model_over_many_repetitions():
    assert _coverage() >= 0.92


def test_the_coverage_check_catches_intervals_half_as_wide():
    assert _coverage(shrink_se=0.5) < 0.85


def test_stratified_is_more_precise_than_random_on_like_data():
    _, y = simulate(300)
    target = new_model(0.2)
    design = build_design(y, 60)
    rng = np.random.default_rng(2)
    strat = [
        abs(design.estimate(target[i], i)[0][0] - target.mean())
        for i in (design.draw(rng) for _ in range(300))
    ]
    rand = [
        abs(target[rng.choice(300, 60, replace=False)].mean() - target.mean()) for _ in range(300)
    ]
    assert np.mean(strat) < np.mean(rand)


def test_items_needed_grows_as_the_difference_shrinks_and_stops_at_the_benchmark():
    from labcoat.evals.compare import items_needed

    wide = items_needed(0.05, 0.04, 100, 1000, 2.0)
    narrow = items_needed(0.02, 0.04, 100, 1000, 2.0)
    assert 100 < wide < narrow <= 1000
    assert items_needed(0.0, 0.04, 100, 1000, 2.0) == 1000
