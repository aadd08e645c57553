"""The one shape every part of labcoat shares: a declared check and the finding it returns.

A :class:`Check` states what it falsifies and what a healthy setup predicts. Running it gives an
:class:`Outcome` (status, message, evidence); :meth:`Check.finding` joins the two into a
:class:`Finding`, which is plain data. Every engine (the doctor, the watch, the audit, the
scaling fit) declares its checks in a :class:`CheckRegistry`; :func:`registries` lists them all.
The ledger stores findings (:meth:`Finding.to_dict` / :meth:`Finding.from_dict`) and the CLI
renders them (:mod:`labcoat.view`). Nothing here knows about any particular check.

Two words, one vocabulary:

* a **status** is what one check concluded: ``pass`` (the prediction held), ``warn``
  (suspicious, not proof), ``fail`` (the prediction was falsified) or ``skip`` (the check could
  not apply);
* a **severity** is how bad a status is. :data:`SEVERITY` ranks the statuses (fail > warn >
  pass > skip) and :func:`worst` summarises a group with it. A check declares the status a
  falsified prediction gets (:attr:`Check.severity`, ``warn`` or ``fail``), and a watch alert
  carries that status as its ``severity``.
"""

from __future__ import annotations

import dataclasses
import importlib
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Literal, Mapping

from labcoat._jsonable import jsonable

Status = Literal["pass", "warn", "fail", "skip"]
STATUSES: tuple[Status, ...] = ("pass", "warn", "fail", "skip")
#: how bad each status is, higher is worse; used to summarise a group of findings
SEVERITY: dict[str, int] = {"fail": 3, "warn": 2, "pass": 1, "skip": 0}
#: the statuses a falsified prediction may take (a check's or an alert's ``severity``)
Severity = Literal["warn", "fail"]
SEVERITIES: tuple[Severity, ...] = ("warn", "fail")


@dataclass(frozen=True)
class Outcome:
    """What a check observed: status, a one-line message and the numbers behind it."""

    status: Status
    message: str
    evidence: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}; got {self.status!r}")


def passed(message: str, **evidence: Any) -> Outcome:
    """The prediction held."""
    return Outcome("pass", message, evidence)


def warned(message: str, **evidence: Any) -> Outcome:
    """Suspicious but not proof of a bug."""
    return Outcome("warn", message, evidence)


def failed(message: str, **evidence: Any) -> Outcome:
    """The prediction was falsified: the setup is broken here."""
    return Outcome("fail", message, evidence)


def skipped(reason: str, **evidence: Any) -> Outcome:
    """The check does not apply; ``reason`` says why."""
    return Outcome("skip", reason, evidence)


@dataclass
class Finding:
    """One check's result, with enough context to be stored and shown without the check."""

    check: str
    layer: str
    status: Status
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)
    falsifies: str = ""
    predicts: str = ""
    step: int | None = None
    rank: int | None = None
    duration_s: float | None = None

    @property
    def failed(self) -> bool:
        return self.status == "fail"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict; :meth:`from_dict` reads it back."""
        return jsonable({f.name: getattr(self, f.name) for f in dataclasses.fields(self)})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Finding":
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def __rich__(self):  # rich's protocol; rendering lives in labcoat.view
        from labcoat.view import finding_view

        return finding_view(self)


@dataclass(frozen=True)
class Check:
    """A falsifying check, declared once, whatever engine runs it.

    ``run`` is what the engine runs: for the doctor, the audit and the scaling fit a function
    that takes the engine's context (a ``Case``, a result, a fit) and returns an
    :class:`Outcome`; for a stateful check (a watch :class:`~labcoat.watch.invariants.Invariant`)
    the class whose instances fold samples in. ``applies`` may return a reason string to skip,
    or ``None`` to run. ``severity`` is the status a falsified prediction gets. ``options`` maps
    an option name to its default and constraint (see :mod:`labcoat._validation`). ``explains``
    lists later checks (ids or fnmatch patterns) whose failure a warning from this one would be
    the likely cause of.
    """

    id: str
    layer: str
    falsifies: str
    predicts: str
    run: Callable[..., Any]
    applies: Callable[[Any], str | None] | None = None
    severity: Severity = "fail"
    options: Mapping[str, Any] = field(default_factory=dict)
    explains: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}; got {self.severity!r}")

    def finding(self, outcome: Outcome, **context: Any) -> Finding:
        """The one way from a declaration and what it observed to a :class:`Finding`;
        ``context`` fills the finding's step, rank and duration_s."""
        return Finding(
            check=self.id,
            layer=self.layer,
            status=outcome.status,
            message=outcome.message,
            evidence=dict(outcome.evidence),
            falsifies=self.falsifies,
            predicts=self.predicts,
            **context,
        )

    def evaluate(self, target: Any, **context: Any) -> Finding:
        """Run this function check on ``target`` through :func:`run_check`."""
        return run_check(self, target, **context)


#: how many distinct warnings a finding's evidence keeps
WARNINGS_KEPT = 5


