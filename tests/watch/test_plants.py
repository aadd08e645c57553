"""Each alert kind planted mid-run in a real training loop: the alert must come within a few
steps and name the culprit, and nothing may fire before the plant. Healthy runs (MLP, CNN,
tiny transformer, each with warm-up and decay) must raise no alert at all."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tests.watch._training import CNN, MLP, digits, healthy_runs, train, warmup_decay

PLANT = 40


def only(alerts, kind):
    assert alerts, "no alert was raised"
    assert {a.check for a in alerts} == {kind}, [(a.check, a.step, a.message) for a in alerts]
    assert all(a.step >= PLANT for a in alerts), "an alert fired before the bug was planted"
    return alerts[0]


def mlp_sgd(lr=0.1, **kw):
    torch.manual_seed(0)
    model = MLP()
    return model, torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, **kw)


@pytest.mark.check("watch.eval_mode", healthy=True, cases=["cnn"])
@pytest.mark.check(
    "watch.grad_explode",
    "watch.grad_vanish",
    "watch.no_step",
    "watch.no_trend",
    "watch.nonfinite",
    "watch.spike",
    healthy=True,
    cases=["mlp"],
)
@pytest.mark.parametrize("name", ["mlp", "cnn", "transformer"])
def test_healthy_runs_raise_no_alert(name):
    for run_name, model, opt, sched, steps in healthy_runs():
        if run_name == name:
            w = train(model, opt, steps=steps, scheduler=sched, every=1)
            assert w.alerts == []
            assert w.observed == steps and w.samples == steps
            statuses = {f.check: f.status for f in w.findings}
            assert statuses["no_trend"] == statuses["spike"] == statuses["nonfinite"] == "pass"


@pytest.mark.check("watch.nonfinite", planted=True)
def test_nonfinite_names_the_parameter_where_nan_started():
    model, opt = mlp_sgd()

    def plant(step, m, o, x, y):
        if step == PLANT:
            with torch.no_grad():
                m.fc2.weight[3, 5] = float("nan")
        return x, y

    alert = only(train(model, opt, steps=PLANT + 5, plant=plant, every=1).alerts, "nonfinite")
    assert alert.step == PLANT and alert.subject == "fc2.weight" and alert.status == "fail"
    assert "fc2.weight" in alert.message and "NaN" in alert.message


def test_nonfinite_from_the_data_names_the_loss():
    model, opt = mlp_sgd()

    def plant(step, m, o, x, y):
        if step == PLANT:
            x = x.clone()
            x[0, 0] = float("inf")
        return x, y

    alert = only(train(model, opt, steps=PLANT + 5, plant=plant, every=1).alerts, "nonfinite")
    assert alert.step == PLANT and alert.subject == "loss"


def test_nonfinite_is_caught_within_every_steps_when_sampling():
    model, opt = mlp_sgd()

    def plant(step, m, o, x, y):
        if step == PLANT + 2:
            with torch.no_grad():
                m.fc1.bias[0] = float("inf")
        return x, y

    alert = only(train(model, opt, steps=PLANT + 12, plant=plant, every=5).alerts, "nonfinite")
    assert PLANT + 2 <= alert.step <= PLANT + 5
    assert alert.evidence["nonfinite_loss_steps"][0] == PLANT + 2


@pytest.mark.check("watch.frozen_moved", planted=True)
def test_frozen_moved_when_a_declared_frozen_layer_is_unfrozen_by_mistake():
    model, opt = mlp_sgd()
    model.fc1.requires_grad_(False)

    def plant(step, m, o, x, y):
        if step == PLANT:
            m.fc1.requires_grad_(True)  # e.g. an "unfreeze" callback firing too early
        return x, y

    w = train(model, opt, steps=PLANT + 5, plant=plant, every=1, expect_frozen=[model.fc1])
    alert = only(w.alerts, "frozen_moved")
    assert alert.step == PLANT and alert.subject == "fc1.weight" and alert.status == "fail"
    assert set(alert.evidence["moved"]) == {"fc1.weight", "fc1.bias"}


def frozen_after_training(set_to_none):
    """fc1 trained for a while under SGD with momentum, then frozen by requires_grad=False."""
    model, opt = mlp_sgd()
    x, y = digits()
    for _ in range(3):
        opt.zero_grad(set_to_none=set_to_none)
        F.cross_entropy(model(x[:32]), y[:32]).backward()
        opt.step()
    model.fc1.requires_grad_(False)  # frozen by requires_grad alone, not declared
    return model, opt


def test_frozen_moved_warns_when_the_optimizer_moves_a_requires_grad_false_parameter():
    # a loop that zeroes gradients rather than dropping them leaves the frozen layer a zero
    # gradient, and SGD's momentum goes on moving it
    model, opt = frozen_after_training(set_to_none=False)
    w = train(model, opt, steps=5, every=1, set_to_none=False)
    alert = w.alerts[0]
    assert [a.check for a in w.alerts] == ["frozen_moved"]
    assert alert.step == 0 and alert.subject == "fc1.weight" and alert.status == "warn"
    assert "requires_grad=False" in alert.message


def test_frozen_moved_leaves_a_parameter_the_optimizer_skips():
    model, opt = frozen_after_training(set_to_none=True)  # no gradient: the optimizer skips it
    assert train(model, opt, steps=5, every=1).alerts == []


def frozen_backbone_cnn():
    torch.manual_seed(0)
    model = CNN()
    model.features.requires_grad_(False)
    model.features.eval()  # frozen means frozen BatchNorm statistics too
    opt = torch.optim.Adam(model.head.parameters(), lr=3e-3)
    return model, opt


def test_frozen_moved_catches_batchnorm_statistics_of_a_frozen_backbone():
    model, opt = frozen_backbone_cnn()

    def plant(step, m, o, x, y):
        if step == PLANT:
            # the usual bug: model.train() after an eval puts frozen BN back in train mode
            m.train()
        return x, y

    w = train(model, opt, steps=PLANT + 5, plant=plant, every=1, expect_frozen="features")
    alert = only(w.alerts, "frozen_moved")
    assert alert.step == PLANT and alert.subject == "features.1.running_mean"


@pytest.mark.check("watch.frozen_moved", healthy=True)
def test_frozen_backbone_kept_frozen_raises_nothing():
    model, opt = frozen_backbone_cnn()
    w = train(model, opt, steps=PLANT + 5, every=1, expect_frozen="features")
    assert w.alerts == []
    assert {f.check: f.status for f in w.findings}["frozen_moved"] == "pass"


@pytest.mark.check("watch.stale", planted=True)
def test_stale_names_a_parameter_dropped_from_the_optimizer():
    model, opt = mlp_sgd()

    def plant(step, m, o, x, y):
        if step == PLANT:  # e.g. an optimizer rebuilt from a filtered parameter list
            group = o.param_groups[0]
            group["params"] = [p for p in group["params"] if p is not m.head.weight]
        return x, y

    w = train(model, opt, steps=PLANT + 15, plant=plant, every=1)
    alert = only(w.alerts, "stale")
    assert alert.subject == "head.weight" and alert.evidence["stale"] == ["head.weight"]
    assert PLANT + 9 <= alert.step <= PLANT + 11  # patience: 10 optimizer steps


@pytest.mark.check("watch.stale", healthy=True)
def test_steps_skipped_by_a_grad_scaler_are_not_stale():
    model, opt = mlp_sgd()
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16, growth_interval=1000)
    overflow = range(PLANT, PLANT + 15)  # more skipped steps in a row than stale's patience

    def plant(step, m, o, x, y):
        if step == PLANT:  # gradients overflow, as fp16 gradients do, for 15 steps
            m.fc2.weight.register_hook(lambda g: g * float("inf") if plant.step in overflow else g)
        plant.step = step
        return x, y

    w = train(model, opt, steps=PLANT + 20, plant=plant, scaler=scaler, every=1)
    assert scaler.get_scale() == 2.0 ** (16 - 15)  # the scaler really skipped those 15 steps
    assert w.alerts == []


def test_no_trend_when_labels_turn_to_noise_mid_run():
    model, opt = mlp_sgd(lr=0.05)
    gen = torch.Generator().manual_seed(1)

    def plant(step, m, o, x, y):
        if step >= 100:  # a data bug: labels no longer belong to their images
            y = torch.randint(0, 10, y.shape, generator=gen)
        return x, y

    w = train(
        model, opt, steps=100 + 60, plant=plant, every=1, options={"no_trend": {"window": 40}}
    )
    alerts = [a for a in w.alerts if a.check == "no_trend"]
    assert alerts and all(a.step >= 100 for a in w.alerts)
    assert alerts[0].step <= 100 + 40
    assert alerts[0].status == "warn" and alerts[0].evidence["pvalue_net_decrease"] >= 0.01


@pytest.mark.check("watch.no_trend", planted=True)
def test_no_trend_when_the_model_never_learns():
    model, opt = mlp_sgd(lr=1e-7)  # an lr typo: nothing moves enough to matter
    w = train(model, opt, steps=100, every=1, options={"no_trend": {"window": 40}})
    (alert,) = [a for a in w.alerts if a.check == "no_trend"]
    # judged once the run's first window and the latest one are apart, by both tests
    assert alert.step == 79 and alert.evidence["pvalue_net_decrease"] >= 0.01
    assert alert.evidence["pvalue_trend"] >= 0.01 and "not decreased significantly" in alert.message


def test_no_trend_stays_quiet_when_a_run_learns_then_plateaus():
    model, opt = mlp_sgd(lr=0.05)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 if s < 100 else 0.0)
    w = train(
        model,
        opt,
        steps=200,
        scheduler=sched,
        every=1,
        options={"no_trend": {"window": 40}},
        invariants=["no_trend"],
    )
    assert w.alerts == []


@pytest.mark.check("watch.spike", planted=True)
def test_spike_names_the_step_of_a_corrupted_batch():
    torch.manual_seed(0)
    model = MLP()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    late = 100  # once the model has learned, a mislabelled batch stands far out

    def plant(step, m, o, x, y):
        return x, ((y + 1) % 10 if step == late else y)

    w = train(model, opt, steps=late + 3, plant=plant, every=1)
    spikes = [a for a in w.alerts if a.check == "spike"]
    assert [a.step for a in spikes] == [late] and spikes[0].evidence["spike_step"] == late
    assert spikes[0].value > 5 * spikes[0].evidence["median"]
    # its consequence, a burst of gradient, may be reported too; nothing else, and nothing before
    assert {a.check for a in w.alerts} <= {"spike", "grad_explode"}
    assert all(a.step == late for a in w.alerts)


@pytest.mark.check("watch.grad_explode", planted=True)
def test_grad_explode_names_the_parameter_whose_gradient_blew_up():
    model, opt = mlp_sgd(lr=0.05)
    handles = []

    def plant(step, m, o, x, y):
        if step == PLANT:
            handles.append(m.fc2.weight.register_hook(lambda g: g * 1e4))
        if step == PLANT + 1:
            handles.pop().remove()
        return x, y

    w = train(
        model,
        opt,
        steps=PLANT + 3,
        plant=plant,
        every=1,
        invariants=["grad_explode", "grad_vanish", "stale"],
    )
    alert = only(w.alerts, "grad_explode")
    assert alert.step == PLANT and alert.evidence["culprit"] == "fc2.weight"


@pytest.mark.check("watch.grad_vanish", planted=True)
def test_grad_vanish_names_parameters_cut_off_by_a_detach():
    model, opt = mlp_sgd(lr=0.05)

    def plant(step, m, o, x, y):
        m.detach_at_fc2 = step >= PLANT
        return x, y

    w = train(model, opt, steps=PLANT + 5, plant=plant, every=1)
    alert = only(w.alerts, "grad_vanish")
    # reported once the gap lasts 3 samples after PLANT clean ones (one sample without a
    # gradient may be conditional computation; see grad_vanish)
    assert alert.step == PLANT + 2 and alert.subject == "fc1.weight"
    assert alert.evidence["vanished"] == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert f"no gradient for 3 samples (since step {PLANT})" in alert.message


@pytest.mark.check("watch.lr_zero", planted=True)
def test_lr_zero_names_the_group_whose_rate_dropped_to_zero():
    torch.manual_seed(0)
    model = MLP()
    body = [p for n, p in model.named_parameters() if not n.startswith("head")]
    opt = torch.optim.Adam([{"params": body}, {"params": model.head.parameters()}], lr=3e-3)

    def plant(step, m, o, x, y):
        if step == PLANT:
            o.param_groups[1]["lr"] = 0.0
        return x, y

    w = train(model, opt, steps=PLANT + 8, plant=plant, every=1)
    alert = only(w.alerts, "lr_zero")
    assert alert.step == PLANT + 4 and alert.subject == "param group 1"
    assert alert.evidence["params"] == ["head.weight", "head.bias"]


@pytest.mark.check("watch.lr_zero", healthy=True)
def test_warmup_from_zero_is_not_lr_zero():
    model, opt = mlp_sgd()
    sched = warmup_decay(opt, warmup=10, total=30)
    w = train(model, opt, steps=30, scheduler=sched, every=1, invariants=["lr_zero"])
    assert w.alerts == []
