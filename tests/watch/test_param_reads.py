"""Parameter norms are read only where a version counter cannot answer (see
labcoat.watch.sampler): these tests plant what the cheaper reads could miss — a parameter that
stops moving under every kind of optimizer write, a NaN that starts between full reads, a NaN
that touches neither loss nor gradient — and check that the reads really are fewer."""

from __future__ import annotations

import pytest
import torch

from labcoat.watch.sampler import ALL_PARAMS_EVERY, ALL_PARAMS_STEPS
from tests.watch._training import MLP, train
from tests.watch.test_plants import PLANT, mlp_sgd, only


class DataSGD(torch.optim.Optimizer):
    """Plain SGD written the old way, through ``p.data``: no version counter ever moves."""

    def __init__(self, params, lr=0.1):
        super().__init__(params, {"lr": lr})

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.data.add_(p.grad.data, alpha=-group["lr"])


def drop_head_weight(step, m, o, x, y):
    if step == PLANT:  # e.g. an optimizer rebuilt from a filtered parameter list
        group = o.param_groups[0]
        group["params"] = [p for p in group["params"] if p is not m.head.weight]
    return x, y


@pytest.mark.parametrize(
    "every, steps, expected_full",
    [
        # every ALL_PARAMS_STEPS calls at every=1: as often per step as at the default
        (1, 2 * ALL_PARAMS_STEPS + 5, [0, ALL_PARAMS_STEPS, 2 * ALL_PARAMS_STEPS]),
        (10, 2 * ALL_PARAMS_STEPS + 5, [0, ALL_PARAMS_STEPS, 2 * ALL_PARAMS_STEPS]),
        # sparse sampling: every ALL_PARAMS_EVERY samples
        (25, 2 * 25 * ALL_PARAMS_EVERY + 5, [0, 25 * ALL_PARAMS_EVERY, 50 * ALL_PARAMS_EVERY]),
    ],
)
def test_counting_reads_every_parameter_only_at_full_reads(
    monkeypatch, every, steps, expected_full
):
    grad_reads: list[int] = []  # the step of each read of gradients
    param_reads: list[tuple[int, int]] = []  # (step, elements) of each read of parameters
    at = {"step": -1}
    real = torch._foreach_norm

    def counting(tensors, *args, **kwargs):
        if tensors[0].requires_grad:
            param_reads.append((at["step"], sum(t.numel() for t in tensors)))
        else:
            grad_reads.append(at["step"])
        return real(tensors, *args, **kwargs)

    def note_step(step, m, o, x, y):
        at["step"] = step
        return x, y

    model, opt = mlp_sgd()
    weights = sum(p.numel() for p in model.parameters())
    monkeypatch.setattr(torch, "_foreach_norm", counting)
    train(model, opt, steps=steps, every=every, plant=note_step, invariants=["stale", "nonfinite"])
    assert grad_reads == list(range(0, steps, every))  # at every sampled step
    # SGD moved every counter: nothing but the full reads reads a parameter
    assert param_reads == [(step, weights) for step in expected_full]


def test_stale_with_an_optimizer_that_writes_through_data_is_no_false_alarm():
    torch.manual_seed(0)
    model = MLP()
    w = train(model, DataSGD(model.parameters(), lr=0.05), steps=60, every=1)
    assert [a.check for a in w.alerts] == []


def test_stale_with_a_fused_optimizer_is_no_false_alarm():
    torch.manual_seed(0)
    model = MLP()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)  # counters stay put
    w = train(model, opt, steps=40, every=1)
    assert [a.check for a in w.alerts] == []


def test_stale_is_caught_when_the_optimizer_writes_through_data():
    torch.manual_seed(0)
    model = MLP()
    opt = DataSGD(model.parameters(), lr=0.05)
    w = train(model, opt, steps=PLANT + 15, plant=drop_head_weight, every=1)
    alert = only(w.alerts, "stale")
    assert alert.subject == "head.weight" and PLANT + 9 <= alert.step <= PLANT + 11


def test_stale_is_caught_at_every_few_steps():
    model, opt = mlp_sgd()
    w = train(model, opt, steps=PLANT + 40, plant=drop_head_weight, every=3)
    alert = only(w.alerts, "stale")
    # counted from the first sample whose read finds it standing still: patience plus up to
    # three sampling periods (the step it stopped in, the sample that saw it move last, the
    # first read)
    assert alert.subject == "head.weight" and PLANT + 9 <= alert.step <= PLANT + 10 + 3 * 3


