"""The doctor's copies keep the gradients of frozen parameters, so that an optimizer that
still decays or pushes them (weight decay, momentum) is seen moving them."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from labcoat.doctor.copies import Blueprint
from tests.doctor.helpers import diagnose, digits, mlp

LAYERS = ("model", "update")


def _zero_to_zeros(model, batch, optimizer, loss_fn):
    x, y = batch
    optimizer.zero_grad(set_to_none=False)
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss


def _frozen_after_a_step(weight_decay: float):
    x, y = digits()
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, weight_decay=weight_decay)
    F.cross_entropy(model(x[:32]), y[:32]).backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=False)  # the frozen layer keeps a zero gradient
    for p in model[0].parameters():
        p.requires_grad = False
    return model, optimizer


def test_weight_decay_on_a_frozen_layer_with_a_stale_gradient_fails():
    model, optimizer = _frozen_after_a_step(weight_decay=0.01)
    report = diagnose(model, optimizer=optimizer, step=_zero_to_zeros, layers=LAYERS)
    finding = report["update.frozen.moved"]
    assert finding.status == "fail" and "0.weight" in finding.message


def test_same_freeze_without_weight_decay_passes():
    model, optimizer = _frozen_after_a_step(weight_decay=0.0)
    report = diagnose(model, optimizer=optimizer, step=_zero_to_zeros, layers=LAYERS)
    assert report["update.frozen.moved"].status == "pass"


def test_copies_keep_only_frozen_gradients():
    model, optimizer = _frozen_after_a_step(weight_decay=0.0)
    model[2].weight.grad = torch.ones_like(model[2].weight)  # a trainable one: not carried
    copy = Blueprint(model, optimizer).fresh().model
    assert copy[0].weight.grad is not None and not bool(copy[0].weight.grad.any())
    assert copy[2].weight.grad is None
