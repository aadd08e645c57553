"""What an engine is, declared once by the engine itself: :class:`Engine`.

An engine is a part of labcoat that runs declared checks and returns results (the doctor, the
watch, stats, ...). Each declares one :class:`Engine` in a light module of its own package,
``labcoat/<engine>/_engine.py``, that imports only this module; :mod:`labcoat.engines` lists
those modules, and every consumer (the check catalogue, the report, the CLI, the contract
tests) iterates that list. The ledger and the report are not engines: the ledger stores
findings and results, the report draws them; neither produces a finding of its own.

The references are ``"module:attribute"`` strings, resolved only by the consumer that needs
them, so declaring an engine imports nothing heavy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping


@dataclass(frozen=True)
class Engine:
    """One engine: its name, what it does, where its checks, results and views live."""

    #: the engine's name, also the ``source`` its findings are stored under in the ledger
    name: str
    #: one line saying what the engine does
    summary: str
    #: ``"module:attribute"`` of its :class:`~labcoat.findings.CheckRegistry` (or of a function
    #: returning it) once every check of the engine is declared
    registry: str
    #: modules whose import defines every :class:`~labcoat.result.Result` class of the engine;
    #: the classes themselves are found by subclass (``Result.__subclasses__``), never listed
    results: tuple[str, ...]
    #: CLI command name -> its one-line help as ``labcoat --help`` lists it (the commands
    #: themselves are in :data:`labcoat.cli.main.COMMANDS`)
    commands: Mapping[str, str] = field(default_factory=dict)
    #: ``"module:function"`` drawing one ledger run's stored findings, events and results as a
    #: report section, ``(run, findings, events, results, title=, id=) -> Section``; ``None``:
    #: each stored result through its own ``section``, else the findings as a list
    section: str | None = None

    def __post_init__(self) -> None:
        for name in ("name", "summary", "registry"):
            if not getattr(self, name):
                raise ValueError(f"engine descriptor: {name!r} must not be empty")
        for ref in (self.registry, self.section or "m:f"):
            if ":" not in ref:
                raise ValueError(f"engine {self.name!r}: {ref!r} is not 'module:attribute'")


__all__ = ["Engine"]
