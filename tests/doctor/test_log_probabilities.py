"""model.loss.log_probabilities: a loss that reads log-probabilities given logits or softmax."""

from __future__ import annotations

import functools

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from tests.doctor.helpers import TinyLM, diagnose, mlp, token_data

LAYERS = ("model",)
CHECK = "model.loss.log_probabilities"


class Head(nn.Module):
    """The digits MLP with ``last`` applied to its logits."""

    def __init__(self, last=None):
        super().__init__()
        self.body, self.last = mlp(), last

    def forward(self, x):
        z = self.body(x)
        return z if self.last is None else self.last(z)


def finding(model, loss_fn, data=None):
    return diagnose(model, data, loss_fn, layers=LAYERS)[CHECK]


@pytest.mark.check("doctor.model.loss.log_probabilities", planted=True)
def test_logits_into_nll_loss_fail():
    found = finding(Head(), nn.NLLLoss())
    assert found.status == "fail" and "logits" in found.message, found.message
    assert found.evidence["drop_when_outputs_rise_by_1"] > 0.99


def test_softmax_into_nll_loss_fails_naming_log_softmax():
    found = finding(Head(lambda z: F.softmax(z, 1)), nn.NLLLoss())
    assert found.status == "fail" and "should be a log_softmax" in found.message


def test_functional_nll_loss_is_read_by_what_it_does():
    found = finding(Head(), functools.partial(F.nll_loss, reduction="mean"))
    assert found.status == "fail"


def test_log_softmax_into_nll_loss_passes_with_or_without_class_weights():
    model = Head(lambda z: F.log_softmax(z, 1))
    for loss in (nn.NLLLoss(), nn.NLLLoss(weight=torch.linspace(0.5, 2.0, 10))):
        found = finding(model, loss)
        assert found.status == "pass" and "are log-probabilities" in found.message


def test_logits_into_cross_entropy_pass():
    for loss in (nn.CrossEntropyLoss(), nn.CrossEntropyLoss(label_smoothing=0.1)):
        found = finding(Head(), loss)
        assert found.status == "pass" and "normalises" in found.message


class LogSoftmaxLM(TinyLM):
    def forward(self, tokens):
        return F.log_softmax(super().forward(tokens), dim=-1)


def _token_nll(out, y):
    return F.nll_loss(out.reshape(-1, out.shape[-1]), y.reshape(-1))


def test_sequence_log_probabilities_over_the_vocabulary_pass_and_logits_fail():
    data = token_data(n=64)
    assert finding(LogSoftmaxLM(), _token_nll, data).status == "pass"
    assert finding(TinyLM(), _token_nll, data).status == "fail"


def _nll_in_float(out, y):
    return F.nll_loss(out.float(), y)


@pytest.mark.check("doctor.model.loss.log_probabilities", healthy=True)
def test_log_probabilities_rounded_to_bfloat16_pass():
    """bfloat16 log-probabilities sum to 1 only within their rounding (a few 1e-3)."""
    model = Head(lambda z: F.log_softmax(4 * z, 1).to(torch.bfloat16))
    found = finding(model, _nll_in_float)
    assert found.status == "pass", found.message
