"""The user's objects handed to the doctor in the wrong shape: one line with the fix, before any
work starts (issue 24, item 5).

Each check here is a mistake of what was passed, not of how it trains, so it is an
:class:`~labcoat.errors.InputError` (exit 2), never a failed check or an internal error:

* a class where an instance belongs (``loss_fn=nn.CrossEntropyLoss``,
  ``optimizer=torch.optim.Adam``, ``model=Net``): the class gets called with the wrong
  arguments, or, for an optimizer class, silently trains with its default hyper-parameters
  instead of the user's;
* the model, loss and optimizer in each other's places, or a learning-rate scheduler given for
  its optimizer;
* a model, data or a loss holding tensors on the ``meta`` device (shapes with no values), or a
  loss or metric module holding tensors on another device than the model's;
* a callable whose signature cannot take the arguments labcoat calls it with (a train step
  ``step(model, batch)``, a loss of one argument): today's traceback inside a check would read
  as the setup being broken.

A real training bug stays a check's finding: an optimizer built on another instance of the model
is a setup that would train wrongly, and ``update.optimizer.coverage`` names it.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch
from torch import nn

from labcoat.errors import InputError

#: public homes of torch classes, so a message says ``torch.nn.CrossEntropyLoss``
_PUBLIC = (torch.nn, torch.optim, torch.optim.lr_scheduler, torch.utils.data)


def class_name(cls: type) -> str:
    for home in _PUBLIC:
        if getattr(home, cls.__name__, None) is cls:
            return f"{home.__name__}.{cls.__name__}"
    return cls.__qualname__


#: per argument: what it must be, and how to build one from a class
_INSTANCE_FIX = {
    "model": ("a model", "model={cls}(...)"),
    "data": ("data", "data={cls}(...)"),
    "val_data": ("data", "val_data={cls}(...)"),
    "loss_fn": ("a loss", "loss_fn={cls}()"),
    "metric": ("a metric", "metric={cls}()"),
    "step": ("a train step", "step={cls}(...)"),
    "on_finding": ("a callback", "on_finding={cls}(...)"),
}


def not_a_class(value: Any, name: str) -> None:
    """A class given where an instance belongs (the parentheses left off)."""
    if not inspect.isclass(value):
        return
    cls = class_name(value)
    if name == "optimizer":
        if issubclass(value, torch.optim.Optimizer):
            raise InputError(
                f"optimizer: got the class {cls}, not an optimizer, so it would train with "
                f"{cls}'s default settings, not yours; pass one built on the model: "
                f"optimizer={cls}(model.parameters(), lr=...), or functools.partial({cls}, "
                "lr=...) for labcoat to build"
            )
        return  # another class taking the parameters is a factory (labcoat checks what it builds)
    what, fix = _INSTANCE_FIX[name]
    raise InputError(
        f"{name}: got the class {cls}, not {what}; pass an instance: {fix.format(cls=cls)}"
    )


def _kind(value: Any) -> str | None:
    if isinstance(value, torch.optim.Optimizer):
        return "optimizer"
    if isinstance(value, nn.modules.loss._Loss):
        return "loss"
    if isinstance(value, nn.Module):
        return "model"
    return None


def in_place(model: Any, loss_fn: Any, optimizer: Any) -> None:
    """The model, loss and optimizer each where diagnose expects it; a scheduler is not its
    optimizer."""
    given = {"model": _kind(model), "loss_fn": _kind(loss_fn), "optimizer": _kind(optimizer)}
    wrong = {
        "model": given["model"] in ("optimizer", "loss"),
        "loss_fn": given["loss_fn"] == "optimizer",
        "optimizer": given["optimizer"] in ("model", "loss"),
    }
    if any(wrong.values()):
        shown = ", ".join(
            f"{name}={type(v).__name__}"
            for name, v in (("model", model), ("loss_fn", loss_fn), ("optimizer", optimizer))
        )
        raise InputError(
            f"model, loss_fn, optimizer: out of order ({shown}); the order is "
            "diagnose(model, data, loss_fn, optimizer), as labcoat.Experiment(model, data, "
            "loss_fn, optimizer)"
        )
    scheduled = getattr(optimizer, "optimizer", None)
    if isinstance(scheduled, torch.optim.Optimizer) and not isinstance(
        optimizer, torch.optim.Optimizer
    ):
        raise InputError(
            f"optimizer: got the scheduler {type(optimizer).__name__}, not an optimizer; pass the "
            "optimizer it schedules (scheduler.optimizer)"
        )


def _tensors(module: nn.Module) -> list[tuple[str, torch.Tensor]]:
    return list(module.named_parameters()) + list(module.named_buffers())


def on_devices(model: Any, loss_fn: Any, metric: Any) -> None:
    """No tensor on the meta device (shapes, no values), and the loss and metric modules on the
    model's device."""
    if not isinstance(model, nn.Module):
        return
    tensors = _tensors(model)
    meta = [n for n, t in tensors if t.is_meta]
    if meta:
        shown = ", ".join(meta[:3]) + (", …" if len(meta) > 3 else "")
        raise InputError(
            f"model: {len(meta)} of its {len(tensors)} tensors are on the meta device ({shown}): "
            "they have shapes but no values; materialise it first: model.to_empty(device='cpu'), "
            "then load or initialise its weights"
        )
    if not tensors:
        return
    device = tensors[0][1].device
    for name, fn in (("loss_fn", loss_fn), ("metric", metric)):
        if not isinstance(fn, nn.Module):
            continue
        for tensor_name, t in _tensors(fn):
            if t.device.type != device.type:
                raise InputError(
                    f"{name}: holds {tensor_name} on the {t.device} device but the model is on "
                    f"{device}; move it where the model is: {name}.to({str(device)!r})"
                )