def test_stale_is_caught_with_gradient_accumulation():
    model, opt = mlp_sgd()
    real_step = opt.step
    calls = {"n": 0}

    def every_other_call(*args, **kwargs):  # the loop's step() applies every second call
        calls["n"] += 1
        if calls["n"] % 2 == 0:
            return real_step(*args, **kwargs)
        return None

    opt.step = every_other_call
    w = train(model, opt, steps=PLANT + 30, plant=drop_head_weight, every=1)
    alert = only(w.alerts, "stale")
    assert alert.subject == "head.weight" and alert.evidence["steps_unchanged"] >= 10


def test_nonfinite_names_the_parameter_between_full_reads():
    model, opt = mlp_sgd()
    planted = PLANT + 3  # not a sample that reads every parameter anyway
    assert planted % ALL_PARAMS_EVERY

    def plant(step, m, o, x, y):
        if step == planted:
            with torch.no_grad():
                m.fc2.weight[3, 5] = float("nan")
        return x, y

    w = train(model, opt, steps=planted + 3, plant=plant, every=1)
    alert = only(w.alerts, "nonfinite")
    assert alert.step == planted and alert.subject == "fc2.weight"


def test_a_nan_that_touches_no_loss_or_gradient_is_found_at_the_next_full_read():
    torch.manual_seed(0)
    model = MLP()
    model.unused = torch.nn.Parameter(torch.zeros(3))  # never in the forward pass
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    planted = PLANT + 3

    def plant(step, m, o, x, y):
        if step == planted:
            with torch.no_grad():
                m.unused[0] = float("nan")
        return x, y

    w = train(model, opt, steps=planted + ALL_PARAMS_STEPS + 2, plant=plant, every=1)
    alert = only(w.alerts, "nonfinite")
    assert alert.subject == "unused" and planted < alert.step <= planted + ALL_PARAMS_STEPS
    assert len([a for a in w.alerts if a.check == "nonfinite"]) == 1  # one alert while it lasts


def test_stale_resumes_from_a_checkpoint_that_kept_norm_version_pairs():
    from labcoat.watch.invariants import Stale
    from labcoat.watch.sample import Sample, WatchContext

    stale = Stale(patience=3)
    stale.setup(
        WatchContext(param_names=("w",), frozen={}, group_params=(("w",),), frozen_baseline={})
    )
    stale.load_state_dict({"last": {"w": [1.5, 7]}, "unchanged": {}})  # (norm, version)
    for step in range(3):  # the same version and norm, with a gradient, step after step
        stale.update(
            Sample(
                step=step,
                time=0.0,
                applied_steps=1,
                grad_norms={"w": 0.1},
                param_norms={"w": 1.5},
                param_versions={"w": 7},
            )
        )
    assert [v.subject for v in stale.compute()] == ["w"]


def accumulate(every, k, plant=None, steps=PLANT + 60):
    """Gradient accumulation over ``k`` calls, watched every ``every`` observe() calls; with
    k=4 and every=10 no sampled observe() ever follows a step directly."""
    import torch.nn.functional as F

    import labcoat
    from tests.watch._training import digits

    model, opt = mlp_sgd(lr=0.05)
    x_all, y_all = digits()
    gen = torch.Generator().manual_seed(0)
    with labcoat.watch(model, opt, every=every) as w:
        for step in range(steps):
            idx = torch.randint(0, len(x_all), (16,), generator=gen)
            x = x_all[idx]
            if plant is not None:
                x = plant(step, model, opt, x)
            (F.cross_entropy(model(x), y_all[idx]) / k).backward()
            if (step + 1) % k == 0:
                opt.step()
                opt.zero_grad(set_to_none=True)
            w.observe(step=step, loss=F.cross_entropy(model(x), y_all[idx]).detach())
    return w


def test_accumulation_that_never_steps_on_a_sampled_call_still_reads_gradients(monkeypatch):
    from labcoat.watch.judge import Judge

    seen = []
    real = Judge.judge

    def spying(self, sample, sampled):
        if sampled:
            seen.append(sample.grad_norms is not None)
        return real(self, sample, sampled)

    monkeypatch.setattr(Judge, "judge", spying)
    w = accumulate(10, 4)
    assert w.alerts == []
    # each sampled call without a step before it hands the reads to the next step, whose
    # observe() is sampled too: half the samples carry gradients (none did before)
    assert seen.count(True) == seen.count(False) == 10


def test_a_gradient_explosion_under_accumulation_is_caught_at_every_10():
    def blow_up(step, m, o, x):  # one corrupted batch in the accumulation ending at step 151
        return x * 1e4 if step == 150 else x

    w = accumulate(10, 4, plant=blow_up, steps=170)
    explode = [a for a in w.alerts if a.check == "grad_explode"]
    assert [a.step for a in explode] == [151]
