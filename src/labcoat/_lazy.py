"""Package attributes that load on first use (PEP 562), so ``import labcoat`` and
``labcoat --help`` do not import torch, scipy or the engines a command does not need.

A package declares one table, public name -> ``"module:attribute"`` (or ``"module"`` for the
module itself), and takes its ``__getattr__`` and ``__dir__`` from :func:`lazy`.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable, Mapping


def lazy(
    package: str, table: Mapping[str, str], renamed: Mapping[str, str] | None = None
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``(__getattr__, __dir__)`` of ``package``: a name in ``table`` is imported on first
    access and kept in the package's namespace, so later lookups are plain attribute reads.
    ``renamed`` (old name -> its name in ``table``) keeps old names for one release: each
    access answers the new name's object with a :class:`DeprecationWarning`."""

    def __getattr__(name: str) -> Any:
        if renamed and name in renamed:
            from labcoat._validation import warn_deprecated

            warn_deprecated(f"{package}.{name}", f"{package}.{renamed[name]}")
            return __getattr__(renamed[name])
        target = table.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attr = target.partition(":")
        value = importlib.import_module(module)
        if attr:
            value = getattr(value, attr)
        vars(sys.modules[package])[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(table))

    return __getattr__, __dir__


__all__ = ["lazy"]