#: how labcoat calls each callable argument: the call, as the message shows it, and its
#: positional arguments
CALLS = {
    "loss_fn": ("loss_fn(output, target)", 2),
    "metric": ("metric(output, target)", 2),
    "step": ("step(model, batch, optimizer, loss_fn)", 4),
    "optimizer": ("optimizer(params) (a factory building the optimizer)", 1),
    "on_finding": ("on_finding(finding)", 1),
}


def callable_as_called(value: Any, name: str) -> None:
    """``value`` accepts the positional arguments labcoat passes it; its signature says so when
    it has one (builtins and C functions may not: they are taken on trust)."""
    if value is None or inspect.isclass(value) or not callable(value):
        return
    if name == "optimizer" and isinstance(value, torch.optim.Optimizer):
        return
    call, n = CALLS[name]
    try:
        signature = inspect.signature(value)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(*range(n))
    except TypeError as exc:
        shown = getattr(value, "__qualname__", type(value).__name__)
        raise InputError(
            f"{name}: {shown}{signature} cannot be called as labcoat calls it, {call} ({exc}); "
            f"give it that signature"
        ) from None


def check_objects(
    *,
    model: Any,
    data: Any,
    loss_fn: Any,
    optimizer: Any,
    val_data: Any = None,
    step: Any = None,
    metric: Any = None,
    on_finding: Any = None,
) -> None:
    """Every object argument of :func:`labcoat.diagnose` in the shape it needs; an InputError
    naming the argument and the fix otherwise. Cheap: nothing is copied, run or read."""
    for name, value in (
        ("model", model),
        ("data", data),
        ("val_data", val_data),
        ("loss_fn", loss_fn),
        ("optimizer", optimizer),
        ("metric", metric),
        ("step", step),
        ("on_finding", on_finding),
    ):
        not_a_class(value, name)
    in_place(model, loss_fn, optimizer)
    for name, value in (
        ("loss_fn", loss_fn),
        ("metric", metric),
        ("step", step),
        ("optimizer", optimizer),
        ("on_finding", on_finding),
    ):
        callable_as_called(value, name)
    on_devices(model, loss_fn, metric)
