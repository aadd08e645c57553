"""The watch itself: it only observes, cleans up, samples, batches transfers, validates input
and reports to the ledger and the events file."""

from __future__ import annotations

import json
import subprocess

import pytest
import torch

import labcoat
from labcoat.errors import InputError
from labcoat.watch import Invariant, read_alerts
from tests.watch._training import MLP, train


def mlp_adam(seed=0):
    torch.manual_seed(seed)
    model = MLP()
    return model, torch.optim.Adam(model.parameters(), lr=3e-3)


def test_watching_changes_nothing_the_model_computes():
    model_a, opt_a = mlp_adam()
    model_b, opt_b = mlp_adam()
    train(model_a, opt_a, steps=30, every=1)
    train(model_b, opt_b, steps=30, every=1, invariants=[])  # same loop, nothing checked
    for (name, a), b in zip(model_a.named_parameters(), model_b.parameters()):
        assert torch.equal(a, b), name
    for sa, sb in zip(opt_a.state.values(), opt_b.state.values()):
        assert all(torch.equal(sa[k], sb[k]) for k in sa)


def test_hooks_are_removed_on_exit_even_after_an_error():
    model, opt = mlp_adam()
    before = (len(opt._optimizer_step_pre_hooks), len(opt._optimizer_step_post_hooks))
    with pytest.raises(RuntimeError, match="user bug"):
        with labcoat.watch(model, opt):
            assert len(opt._optimizer_step_pre_hooks) == before[0] + 1
            raise RuntimeError("user bug")
    assert (len(opt._optimizer_step_pre_hooks), len(opt._optimizer_step_post_hooks)) == before
    assert not model._forward_pre_hooks and not model._forward_hooks


def test_sampled_steps_move_statistics_to_the_host_once(monkeypatch):
    # an accelerator's tensors are read in one transfer per sampled step: the CPU stands in for
    # one here, by no longer counting as a device whose tensors are read at once
    from labcoat.watch import probes

    monkeypatch.setattr(probes, "READ_CPU_AT_ONCE", False)
    torch.manual_seed(0)
    model = MLP()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)  # Adam itself calls .item() on its step count
    calls = {"tolist": 0, "item": 0}
    real_tolist, real_item = torch.Tensor.tolist, torch.Tensor.item

    def counting_tolist(self):
        calls["tolist"] += 1
        return real_tolist(self)

    def counting_item(self):
        calls["item"] += 1
        return real_item(self)

    monkeypatch.setattr(torch.Tensor, "tolist", counting_tolist)
    monkeypatch.setattr(torch.Tensor, "item", counting_item)
    w = train(model, opt, steps=20, every=5)
    assert w.samples == 4  # steps 0, 5, 10, 15
    assert calls == {"tolist": 4, "item": 0}


def test_cpu_tensors_read_at_once_give_the_samples_a_transfer_gives(monkeypatch):
    from labcoat.watch import probes

    def samples(read_at_once):
        monkeypatch.setattr(probes, "READ_CPU_AT_ONCE", read_at_once)
        seen = []

        class Spy(Invariant):
            kind, falsifies, predicts = "spy", "nothing", "nothing"
            needs = frozenset({"losses", "grad_norms", "param_norms"})

            def update(self, sample):
                seen.append((sample.losses, sample.grad_norms, sample.param_norms))

            def compute(self):
                return []

        model, opt = mlp_adam()
        train(model, opt, steps=9, every=3, invariants=[Spy()])
        return seen

    on_cpu = samples(True)
    assert len(on_cpu) == 3 and len(on_cpu[1][0]) == 3
    assert on_cpu == samples(False)


def test_every_n_samples_tensors_but_sees_every_loss():
    model, opt = mlp_adam()
    seen = []

    class Spy(Invariant):
        kind, falsifies, predicts = "spy", "nothing", "nothing"
        needs = frozenset({"losses", "grad_norms"})

        def update(self, sample):
            seen.append((sample.step, [s for s, _ in sample.losses], sample.grad_norms is not None))

        def compute(self):
            return []

    train(model, opt, steps=12, every=4, invariants=[Spy()])
    assert seen == [(0, [0], True), (4, [1, 2, 3, 4], True), (8, [5, 6, 7, 8], True)]


