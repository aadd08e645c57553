"""update.mode.as_given: a model handed over in eval mode that the step never puts back."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tests.doctor.helpers import diagnose, mlp, standard_step

LAYERS = ("update",)
CHECK = "update.mode.as_given"


def dropout_net(eval_mode: bool = True) -> nn.Module:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 10))
    return model.eval() if eval_mode else model


#: the textbook step, which never calls model.train()
step_without_train = standard_step


def step_with_train(model, batch, optimizer, loss_fn):
    model.train()
    return standard_step(model, batch, optimizer, loss_fn)


def finding(model, step=None):
    return diagnose(model, step=step, layers=LAYERS)[CHECK]


def test_eval_mode_model_and_a_step_that_keeps_it_warn():
    found = finding(dropout_net(), step_without_train)
    assert found.status == "warn" and "your step trains it in that mode" in found.message
    assert found.evidence["mode_dependent"] == ["2 (Dropout)"]


@pytest.mark.check("doctor.update.mode.as_given", planted=True)
def test_eval_mode_model_without_a_step_warns():
    found = finding(dropout_net())
    assert found.status == "warn" and "given in eval mode" in found.message


@pytest.mark.check("doctor.update.mode.as_given", healthy=True)
def test_a_step_that_calls_train_passes():
    found = finding(dropout_net(), step_with_train)
    assert found.status == "pass" and "calls model.train()" in found.message


def test_train_mode_model_passes():
    assert finding(dropout_net(eval_mode=False), step_without_train).status == "pass"


def test_eval_mode_model_without_dropout_or_batch_norm_is_skipped():
    assert finding(mlp().eval(), step_without_train).status == "skip"
