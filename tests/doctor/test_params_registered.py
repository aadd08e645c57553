"""model.params.registered: weights the forward pass trains that are not model parameters."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tests.doctor.helpers import diagnose, mlp

LAYERS = ("model",)


class Hidden(nn.Module):
    """An input layer, two hidden layers held as ``kind`` says, and a head."""

    def __init__(self, kind: str = "modulelist", frozen_hidden: bool = False):
        torch.manual_seed(0)
        super().__init__()
        self.inp, self.out = nn.Linear(64, 32), nn.Linear(32, 10)
        hidden = [nn.Linear(32, 32), nn.Linear(32, 32)]
        for layer in hidden if frozen_hidden else ():
            layer.requires_grad_(False)
        if kind == "list":
            self.hidden = hidden
        elif kind == "dict":
            self.hidden = {"a": hidden[0], "b": hidden[1]}
        elif kind == "moduledict":
            self.hidden = nn.ModuleDict({"a": hidden[0], "b": hidden[1]})
        else:
            self.hidden = nn.ModuleList(hidden)

    def forward(self, x):
        h = torch.relu(self.inp(x))
        keyed = isinstance(self.hidden, (dict, nn.ModuleDict))
        layers = self.hidden.values() if keyed else self.hidden
        for layer in layers:
            h = torch.relu(layer(h))
        return self.out(h)


def finding(model, optimizer=None):
    return diagnose(model, optimizer=optimizer, layers=LAYERS)["model.params.registered"]


def test_layers_in_a_plain_list_fail_naming_them():
    found = finding(Hidden("list"))
    assert found.status == "fail", found.message
    assert "hidden[0].weight" in found.message and "nn.ModuleList" in found.message
    assert found.evidence["in_optimizer"] == 0 and found.evidence["values"] == 2 * (32 * 32 + 32)


@pytest.mark.check("doctor.model.params.registered", planted=True)
def test_layers_in_a_plain_dict_fail():
    found = finding(Hidden("dict"))
    assert found.status == "fail" and "hidden['a'].weight" in found.message


class TensorAttribute(nn.Module):
    """A scale kept as a plain tensor with requires_grad=True instead of an nn.Parameter."""

    def __init__(self, parameter: bool = False):
        super().__init__()
        self.body = mlp()
        scale = torch.ones(10, requires_grad=True)
        self.scale = nn.Parameter(scale) if parameter else scale

    def forward(self, x):
        return self.body(x) * self.scale


def test_tensor_attribute_with_requires_grad_fails():
    found = finding(TensorAttribute())
    assert found.status == "fail" and "scale" in found.message


class ParameterInForward(nn.Module):
    """An nn.Parameter created on every call: a new random weight each forward."""

    def __init__(self):
        super().__init__()
        self.body = mlp()

    def forward(self, x):
        bias = nn.Parameter(torch.zeros(10))
        return self.body(x) + bias


def test_parameter_created_in_forward_fails():
    found = finding(ParameterInForward())
    assert found.status == "fail" and "made during forward" in found.message


def test_plain_list_layers_given_to_the_optimizer_warn():
    model = Hidden("list")
    extra = [p for layer in model.hidden for p in layer.parameters()]
    optimizer = torch.optim.Adam(list(model.parameters()) + extra, lr=1e-3)
    found = finding(model, optimizer)
    assert found.status == "warn" and "state_dict()" in found.message
    assert found.evidence["in_optimizer"] == 4


def test_registered_containers_and_parameters_pass():
    for model in (Hidden("modulelist"), Hidden("moduledict"), TensorAttribute(parameter=True)):
        found = finding(model)
        assert found.status == "pass", (type(model).__name__, found.message)


def test_frozen_layers_in_a_plain_list_pass():
    """A fixed feature extractor kept out of the parameters on purpose: nothing needs grad."""
    assert finding(Hidden("list", frozen_hidden=True)).status == "pass"


def test_buffer_and_frozen_parameter_pass():
    model = mlp()
    model.register_buffer("class_prior", torch.full((10,), 0.1))
    model[0].bias.requires_grad_(False)
    assert finding(model).status == "pass"


class InputGradient(nn.Module):
    """A physics-informed style model that differentiates its output with respect to its input,
    which it makes a leaf that requires grad."""

    def __init__(self):
        super().__init__()
        self.body = mlp()

    def forward(self, x):
        x = x.detach().requires_grad_(True)
        out = self.body(x)
        (slope,) = torch.autograd.grad(out.sum(), x, create_graph=True)
        return out + 0.01 * slope[:, :10]


def test_input_made_a_leaf_inside_forward_passes():
    assert finding(InputGradient()).status == "pass"


class MarginLoss(nn.Module):
    """A loss with weights of its own (a learnable temperature): the optimizer holds them, and
    they are reached from the loss, not from the model's output."""

    def __init__(self):
        super().__init__()
        self.log_temperature = nn.Parameter(torch.zeros(()))

    def forward(self, out, y):
        return nn.functional.cross_entropy(out * self.log_temperature.exp(), y)


@pytest.mark.check("doctor.model.params.registered", healthy=True)
def test_weights_of_the_loss_are_not_the_models_business():
    model, loss = mlp(), MarginLoss()
    optimizer = torch.optim.Adam(list(model.parameters()) + list(loss.parameters()), lr=1e-3)
    found = diagnose(model, loss_fn=loss, optimizer=optimizer, layers=LAYERS)
    assert found["model.params.registered"].status == "pass"