def test_closure_optimizers_read_gradients_after_the_closure_ran():
    torch.manual_seed(0)
    model = MLP()
    opt = torch.optim.LBFGS(model.parameters(), lr=0.1, max_iter=2)
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    got = []

    class Spy(Invariant):
        kind, falsifies, predicts = "spy", "nothing", "nothing"
        needs = frozenset({"grad_norms"})

        def update(self, sample):
            got.append(sample.grad_norms)

        def compute(self):
            return []

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        return loss

    with labcoat.watch(model, opt, every=1, invariants=[Spy()]) as w:
        for step in range(3):
            w.observe(step=step, loss=opt.step(closure))
    assert all(g and set(g) == {n for n, _ in model.named_parameters()} for g in got)


def test_ledger_receives_the_findings_once_with_source_watch():
    class FakeLedger:
        def __init__(self):
            self.calls = []

        def record_findings(self, findings, source):
            self.calls.append((list(findings), source))

    ledger = FakeLedger()
    model, opt = mlp_adam()

    def plant(step, m, o, x, y):
        if step == 5:
            o.param_groups[0]["lr"] = 0.0
        return x, y

    w = train(model, opt, steps=12, plant=plant, every=1, ledger=ledger)
    ((findings, source),) = ledger.calls
    assert source == "watch"
    by_check = {f.check: f for f in findings}
    assert by_check["lr_zero"].status == "fail" and by_check["lr_zero"].step == 9
    assert by_check["lr_zero"].layer == "watch" and by_check["lr_zero"].predicts
    assert by_check["nonfinite"].status == "pass"
    assert by_check["desync"].status == "skip" and "distributed" in by_check["desync"].message
    assert [a.to_finding() for a in w.alerts] == [f for f in findings if f.status == "fail"]


def test_events_are_json_lines_that_read_back_as_alerts(tmp_path):
    model, opt = mlp_adam()

    def plant(step, m, o, x, y):
        if step == 5:
            with torch.no_grad():
                m.head.bias[0] = float("nan")
        return x, y

    path = tmp_path / "run" / "events.jsonl"
    w = train(model, opt, steps=8, plant=plant, every=1, events=path)
    lines = [line for line in path.read_text().splitlines() if '"series"' not in line]
    assert len(lines) == len(w.alerts) == 1
    event = json.loads(lines[0])
    assert {"step", "rank", "time", "kind", "value", "message"} <= set(event)
    assert event["value"] == "nan" and event["kind"] == "nonfinite"  # strict JSON
    assert [a.to_event() for a in read_alerts([path])] == [event]
    assert read_alerts([path])[0].subject == "head.bias"


def test_labcoat_watch_is_both_the_function_and_the_package(subprocess_env, python):
    # in a fresh interpreter, whichever is touched first, labcoat.watch(...) and
    # labcoat.watch.<name> must both keep working
    code = (
        "import torch, labcoat\n"
        "m = torch.nn.Linear(2, 2); o = torch.optim.SGD(m.parameters(), lr=0.1)\n"
        "w = labcoat.watch(m, o)\n"
        "import labcoat.watch.alerts\n"
        "assert labcoat.watch.Invariant and labcoat.watch(m, o).every == w.every\n"
        "print(type(w).__name__)\n"
    )
    out = subprocess.run([python, "-c", code], env=subprocess_env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Watcher"


def test_a_data_parallel_wrapper_is_unwrapped_so_names_are_the_users():
    model, opt = mlp_adam()
    w = labcoat.watch(torch.nn.DataParallel(model), opt).start()
    try:
        assert w.context.param_names[0] == "fc1.weight"
    finally:
        w.close()


def test_findings_say_which_invariants_held():
    model, opt = mlp_adam()
    w = train(model, opt, steps=10, every=2)
    passed = {f.check for f in w.findings if f.status == "pass"}
    assert passed == {
        "nonfinite",
        "stale",
        "no_trend",
        "spike",
        "grad_explode",
        "grad_vanish",
        "lr_zero",
        "no_step",
    }
    skipped = {f.check: f.message for f in w.findings if f.status == "skip"}
    assert "observe(..., batch=...)" in skipped["repeat_batch"]
    assert all("10 steps (5 sampled)" in f.message for f in w.findings if f.status == "pass")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"every": 0}, "`every` must be an int >= 1; got 0"),
        ({"sync_every": 2.5}, "`sync_every` must be an int >= 1; got 2.5"),
        ({"ledger": object()}, "record_findings"),
        ({"expect_frozen": ["fc9"]}, "selects no parameter, buffer or submodule.*'fc1"),
        ({"expect_frozen": ["backbone.*"]}, "selects no parameter.*glob patterns such as"),
        ({"expect_frozen": [torch.nn.Linear(2, 2)]}, "not part of the model"),
        ({"expect_frozen": [torch.zeros(3)]}, "not a parameter or buffer of the model"),
        ({"invariants": ["spikes"]}, "`invariants` must be one of .*'nonfinite'.*; got 'spikes'"),
        ({"options": {"spike": {"z": -1.0}}}, "`spike.z` must be a finite number > 0"),
        ({"options": {"spike": {"zz": 1.0}}}, "got 'zz'. 'spike' has no such option"),
        ({"on_alert": [1]}, "`on_alert` must be callable"),
    ],
)
def test_bad_arguments_say_what_to_pass(kwargs, match):
    model, opt = mlp_adam()
    with pytest.raises(InputError, match=match):
        labcoat.watch(model, opt, **kwargs)


