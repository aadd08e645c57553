"""Which tensors of a model a user means: one convention for ``expect_frozen`` (and the watch's
``replicated``), shared by the doctor and the watch so the same declaration works in both.

An item may be

- a parameter or buffer name (``"fc1.weight"``);
- a module name (``"backbone"``), standing for every tensor under that module;
- a glob pattern of tensor names (``"backbone.*"``, ``"*.bias"``; :func:`fnmatch.fnmatchcase`,
  where ``*`` also matches dots);
- a submodule, a parameter or a buffer of the model itself.

Objects are turned into names first (:func:`as_names`), so everything after that works on
strings: the doctor matches names on its copies of the model (:func:`name_matches`), the
watch resolves them to the live tensors (:func:`resolve`).
"""

from __future__ import annotations

import difflib
import fnmatch
from typing import Any, Iterable

import torch
from torch import nn

from labcoat._validation import article
from labcoat.errors import InputError

_GLOB = frozenset("*?[")


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
            f"expected a module, parameter, name or glob pattern, or a list of them; got "
            f"{type(value).__name__}."
        ) from None


def is_pattern(item: str) -> bool:
    return any(c in _GLOB for c in item)


def name_matches(name: str, items: Iterable[str]) -> bool:
    """Whether tensor ``name`` is selected by any of the string ``items`` (its own name, the
    name of a module above it, or a glob pattern that matches it)."""
    for item in items:
        if item == "" or name == item or name.startswith(item + "."):
            return True
        if is_pattern(item) and fnmatch.fnmatchcase(name, item):
            return True
    return False


def unmatched(names: Iterable[str], items: Iterable[str]) -> list[str]:
    """The string ``items`` that select none of ``names``."""
    names = list(names)
    return [item for item in items if not any(name_matches(n, (item,)) for n in names)]


def as_names(model: nn.Module | None, value: Any, argument: str) -> tuple[str, ...]:
    """Every item of ``value`` as a name: strings as they are, a submodule, parameter or
    buffer of ``model`` as its qualified name."""
    items = as_items(value)
    if model is None:
        modules: dict[int, str] = {}
        tensors: dict[int, str] = {}
    else:
        modules = {id(m): n for n, m in model.named_modules()}
        tensors = {id(t): n for n, t in [*model.named_parameters(), *model.named_buffers()]}
    out = []
    for k, item in enumerate(items):
        where = f"`{argument}`[{k}]"
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, nn.Module):
            if id(item) not in modules:
                raise InputError(
                    f"{where} is {article(type(item).__name__)} that is not part of the model; "
                    "pass one "
                    "of its submodules (e.g. model.encoder), its name, or a glob such as "
                    "'encoder.*'."
                )
            out.append(modules[id(item)])
        elif isinstance(item, torch.Tensor):
            if id(item) not in tensors:
                raise InputError(
                    f"{where} is a tensor of shape {tuple(item.shape)} that is not a parameter or "
                    "buffer of the model; pass the model's own parameter (e.g. model.fc.weight) "
                    "or its name."
                )
            out.append(tensors[id(item)])
        else:
            raise InputError(
                f"{where} must be a name, a glob pattern, a submodule or a parameter; got "
                f"{type(item).__name__}."
            )
    return tuple(out)


def resolve(
    model: nn.Module, value: Any, argument: str, *, with_buffers: bool
) -> dict[str, torch.Tensor]:
    """The named tensors of ``model`` that ``value`` selects, in model order.

    Parameters always; with ``with_buffers`` also floating-point buffers (BatchNorm statistics
    of a frozen backbone). An item that selects nothing is an error naming close matches.
    """
    items = as_names(model, value, argument)
    candidates: dict[str, torch.Tensor] = dict(model.named_parameters())
    if with_buffers:
        candidates.update((n, b) for n, b in model.named_buffers() if b.is_floating_point())
    for k, item in enumerate(items):
        if not any(name_matches(n, (item,)) for n in candidates):
            known = [*candidates, *(n for n, _ in model.named_modules() if n)]
            close = difflib.get_close_matches(item, known, n=3)
            hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            what = "parameter, buffer" if with_buffers else "parameter"
            raise InputError(
                f"`{argument}`[{k}] is {item!r}, which selects no {what} or submodule of the "
                f"model (names, module names and glob patterns such as 'backbone.*' work).{hint}"
            )
    return {n: t for n, t in candidates.items() if name_matches(n, items)}
