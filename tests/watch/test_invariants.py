"""Invariants judged on hand-made samples: the registry contract and the decision rules that
are hard to reach with a real run (rank ties, tolerances, thresholds, trend shapes)."""

from __future__ import annotations

import numpy as np
import pytest

from labcoat.errors import InputError
from labcoat.findings import CheckRegistry
from labcoat.watch import INVARIANTS, CrossRank, Invariant, Sample, WatchContext
from labcoat.watch.invariants import Desync, NoTrend, Spike, Straggler

CONTEXT = WatchContext(
    param_names=("w",), frozen={}, group_params=(("w",),), frozen_baseline={}, world_size=4
)


def started(inv: Invariant) -> Invariant:
    inv.setup(CONTEXT)
    return inv


def cross(values, times=None, names=("a.weight", "b.bias")):
    sums = np.asarray(values, dtype=float)  # [rank, tensor] -> use as both L1 and L2
    return CrossRank(
        ranks=tuple(range(len(sums))),
        names=names,
        checksums=np.stack([sums, sums], axis=-1),
        step_times=np.asarray(times if times is not None else [0.01] * len(sums)),
    )


def judge(inv, **sample):
    inv.update(Sample(step=sample.pop("step", 10), time=0.0, **sample))
    return inv.compute()


def test_every_builtin_kind_is_registered_once_with_its_declaration():
    # registration order follows import order, which other tests may change: compare as sets
    assert sorted(INVARIANTS.ids()) == sorted(
        (
            "nonfinite",
            "frozen_moved",
            "stale",
            "no_trend",
            "spike",
            "grad_explode",
            "grad_vanish",
            "lr_zero",
            "desync",
            "straggler",
            "no_step",
            "repeat_batch",
            "eval_mode",
            "resume_jump",
        )
    )
    assert len(set(INVARIANTS.ids())) == len(INVARIANTS.ids())
    for check in INVARIANTS:
        assert check.falsifies and check.predicts and check.run.needs
        assert check.severity == check.run.severity and check.layer == "watch"


def test_registry_refuses_duplicates_incomplete_declarations_and_unknown_fields():
    reg = CheckRegistry("watch", ["watch"])

    class Good(Invariant):
        kind, falsifies, predicts = "good", "f", "p"
        needs = frozenset({"losses"})

        def update(self, sample):
            pass

        def compute(self):
            return []

    reg.register(Good)
    with pytest.raises(ValueError, match="already registered"):
        reg.register(Good)
    with pytest.raises(ValueError, match="non-empty 'predicts'"):
        reg.register(type("NoPredicts", (Good,), {"kind": "x", "predicts": ""}))
    with pytest.raises(ValueError, match="unknown sample fields"):
        reg.register(type("Odd", (Good,), {"kind": "y", "needs": frozenset({"weights"})}))

    class Half(Invariant):
        kind, falsifies, predicts = "half", "f", "p"

        def update(self, sample):
            pass

    with pytest.raises(ValueError, match="must implement compute"):
        reg.register(Half)


def test_declared_state_resets_to_its_defaults():
    inv = started(Spike())
    judge(inv, losses=[(i, 1.0) for i in range(30)])
    assert len(inv.state()["history"]) == 30
    inv.reset()
    assert len(inv.history) == 0 and inv.spikes == []


@pytest.mark.check("watch.desync", planted=True)
def test_desync_names_the_minority_rank_and_the_first_differing_tensor():
    (v,) = judge(
        started(Desync()), cross_rank=cross([[1.0, 2.0], [1.0, 2.0], [1.0, 2.0], [1.0, 2.5]])
    )
    assert v.subject == "b.bias" and v.evidence["culprit_ranks"] == [3]
    assert v.evidence["majority_ranks"] == [0, 1, 2]
    assert "rank 3 disagrees with ranks 0, 1, 2" in v.message


def test_desync_without_a_majority_lists_every_rank():
    (v,) = judge(
        started(Desync()), cross_rank=cross([[1.0, 2.0], [1.0, 2.0], [1.5, 2.0], [1.5, 2.0]])
    )
    assert v.subject == "a.weight" and v.evidence["culprit_ranks"] == [0, 1, 2, 3]
    assert "no majority" in v.message