def test_bad_model_optimizer_and_observe_calls():
    model, opt = mlp_adam()
    with pytest.raises(InputError, match="`model` must be a torch.nn.Module"):
        labcoat.watch("model", opt)
    with pytest.raises(InputError, match="`optimizer` must be a torch.optim.Optimizer"):
        labcoat.watch(model, [opt])
    w = labcoat.watch(model, opt)
    with pytest.raises(InputError, match="outside the watch"):
        w.observe(step=0, loss=1.0)
    with w:
        with pytest.raises(InputError, match="`step` must be an int"):
            w.observe(step="3", loss=1.0)
        with pytest.raises(InputError, match="`loss` must be a scalar"):
            w.observe(step=0, loss=torch.ones(4))


def test_on_alert_callbacks_get_each_new_alert_once():
    model, opt = mlp_adam()
    got = []

    def plant(step, m, o, x, y):
        if step == 3:
            with torch.no_grad():
                m.fc1.weight[0, 0] = float("inf")
        return x, y

    w = train(model, opt, steps=10, plant=plant, every=1, on_alert=got.append)
    assert got == w.alerts and len(got) == 1  # a persisting NaN is one alert, not one per step


def test_a_broken_invariant_is_turned_off_with_a_warning_not_a_crash():
    class Broken(Invariant):
        kind, falsifies, predicts = "broken", "nothing", "nothing"
        needs = frozenset({"losses"})

        def update(self, sample):
            raise ZeroDivisionError("oops")

        def compute(self):
            return []

    model, opt = mlp_adam()
    with pytest.warns(RuntimeWarning, match="'broken' invariant raised ZeroDivisionError"):
        w = train(model, opt, steps=5, every=1, invariants=[Broken(), "nonfinite"])
    by_check = {f.check: f for f in w.findings}
    assert by_check["broken"].status == "skip" and "internal error" in by_check["broken"].message
    assert by_check["nonfinite"].status == "pass"


def test_replicated_tensors_can_be_narrowed_by_predicate_or_names():
    from labcoat.watch._resolve import select_replicated

    model = MLP()
    assert list(select_replicated(model, None)) == [n for n, _ in model.named_parameters()]
    assert list(select_replicated(model, lambda name, p: name.endswith("bias"))) == [
        "fc1.bias",
        "fc2.bias",
        "head.bias",
    ]
    assert list(select_replicated(model, ["head", model.fc1.weight])) == [
        "fc1.weight",
        "head.weight",
        "head.bias",
    ]
    assert list(select_replicated(model, "*.bias")) == ["fc1.bias", "fc2.bias", "head.bias"]


def test_real_ledger_stores_the_alerts_against_the_run(tmp_path):
    ledger = labcoat.Ledger(tmp_path / "notebook.db")
    model, opt = mlp_adam()

    def plant(step, m, o, x, y):
        if step == 5:
            o.param_groups[0]["lr"] = 0.0
        return x, y

    with ledger.run(config={"lr": 1e-3}) as run:
        train(model, opt, steps=12, plant=plant, every=1, ledger=ledger)
    failed = ledger.findings(run=run, source="watch", status="fail")
    assert [f.check for f in failed] == ["lr_zero"]
    assert ledger.verify()
