"""update.step.targets: a train step that ignores the targets it is given is self-supervised
by design or reads the wrong tensor; the doctor warns, and the controls that fit the targets
skip rather than fail when the copy does not fit them. A step that ignores them but fetches
the labels another way still fits them, and the shuffle control finds that path
(tests/doctor_controls/test_shuffle.py)."""

import pytest
import torch
from torch import nn

from tests.doctor.helpers import contrastive_step, diagnose, mlp


def encoder():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 32))


def test_a_self_supervised_step_is_not_broken_at_the_controls():
    model = encoder()
    layers = ("data", "model", "update", "overfit", "shuffle")
    report = diagnose(model, step=contrastive_step, layers=layers)
    assert report["update.step.targets"].status == "warn"
    for control in ("overfit.batch", "shuffle.pvalue"):
        assert report[control].status == "skip"
        assert "does not use the targets" in report[control].message
    assert report["shuffle.labels"].status == "pass"
    assert report.ok, report.failed_layer


def pseudo_label_step(model, batch, optimizer, loss_fn):
    """The bug: the loss is computed against the model's own predictions, not the labels."""
    x, y = batch
    out = model(x)
    loss = loss_fn(out, out.argmax(dim=1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss


@pytest.mark.check("doctor.update.step.targets", planted=True)
def test_a_supervised_step_that_reads_the_wrong_tensor_is_named():
    report = diagnose(mlp(), step=pseudo_label_step, layers=("model", "update"))
    assert report["update.step.targets"].status == "warn"


def labelled_step(model, batch, optimizer, loss_fn):
    x, y = batch
    loss = loss_fn(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss


@pytest.mark.check("doctor.update.step.targets", healthy=True)
def test_a_step_that_uses_the_targets_passes_and_the_standard_step_is_not_probed():
    report = diagnose(mlp(), step=labelled_step, layers=("model", "update"))
    assert report["update.step.targets"].status == "pass"
    assert diagnose(mlp(), layers=("update",))["update.step.targets"].status == "skip"