def run_check(
    check: Check,
    target: Any,
    *,
    explain: Callable[[Exception], Outcome | None] | None = None,
    **context: Any,
) -> Finding:
    """The one runner: every engine runs every function check through here.

    It owns the policy the engines share: a check that does not apply is a skip; a check that
    raises yields a ``fail`` finding ("check crashed: …"), never an exception, unless the
    engine's ``explain`` maps the exception to an outcome of its own (the doctor's failed
    probes); warnings raised while it ran are evidence (the first few, by message); and the
    finding carries how long the check took. ``context`` fills the finding's step, rank and
    duration_s (an explicit ``duration_s`` wins over the measured one).
    """
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            reason = check.applies(target) if check.applies else None
            outcome = skipped(reason) if reason else check.run(target)
        except Exception as exc:  # noqa: BLE001 - a check yields a finding, whatever happens
            outcome = explain(exc) if explain is not None else None
            if outcome is None:
                outcome = failed(f"check crashed: {type(exc).__name__}: {exc}", error=repr(exc))
    context.setdefault("duration_s", time.perf_counter() - start)
    finding = check.finding(outcome, **context)
    messages = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
    if messages:
        finding.evidence["warnings"] = messages[:WARNINGS_KEPT]
    return finding


class CheckRegistry:
    """One engine's checks, in declaration order; duplicate ids and unknown layers are refused.

    Function checks register with the :meth:`check` decorator, anything else (a watch
    invariant class) with :meth:`add` of its :class:`Check`.
    """

    def __init__(self, engine: str, layers: Iterable[str]):
        self.engine = engine
        self.layers: tuple[str, ...] = tuple(layers)
        self._checks: dict[str, Check] = {}

    def add(self, declared: Check) -> Check:
        """Register ``declared``; it must say what it falsifies and predicts."""
        for name in ("id", "falsifies", "predicts"):
            if not isinstance(getattr(declared, name), str) or not getattr(declared, name):
                raise ValueError(f"check {declared.id!r} must declare a non-empty {name!r}")
        if declared.layer not in self.layers:
            raise ValueError(
                f"check {declared.id!r} has unknown layer {declared.layer!r}; expected one of "
                f"{self.layers}"
            )
        if declared.id in self._checks:
            raise ValueError(
                f"a check with id {declared.id!r} is already registered in the {self.engine} "
                "registry"
            )
        self._checks[declared.id] = declared
        return declared

    def register(self, declaring: Any) -> Any:
        """Class decorator for a stateful check: registers ``declaring.declaration()``."""
        self.add(declaring.declaration())
        return declaring

    def check(
        self, id: str, *, layer: str | None = None, **declared: Any
    ) -> Callable[[Callable[[Any], Outcome]], Callable[[Any], Outcome]]:
        """Decorator: register the function as the ``run`` of check ``id``. ``layer`` may be
        left out when the engine has one layer; ``declared`` holds the other fields of
        :class:`Check`."""
        if layer is None and len(self.layers) == 1:
            layer = self.layers[0]
        if layer not in self.layers:
            raise ValueError(f"unknown layer {layer!r}; expected one of {self.layers}")

        def register(fn: Callable[[Any], Outcome]) -> Callable[[Any], Outcome]:
            self.add(Check(id, layer, run=fn, **declared))
            return fn

        return register

    def __getitem__(self, id: str) -> Check:
        return self._checks[id]

    def get(self, id: str) -> Check | None:
        return self._checks.get(id)

    def __contains__(self, id: object) -> bool:
        return id in self._checks

    def __iter__(self) -> Iterator[Check]:
        return iter(self._checks.values())

    def __len__(self) -> int:
        return len(self._checks)

    def ids(self) -> tuple[str, ...]:
        return tuple(self._checks)

    def in_layer(self, layer: str) -> list[Check]:
        return [c for c in self._checks.values() if c.layer == layer]


#: engine -> the module that holds its registry (as ``module:attribute``) once every check of
#: the engine is declared; imported only by :func:`registries`, so the heavy engines stay lazy
ENGINES: dict[str, str] = {
    "doctor": "labcoat.doctor.checks:REGISTRY",
    "watch": "labcoat.watch.invariants:INVARIANTS",
    "audit": "labcoat.audit.checks:all_checks",
    "scale": "labcoat.scale.diagnostics:CHECKS",
    "stats": "labcoat.stats.record:CHECKS",
    "verdicts": "labcoat.verdicts:REGISTRY",
    "evals": "labcoat.evals.checks:CHECKS",
    "replay": "labcoat.replay.results:CHECKS",
    "logs": "labcoat.logs.checks:CHECKS",
}


def registries(engine: str | None = None) -> list[CheckRegistry]:
    """Every engine's registry with all its checks declared (or only ``engine``'s)."""
    from labcoat._validation import OneOf

    names = list(ENGINES) if engine is None else [OneOf(ENGINES).check(engine, "engine")]
    out = []
    for name in names:
        module, _, attr = ENGINES[name].partition(":")
        found = getattr(importlib.import_module(module), attr)
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


def worst(findings: Iterable[Finding]) -> Status | None:
    """The most severe status among ``findings`` (fail > warn > pass > skip), or None if empty."""
    statuses = [f.status for f in findings]
    return max(statuses, key=SEVERITY.__getitem__) if statuses else None
