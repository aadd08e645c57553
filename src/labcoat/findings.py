"""The one shape every part of labcoat shares: a declared check and the finding it returns.

A :class:`Check` states what it falsifies and what a healthy setup predicts. Running it gives an
:class:`Outcome` (status, message, evidence); :meth:`Check.finding` joins the two into a
:class:`Finding`, which is plain data. The doctor and the watch produce findings, the ledger
stores them (:meth:`Finding.to_dict` / :meth:`Finding.from_dict`) and the CLI renders them
(:mod:`labcoat.render`). Nothing here knows about any particular check.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Literal, Mapping

from labcoat._jsonable import jsonable

Status = Literal["pass", "warn", "fail", "skip"]
STATUSES: tuple[Status, ...] = ("pass", "warn", "fail", "skip")
#: worst first; used to summarise a group of findings
SEVERITY: dict[str, int] = {"fail": 3, "warn": 2, "pass": 1, "skip": 0}


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

    def __rich__(self):  # rich's protocol; rendering lives in labcoat.render
        from labcoat.render import finding_view

        return finding_view(self)


@dataclass(frozen=True)
class Check:
    """A falsifying check, declared once.

    ``run`` takes whatever context its engine passes (the doctor passes a ``Case``) and returns
    an :class:`Outcome`. ``applies`` may return a reason string to skip, or ``None`` to run.
    """

    id: str
    layer: str
    falsifies: str
    predicts: str
    run: Callable[[Any], Outcome]
    applies: Callable[[Any], str | None] | None = None

    def finding(self, outcome: Outcome, **context: Any) -> Finding:
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


class CheckRegistry:
    """An ordered set of checks, registered with a decorator; duplicate ids are refused."""

    def __init__(self, layers: Iterable[str]):
        self.layers: tuple[str, ...] = tuple(layers)
        self._checks: dict[str, Check] = {}

    def check(
        self,
        id: str,
        *,
        layer: str,
        falsifies: str,
        predicts: str,
        applies: Callable[[Any], str | None] | None = None,
    ) -> Callable[[Callable[[Any], Outcome]], Callable[[Any], Outcome]]:
        if layer not in self.layers:
            raise ValueError(f"unknown layer {layer!r}; expected one of {self.layers}")

        def register(fn: Callable[[Any], Outcome]) -> Callable[[Any], Outcome]:
            if id in self._checks:
                raise ValueError(f"a check with id {id!r} is already registered")
            self._checks[id] = Check(id, layer, falsifies, predicts, fn, applies)
            return fn

        return register

    def __getitem__(self, id: str) -> Check:
        return self._checks[id]

    def __iter__(self):
        return iter(self._checks.values())

    def __len__(self) -> int:
        return len(self._checks)

    def in_layer(self, layer: str) -> list[Check]:
        return [c for c in self._checks.values() if c.layer == layer]


def worst(findings: Iterable[Finding]) -> Status | None:
    """The most severe status among ``findings`` (fail > warn > pass > skip), or None if empty."""
    statuses = [f.status for f in findings]
    return max(statuses, key=SEVERITY.__getitem__) if statuses else None
