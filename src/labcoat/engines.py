"""The one list of engines. Every consumer iterates it: the check catalogue (``labcoat
checks``), the report of a ledger, ``labcoat ledger findings --source``, ``labcoat --help``
and the contract tests. Adding an engine is one small module in its package
(``labcoat/<engine>/_engine.py`` declaring ``ENGINE = Engine(...)``) and one line in
:data:`DECLARED`.

This module sits above the engines and below the report and the CLI: it names the engines'
declarations, and no engine imports it, so the list and the engines cannot import their way
back to each other.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labcoat.descriptor import Engine
from labcoat.errors import InputError
from labcoat.findings import CheckRegistry
from labcoat.result import Result, load, result_types

#: each engine's declaration (``"module:ENGINE"``), in the order the report and the catalogue
#: show them
DECLARED: tuple[str, ...] = (
    "labcoat.doctor._engine:ENGINE",
    "labcoat.watch._engine:ENGINE",
    "labcoat.stats._engine:ENGINE",
    "labcoat.audit._engine:ENGINE",
    "labcoat.scale._engine:ENGINE",
    "labcoat.replay._engine:ENGINE",
    "labcoat.verdicts._engine:ENGINE",
    "labcoat.evals._engine:ENGINE",
    "labcoat.design._engine:ENGINE",
    "labcoat.logs._engine:ENGINE",
)


def _declaration(ref: str) -> Engine:
    """The :class:`Engine` ``ref`` (``"module:attribute"``) names, its module read without
    importing its package: an engine's
    ``__init__`` may import numpy or scipy, and ``labcoat --help`` lists every engine's
    commands. Kept in ``sys.modules`` under its name, so a later import finds this one."""
    module, _, attr = ref.partition(":")
    if module in sys.modules:
        return getattr(sys.modules[module], attr)
    path = Path(__file__).parent.joinpath(*module.split(".")[1:]).with_suffix(".py")
    spec = importlib.util.spec_from_file_location(module, path)
    if spec is None or spec.loader is None or not path.is_file():
        raise ImportError(f"labcoat.engines: no declaration module {module} at {path}")
    found = importlib.util.module_from_spec(spec)
    sys.modules[module] = found
    try:
        spec.loader.exec_module(found)
    except BaseException:
        del sys.modules[module]
        raise
    return getattr(found, attr)


@functools.cache
def engines() -> tuple[Engine, ...]:
    """Every engine's descriptor, in :data:`DECLARED` order (reads only the declarations)."""
    found = tuple(_declaration(ref) for ref in DECLARED)
    names = [e.name for e in found]
    if len(set(names)) != len(names):
        raise ValueError(f"two engines declare the same name: {names}")
    return found


def names() -> tuple[str, ...]:
    """The engines' names, which are also the ledger sources of their findings."""
    return tuple(e.name for e in engines())


def get(name: str) -> Engine:
    """The descriptor of engine ``name``; an unknown name is an :class:`InputError`."""
    for e in engines():
        if e.name == name:
            return e
    raise InputError(f"engine: expected one of {', '.join(names())}; got {name!r}")


def registries(engine: str | None = None) -> list[CheckRegistry]:
    """Every engine's registry with all its checks declared (or only ``engine``'s)."""
    chosen = engines() if engine is None else (get(engine),)
    out = []
    for e in chosen:
        found = load(e.registry)
        out.append(found() if callable(found) and not isinstance(found, CheckRegistry) else found)
    return out


def catalogue(engine: str | None = None) -> list[dict[str, Any]]:
    """Every declared check (or one engine's) as plain rows: engine, id, layer, severity,
    what it falsifies and predicts, and its options' defaults."""
    return [
        {
            "engine": registry.engine,
            "id": c.id,
            "layer": c.layer,
            "severity": c.severity,
            "falsifies": c.falsifies,
            "predicts": c.predicts,
            "options": {name: spec[0] for name, spec in c.options.items()},
        }
        for registry in registries(engine)
        for c in registry
    ]


@dataclass(frozen=True)
class Catalogue:
    """Every declared check (of every engine, or of one): what ``labcoat checks`` lists."""

    checks: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {"checks": self.checks}


def checks(engine: str | None = None) -> Catalogue:
    """The :func:`catalogue` of every engine's checks (or ``engine``'s) as one answer."""
    return Catalogue(catalogue(engine))


def result_classes() -> dict[str, type[Result]]:
    """kind -> class of every engine's results, found by subclass after importing each
    engine's result modules."""
    for e in engines():
        for module in e.results:
            importlib.import_module(module)
    return result_types()


def load_result(data: Any) -> Result:
    """A stored result (its ``to_dict()``) read back as its class, whichever engine made it."""
    result_classes()
    from labcoat.result import from_dict

    return from_dict(data)


__all__ = [
    "DECLARED",
    "Catalogue",
    "Engine",
    "catalogue",
    "checks",
    "engines",
    "get",
    "load_result",
    "names",
    "registries",
    "result_classes",
]
