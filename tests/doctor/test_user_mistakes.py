"""Inputs that are the user's mistake are one line with the fix and exit 2, before any work
(issue 24, item 5): a class for an instance, arguments out of order, a scheduler for its
optimizer, tensors on the meta device, a loss on another device than the model, a callable whose
signature cannot take what labcoat passes it. Twins: the same arguments given correctly (an
instance, a factory, a custom loss module, a step with extra defaults) are accepted."""

from __future__ import annotations

import functools

import pytest
import torch
from torch import nn

import labcoat
from labcoat.errors import InputError
from tests.doctor.helpers import digits, mlp, standard_step


class WeightedLoss(nn.Module):
    """A loss that is a module but no torch loss: it must not read as a model out of place."""

    def __init__(self, device="cpu"):
        super().__init__()
        self.scale = nn.Parameter(torch.ones((), device=device), requires_grad=False)

    def forward(self, out, y):
        return nn.functional.cross_entropy(out, y) * self.scale


def _meta_mlp():
    with torch.device("meta"):
        return mlp()


class Make:
    """An argument built from the others (``args``: the arguments so far)."""

    def __init__(self, fn):
        self.fn = fn


def _args(**changed):
    model = changed.pop("model", None)
    model = model.fn({}) if isinstance(model, Make) else model
    model = mlp() if model is None else model
    args = dict(model=model, data=digits(), loss_fn=nn.CrossEntropyLoss())
    if isinstance(model, nn.Module):
        args["optimizer"] = torch.optim.Adam(model.parameters(), 1e-3)
    for name, value in changed.items():
        args[name] = value.fn(args) if isinstance(value, Make) else value
    return args


def M(fn):
    return Make(fn)


PLANTED = {
    "loss class": (
        dict(loss_fn=nn.CrossEntropyLoss),
        "loss_fn: got the class torch.nn.CrossEntropyLoss, not a loss; pass an instance: "
        "loss_fn=torch.nn.CrossEntropyLoss()",
    ),
    "optimizer class": (
        dict(optimizer=torch.optim.Adam),
        "optimizer: got the class torch.optim.Adam, not an optimizer, so it would train with",
    ),
    "metric class": (dict(metric=nn.L1Loss), "metric: got the class torch.nn.L1Loss"),
    "model class": (
        dict(model=M(lambda a: nn.Linear), optimizer=torch.optim.Adam(mlp().parameters())),
        "model: got the class torch.nn.Linear",
    ),
    "data class": (
        dict(data=torch.utils.data.TensorDataset),
        "data: got the class torch.utils.data.TensorDataset, not data",
    ),
    "step class": (
        dict(step=WeightedLoss),
        "step: got the class WeightedLoss, not a train step; pass an instance",
    ),
    "scheduler for its optimizer": (
        dict(optimizer=M(lambda a: torch.optim.lr_scheduler.StepLR(a["optimizer"], 1))),
        "optimizer: got the scheduler StepLR, not an optimizer; pass the optimizer it schedules",
    ),
    "model and optimizer swapped": (
        dict(model=M(lambda a: torch.optim.Adam(mlp().parameters())), optimizer=mlp()),
        "model, loss_fn, optimizer: out of order (model=Adam, loss_fn=CrossEntropyLoss, "
        "optimizer=Sequential)",
    ),
    "loss and optimizer swapped": (
        dict(loss_fn=M(lambda a: a["optimizer"]), optimizer=nn.CrossEntropyLoss()),
        "out of order",
    ),
    "model on the meta device": (
        dict(
            model=M(lambda a: _meta_mlp()),
            optimizer=M(lambda a: torch.optim.Adam(a["model"].parameters())),
        ),
        "model: 4 of its 4 tensors are on the meta device (0.weight, 0.bias, 2.weight, …): they "
        "have shapes but no values; materialise it first: model.to_empty(device='cpu')",
    ),
    "loss weight on another device": (
        dict(loss_fn=nn.CrossEntropyLoss(weight=torch.ones(10, device="meta"))),
        "loss_fn: holds weight on the meta device but the model is on cpu; move it where the "
        "model is: loss_fn.to('cpu')",
    ),
    "custom loss on another device": (
        dict(loss_fn=WeightedLoss("meta")),
        "loss_fn: holds scale on the meta device",
    ),
    "data on the meta device": (
        dict(data=(digits()[0].to("meta"), digits()[1])),
        "data: X is on the meta device: it has a shape (800, 64) but no values",
    ),
    "on_finding not callable": (dict(on_finding="print"), "`on_finding` must be a callable"),
    "step of two arguments": (
        dict(step=lambda model, batch: None),
        "step: <lambda>(model, batch) cannot be called as labcoat calls it, step(model, batch, "
        "optimizer, loss_fn) (too many positional arguments); give it that signature",
    ),
    "loss of one argument": (
        dict(loss_fn=lambda out: out.sum()),
        "loss_fn: <lambda>(out) cannot be called as labcoat calls it, loss_fn(output, target)",
    ),
    "metric of three arguments": (
        dict(metric=lambda out, y, mask: 1.0),
        "metric: <lambda>(out, y, mask) cannot be called as labcoat calls it",
    ),
    "optimizer factory of no argument": (
        dict(optimizer=lambda: torch.optim.SGD(mlp().parameters(), 0.1)),
        "optimizer: <lambda>() cannot be called as labcoat calls it, optimizer(params)",
    ),
}


