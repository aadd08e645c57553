"""The Lightning and Hugging Face callbacks.

The contract tests drive each callback exactly as its framework calls it (hook names and
arguments as documented), against a stand-in base class, so they run without either
framework installed. The end-to-end tests run a real Trainer and are skipped unless the
framework is importable (neither is a labcoat dependency).
"""

from __future__ import annotations

import importlib
import sys
import types
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F

from labcoat.errors import InputError
from tests.watch._training import MLP, digits, hf_train, lightning_fit

pytestmark = pytest.mark.slow  # whole Lightning and Hugging Face trainers: make test-all


def load_with_stub(monkeypatch, module_name, stub_modules):
    for name, attrs in stub_modules.items():
        monkeypatch.setitem(sys.modules, name, types.SimpleNamespace(**attrs))
    # recorded first, so teardown restores the entry as it was (usually: absent) and a later
    # import of the real framework does not reuse the module built on the stand-in
    monkeypatch.setitem(sys.modules, module_name, None)
    del sys.modules[module_name]
    return importlib.import_module(module_name)


def batches(n):
    x, y = digits()
    gen = torch.Generator().manual_seed(0)
    for _ in range(n):
        idx = torch.randint(0, len(x), (32,), generator=gen)
        yield x[idx], y[idx]


class AcceleratedOptimizerLike(torch.optim.Optimizer):
    """What accelerate hands callbacks: an Optimizer subclass wrapping the real one."""

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.param_groups = optimizer.param_groups
        self.defaults = optimizer.defaults
        self.state = optimizer.state

    def step(self, closure=None):
        return self.optimizer.step(closure)


def test_huggingface_callback_contract(monkeypatch):
    mod = load_with_stub(
        monkeypatch,
        "labcoat.watch.integrations.huggingface",
        {"transformers": {"TrainerCallback": object}},
    )
    torch.manual_seed(0)
    model = MLP()
    inner = torch.optim.SGD(model.parameters(), lr=0.1)
    cb = mod.LabcoatWatchCallback(every=1)
    args, control, state = SimpleNamespace(), SimpleNamespace(), SimpleNamespace(global_step=0)
    cb.on_train_begin(args, state, control, model=model, optimizer=AcceleratedOptimizerLike(inner))
    assert cb.watcher.optimizer is inner  # hooks sit on the real optimizer
    for i, (x, y) in enumerate(batches(30)):
        if i == 20:
            with torch.no_grad():
                model.fc2.bias[1] = float("nan")
        loss = F.cross_entropy(model(x), y)
        inner.zero_grad()
        loss.backward()
        inner.step()
        state.global_step += 1
        cb.on_step_end(args, state, control, model=model)
        cb.on_log(args, state, control, logs={"loss": loss.item(), "learning_rate": 0.1})
    cb.on_train_end(args, state, control)
    (alert,) = cb.alerts
    assert alert.check == "nonfinite" and alert.subject == "fc2.bias" and alert.step == 21
    assert not inner._optimizer_step_pre_hooks  # closed: hooks removed


def test_lightning_callback_contract(monkeypatch):
    stub = {"Callback": object}
    mod = load_with_stub(
        monkeypatch,
        "labcoat.watch.integrations.lightning",
        {"lightning": {}, "lightning.pytorch": {}, "lightning.pytorch.callbacks": stub},
    )
    torch.manual_seed(0)
    model = MLP()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    trainer = SimpleNamespace(optimizers=[opt], global_step=0)
    cb = mod.LabcoatWatch(every=1)
    cb.on_train_start(trainer, model)
    for batch_idx, (x, y) in enumerate(batches(30)):
        if batch_idx == 15:
            opt.param_groups[0]["lr"] = 0.0

        def closure():  # Lightning's automatic optimization runs the step inside step()
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            return loss

        loss = opt.step(closure)
        trainer.global_step += 1
        cb.on_train_batch_end(trainer, model, {"loss": loss}, (x, y), batch_idx)
    cb.on_train_end(trainer, model)
    (alert,) = cb.alerts
    assert {f.check: f.status for f in cb.watcher.findings}[
        "repeat_batch"
    ] == "pass"  # batches seen
    assert alert.check == "lr_zero" and alert.subject == "param group 0" and alert.step == 20
    with pytest.raises(InputError, match="optimizer_index=1"):
        mod.LabcoatWatch(optimizer_index=1).on_train_start(trainer, model)


def test_huggingface_trainer_end_to_end(tmp_path):
    transformers = pytest.importorskip("transformers")
    from labcoat.watch.integrations.huggingface import LabcoatWatchCallback

    cb = LabcoatWatchCallback(every=1)
    hf_train(transformers, cb, tmp_path, 40)
    assert cb.watcher.observed == 40 and cb.alerts == []


def test_lightning_trainer_end_to_end():
    pl = pytest.importorskip("lightning.pytorch")
    from labcoat.watch.integrations.lightning import LabcoatWatch

    cb = LabcoatWatch(every=1)
    lightning_fit(pl, cb, 40, shuffle=True)
    assert cb.watcher.observed == 40 and cb.alerts == []
