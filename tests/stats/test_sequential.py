"""Confidence sequences stay valid under optional stopping; re-checked fixed-n intervals do not."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from labcoat.errors import InputError
from labcoat.stats import ConfidenceInterval, ConfidenceSequence, replay

STREAMS, LENGTH, BURN_IN = 300, 400, 10


def _naive_ever_excludes(x: np.ndarray, mu: float, confidence: float = 0.95) -> np.ndarray:
    """Per stream: did a fixed-n CLT interval, re-checked after every item, ever exclude ``mu``?"""
    t = np.arange(1, x.shape[1] + 1)
    mean = np.cumsum(x, axis=1) / t
    var = np.maximum(np.cumsum(x**2, axis=1) / t - mean**2, 0) * t / np.maximum(t - 1, 1)
    half = sps.norm.ppf(0.5 + confidence / 2) * np.sqrt(var / t)
    outside = np.abs(mean - mu) > half
    return outside[:, BURN_IN:].any(axis=1)


@pytest.mark.parametrize(
    "draw, mu",
    [
        (lambda rng, shape: rng.binomial(1, 0.5, size=shape).astype(float), 0.5),
        (lambda rng, shape: rng.beta(2.0, 5.0, size=shape), 2.0 / 7.0),
    ],
    ids=["bernoulli", "beta"],
)
def test_optional_stopping_keeps_coverage_where_naive_peeking_does_not(draw, mu):
    rng = np.random.default_rng(7)
    x = draw(rng, (STREAMS, LENGTH))
    naive_error = _naive_ever_excludes(x, mu).mean()
    # the running intersection makes "ever excluded" the same as "excluded at the end"
    cs_error = np.mean(
        [ConfidenceSequence(0, 1, grid_size=250).update(row).interval.excludes(mu) for row in x]
    )
    assert naive_error > 0.15, naive_error  # peeking breaks the fixed-n interval
    assert cs_error <= 0.05 + 2.5 * np.sqrt(0.05 * 0.95 / STREAMS), cs_error


def test_stopping_on_width_stops_early_and_still_covers():
    rng = np.random.default_rng(1)
    misses, used = 0, []
    for _ in range(100):
        cs = ConfidenceSequence(0, 1, grid_size=250)
        for batch in rng.binomial(1, 0.8, size=(40, 50)).astype(float):
            if cs.update(batch).done(width=0.15):
                break
        used.append(cs.n)
        misses += cs.interval.excludes(0.8)
        assert cs.interval.width < 0.15
    assert max(used) < 2000  # stopped before the data ran out
    assert misses <= 10


def test_threshold_decides_quickly_when_far_and_not_when_equal():
    rng = np.random.default_rng(2)
    far = ConfidenceSequence(0, 1).update(rng.binomial(1, 0.9, size=300).astype(float))
    assert far.done(threshold=0.5)
    assert far.interval.low > 0.5
    tied = ConfidenceSequence(0, 1).update(rng.binomial(1, 0.5, size=300).astype(float))
    assert not tied.done(threshold=0.5)
    assert tied.done(threshold=0.5, width=1.0)  # either condition suffices


def test_interval_shrinks_contains_mean_and_respects_bounds():
    rng = np.random.default_rng(3)
    values = rng.uniform(2.0, 4.0, size=4000)
    cs = ConfidenceSequence(2.0, 6.0)
    assert cs.interval == ConfidenceInterval(2.0, 6.0)
    assert np.isnan(cs.mean) and cs.n == 0
    widths = []
    for chunk in np.split(values, 4):
        cs.update(chunk)
        widths.append(cs.interval.width)
        assert cs.interval.low <= cs.mean <= cs.interval.high
    assert widths == sorted(widths, reverse=True)
    assert cs.n == 4000 and cs.mean == pytest.approx(values.mean())
    assert 2.0 <= cs.interval.low and cs.interval.high <= 6.0
    assert cs.interval.width < 0.15


def test_streaming_in_pieces_equals_one_batch():
    x = np.random.default_rng(4).binomial(1, 0.3, size=500).astype(float)
    whole = ConfidenceSequence(0, 1).update(x)
    pieces = ConfidenceSequence(0, 1)
    for chunk in np.array_split(x, 7):
        pieces.update(chunk)
    one_by_one = ConfidenceSequence(0, 1)
    for value in x[:500]:
        one_by_one.update(float(value))
    assert pieces.interval == pytest.approx(whole.interval)
    assert one_by_one.interval == pytest.approx(whole.interval)


def test_higher_confidence_gives_wider_interval():
    x = np.random.default_rng(5).binomial(1, 0.6, size=800).astype(float)
    assert (
        ConfidenceSequence(0, 1, 0.99).update(x).interval.width
        > ConfidenceSequence(0, 1, 0.8).update(x).interval.width
    )


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: ConfidenceSequence(1, 0), "`lower`"),
        (lambda: ConfidenceSequence(0, float("inf")), "`lower`"),
        (lambda: ConfidenceSequence(0, 1, level=1.5), "`level`"),
        (lambda: ConfidenceSequence(0, 1).update([0.5, 1.5]), r"`values` must lie in \[0, 1\]"),
        (lambda: ConfidenceSequence(0, 1).update([0.5, float("nan")]), "`values` has 1 non-finite"),
        (lambda: ConfidenceSequence(0, 1).done(), "neither"),
        (lambda: ConfidenceSequence(0, 1).done(width=-1), "`width`"),
    ],
)
def test_bad_input_names_the_argument(make, match):
    with pytest.raises(InputError, match=match):
        make()


def _state_with_low_bound_on_zero(cs: ConfidenceSequence, first_standing: int) -> None:
    """Candidates below grid step ``first_standing`` rejected: the low bound is one step lower."""
    wealth = np.full(cs._grid.size, 100.0)
    wealth[first_standing : first_standing + 50] = 0.0
    cs._max_log_wealth = wealth
    cs._n, cs._sum = 1, 0.6


def test_a_bound_exactly_on_the_threshold_does_not_exclude_it():
    """On [-1, 1] the grid step 1001 of 2000, less one step, is exactly 0; float arithmetic
    put it at 2.2e-16 and called 0 excluded."""
    on_zero = ConfidenceSequence(-1, 1)
    _state_with_low_bound_on_zero(on_zero, 1001)
    grid, step = on_zero._grid, on_zero._grid[1] - on_zero._grid[0]
    assert -1 + 2 * (grid[1001] - step) > 0  # the rounding artefact the old decision used
    assert on_zero.interval.low <= 0.0 <= on_zero.interval.high
    assert not on_zero.excludes(0.0) and not on_zero.done(threshold=0.0)
    one_step_up = ConfidenceSequence(-1, 1)  # its twin, one grid step further: 0 is excluded
    _state_with_low_bound_on_zero(one_step_up, 1002)
    assert one_step_up.excludes(0.0) and one_step_up.done(threshold=0.0)
    assert one_step_up.interval.low > 0


def test_replay_stops_where_the_sequence_does():
    rng = np.random.default_rng(7)
    a = (rng.uniform(size=2000) < 0.8).astype(float)
    b = (rng.uniform(size=2000) < 0.5).astype(float)
    res = replay(a, baseline=b, threshold=0.0, batch=10)
    cs = ConfidenceSequence(-1, 1)
    for start in range(0, 2000, 10):
        if cs.update(a[start : start + 10] - b[start : start + 10]).done(threshold=0.0):
            break
    assert (
        res.stopped and res.n_used == cs.n and res.ci == cs.interval and res.bounds == (-1.0, 1.0)
    )
    assert "excludes 0" in res.reason
    never = replay(a, width=1e-4)
    assert not never.stopped and never.n_used == 2000 and "not decided" in never.reason
