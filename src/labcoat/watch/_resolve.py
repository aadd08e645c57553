"""Turning what a user passes for ``expect_frozen`` and ``replicated`` (modules, parameters,
names, a predicate) into named tensors of the watched model, with errors that say what to pass."""

from __future__ import annotations

import difflib
from typing import Any, Callable, Iterable

import torch
from torch import nn

from labcoat.errors import InputError


def as_items(value: Any) -> list[Any]:
    """A single module, tensor or name, or an iterable of them, as a list."""
    if value is None:
        return []
    if isinstance(value, (str, nn.Module, torch.Tensor)):
        return [value]
    try:
        return list(value)
    except TypeError:
        raise InputError(
            f"expected a module, parameter, name or an iterable of them; got {type(value).__name__}."
        ) from None


def resolve_tensors(
    model: nn.Module, items: Iterable[Any], argument: str, *, with_buffers: bool
) -> dict[str, torch.Tensor]:
    """Named tensors of ``model`` selected by ``items`` (modules, parameters, buffers, names).

    A module stands for its parameters and, with ``with_buffers``, its floating-point buffers.
    """
    modules = dict(model.named_modules())
    params = dict(model.named_parameters())
    buffers = {n: b for n, b in model.named_buffers() if b.is_floating_point()}
    by_id = {id(t): n for n, t in [*params.items(), *buffers.items()]}
    module_names = {id(m): n for n, m in modules.items()}
    out: dict[str, torch.Tensor] = {}

    def add_module(prefix: str) -> None:
        module = modules[prefix]
        dot = f"{prefix}." if prefix else ""
        for n, p in module.named_parameters():
            out[dot + n] = p
        if with_buffers:
            for n, b in module.named_buffers():
                if b.is_floating_point():
                    out[dot + n] = b

    for k, item in enumerate(items):
        where = f"`{argument}`[{k}]"
        if isinstance(item, nn.Module):
            if id(item) not in module_names:
                raise InputError(
                    f"{where} is a {type(item).__name__} that is not part of the watched model; "
                    "pass one of its submodules (e.g. model.encoder) or a submodule's name."
                )
            add_module(module_names[id(item)])
        elif isinstance(item, torch.Tensor):
            name = by_id.get(id(item))
            if name is None or (not with_buffers and name not in params):
                what = "parameter" if not with_buffers else "parameter or floating-point buffer"
                raise InputError(
                    f"{where} is a tensor of shape {tuple(item.shape)} that is not a {what} of "
                    "the watched model; pass the model's own parameter (e.g. model.fc.weight)."
                )
            out[name] = item
        elif isinstance(item, str):
            if item in params:
                out[item] = params[item]
            elif with_buffers and item in buffers:
                out[item] = buffers[item]
            elif item in modules:
                add_module(item)
            else:
                close = difflib.get_close_matches(item, [*params, *modules], n=3)
                hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
                raise InputError(
                    f"{where} is {item!r}, which names no parameter or submodule of the "
                    f"watched model.{hint}"
                )
        else:
            raise InputError(
                f"{where} must be a submodule, a parameter or a name; got {type(item).__name__}."
            )
    return out


def select_replicated(
    model: nn.Module, replicated: Any
) -> dict[str, torch.Tensor]:
    """The parameters every rank holds an identical copy of (all of them by default, as
    under DDP); ``replicated`` narrows them with a predicate ``(name, param) -> bool`` or a
    list of modules, parameters or names."""
    params = dict(model.named_parameters())
    if replicated is None:
        return params
    if callable(replicated) and not isinstance(replicated, (nn.Module, torch.Tensor)):
        predicate: Callable[[str, torch.Tensor], bool] = replicated
        return {n: p for n, p in params.items() if predicate(n, p)}
    return resolve_tensors(model, as_items(replicated), "replicated", with_buffers=False)