@pytest.mark.parametrize("mistake", list(PLANTED))
def test_a_users_mistake_is_one_line_with_the_fix(mistake):
    changed, says = PLANTED[mistake]
    args = _args(**changed)
    on_finding = args.pop("on_finding", None)
    with pytest.raises(InputError) as caught:
        labcoat.diagnose(**args, on_finding=on_finding, ledger=False, progress=False)
    message = str(caught.value)
    assert says in message and "\n" not in message, message


def _materialised():
    model = _meta_mlp().to_empty(device="cpu")
    for p in model.parameters():
        nn.init.normal_(p, std=0.1)
    return model


HEALTHY = {
    "loss instance": dict(loss_fn=nn.CrossEntropyLoss()),
    "loss function": dict(loss_fn=nn.functional.cross_entropy),
    "custom loss module": dict(loss_fn=WeightedLoss()),
    "loss weight on the model's device": dict(loss_fn=nn.CrossEntropyLoss(weight=torch.ones(10))),
    "optimizer factory": dict(optimizer=functools.partial(torch.optim.Adam, lr=1e-3)),
    "optimizer lambda": dict(optimizer=lambda params: torch.optim.SGD(params, lr=0.1)),
    "metric function": dict(metric=lambda out, y: float((out.argmax(1) == y).float().mean())),
    "step with extra defaults": dict(
        step=lambda model, batch, optimizer, loss_fn, scaler=None: standard_step(
            model, batch, optimizer, loss_fn
        )
    ),
    "step taking *args": dict(step=lambda *args: standard_step(*args)),
    "loss with keyword options": dict(
        loss_fn=lambda out, y, *, smoothing=0.0: nn.functional.cross_entropy(out, y)
    ),
    "model materialised from meta": dict(
        model=M(lambda a: _materialised()),
        optimizer=M(lambda a: torch.optim.Adam(a["model"].parameters(), 1e-3)),
    ),
}


@pytest.mark.parametrize("setup", list(HEALTHY))
def test_the_same_arguments_given_right_are_accepted(setup):
    changed = dict(HEALTHY[setup])
    args = _args(**changed)
    report = labcoat.diagnose(**args, layers="data", ledger=False, progress=False)
    assert report.layers_run == ["data"] and report.ok, report.summary()


def test_an_experiment_says_it_where_it_is_built():
    model = mlp()
    with pytest.raises(InputError, match="loss_fn: got the class torch.nn.CrossEntropyLoss"):
        labcoat.Experiment(
            model, digits(), nn.CrossEntropyLoss, torch.optim.Adam(model.parameters())
        )
    assert (
        labcoat.Experiment(
            model, digits(), nn.CrossEntropyLoss(), torch.optim.Adam(model.parameters())
        ).loss_fn
        is not None
    )


MISTAKE_FILE = """
import torch
from torch import nn
import labcoat

def experiment():
    model = nn.Linear(4, 2)
    data = (torch.randn(40, 4), torch.randint(0, 2, (40,)))
    optimizer = torch.optim.SGD(model.parameters(), 0.1)
    return labcoat.Experiment(model, data, nn.CrossEntropyLoss, optimizer)

def optimizer_class():
    model = nn.Linear(4, 2)
    data = (torch.randn(40, 4), torch.randint(0, 2, (40,)))
    return labcoat.Experiment(model, data, nn.CrossEntropyLoss(), torch.optim.SGD)
"""


@pytest.mark.parametrize(
    "name, says",
    [
        ("experiment", "experiment(): loss_fn: got the class torch.nn.CrossEntropyLoss"),
        ("optimizer_class", "optimizer_class(): optimizer: got the class torch.optim.SGD"),
    ],
)
def test_the_cli_exits_2_with_one_line(cli, tmp_path, name, says):
    path = tmp_path / "mistakes.py"
    path.write_text(MISTAKE_FILE)
    res = cli("doctor", f"{path}:{name}", "--json")
    assert res.code == 2 and res.out == ""
    lines = res.err.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], res.err