@pytest.mark.check("watch.desync", healthy=True)
def test_desync_tolerates_rounding_but_not_drift():
    inv = started(Desync(rtol=1e-6))
    assert judge(inv, cross_rank=cross([[1.0, 2.0], [1.0 + 1e-9, 2.0]])) == []
    assert judge(inv, cross_rank=cross([[1.0, 2.0], [1.0 + 1e-4, 2.0]]))


@pytest.mark.check("watch.straggler", planted=True, cases=["times0-3"])
@pytest.mark.check("watch.straggler", healthy=True, cases=["times1-None"])
@pytest.mark.parametrize(
    "times, slow",
    [
        ([0.010, 0.011, 0.009, 0.050], 3),  # 5x the others
        ([0.010, 0.012, 0.009, 0.015], None),  # within 2x
        ([0.0001, 0.0001, 0.0001, 0.0009], None),  # 9x, but under a millisecond apart
        ([0.010, float("nan"), 0.010, 0.050], None),  # a rank without enough timed steps
    ],
)
def test_straggler_needs_a_large_ratio_and_a_real_gap(times, slow):
    found = judge(started(Straggler()), cross_rank=cross([[1.0, 1.0]] * 4, times=times))
    assert [v.evidence["straggler_rank"] for v in found] == ([] if slow is None else [slow])


def losses(values, start=0):
    return [(start + i, float(v)) for i, v in enumerate(values)]


def trend_verdict(series, window=50):
    inv = started(NoTrend(window=window))
    out = []
    for i in range(0, len(series), 10):
        out = judge(inv, step=i + 9, losses=losses(series[i : i + 10], i))
    return out


def test_no_trend_on_synthetic_curves():
    rng = np.random.default_rng(0)
    noise = rng.normal(0, 0.1, 300)
    t = np.arange(300)
    assert trend_verdict(2.0 + noise[:100]), "a flat curve is not learning"
    assert not trend_verdict(2.0 * np.exp(-t[:100] / 40) + noise[:100]), "a falling curve is"
    plateau = np.where(t < 100, 2.0 - 0.015 * t, 0.5) + noise
    assert not trend_verdict(plateau), "learned, then converged: still below where it started"
    relapse = np.where(t < 150, 2.0 * np.exp(-t / 30), 2.0) + noise
    (v,) = trend_verdict(relapse)
    first, last = v.evidence["window_steps"]
    assert v.evidence["pvalue_net_decrease"] > 0.01 and last - first == 49
    assert last > 150 + 50 and 299 - last < 25  # the relapsed window, tested every half window


def test_spike_uses_a_linear_scale_when_losses_can_be_negative():
    inv = started(Spike())
    rng = np.random.default_rng(0)
    judge(inv, losses=losses(-3.0 + rng.normal(0, 0.05, 40)))
    (v,) = judge(inv, step=41, losses=[(40, -3.0), (41, 4.0)])
    assert v.evidence["scale"] == "linear" and v.evidence["spike_step"] == 41


@pytest.mark.parametrize(
    "options, match",
    [
        ({"window": 3}, "`no_trend.window` must be an int >= 10; got 3"),
        ({"alpha": 0.0}, "must be a finite number > 0 and <= 0.5"),
        ({"alpha": True}, "got True"),
    ],
)
def test_options_are_validated_with_the_constraint_in_the_message(options, match):
    with pytest.raises(InputError, match=match):
        NoTrend(**options)


def test_the_fast_mann_whitney_agrees_with_scipy():
    from scipy import stats

    from labcoat.watch.invariants.no_trend import mann_whitney_less

    rng = np.random.default_rng(0)
    for shift in (0.0, -0.2, 0.3):
        x, y = rng.normal(shift, 1, 100), rng.normal(0, 1, 100)
        x[:5] = y[:5]  # ties across the samples
        want = stats.mannwhitneyu(x, y, alternative="less").pvalue
        assert mann_whitney_less(x, y) == pytest.approx(want, rel=1e-9)
    flat = np.ones(50)
    assert mann_whitney_less(flat, flat) == pytest.approx(
        stats.mannwhitneyu(flat, flat, alternative="less").pvalue
    )
