"""What the watch reports: an :class:`Alert` (a :class:`~labcoat.findings.Finding` of the
``watch`` layer), and how alerts from many ranks become one.

An alert is a finding (like pytest's ``TestReport``, plain data): the invariant that broke
(``check``), the step and rank that saw it, its ``status`` (``warn`` or ``fail``), a one-line
message and the numbers behind it, plus what it is about (``subject``: a tensor name, a parameter
group, a rank), the ``value`` that tripped it and the ``time``. Each rank stores its own alerts;
when they are reported together, :func:`merge_alerts` folds the copies of one event into a single
alert whose ``ranks`` lists every rank that saw it, so one desync is one alert, not one per rank.

Until this release an alert named its invariant ``kind`` and its status ``severity`` and was
built positionally as ``Alert(kind, step, rank, severity, message, ...)``; those names keep
working for one release with a :class:`DeprecationWarning`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping

from labcoat._jsonable import jsonable
from labcoat.findings import SEVERITIES, Check, Finding

#: the positional order of the old constructor, ``Alert(kind, step, rank, severity, ...)``
_OLD_ORDER = ("kind", "step", "rank", "severity", "message", "evidence", "subject", "value")
_OLD_ORDER += ("time", "ranks")


def _deprecated(old: str, new: str) -> None:
    warnings.warn(
        f"Alert.{old} is deprecated; use Alert.{new} (an alert is a labcoat.Finding)",
        DeprecationWarning,
        stacklevel=3,
    )


@dataclass(init=False)
class Alert(Finding):
    """One broken invariant, seen at one step: a :class:`~labcoat.findings.Finding` of the
    ``watch`` layer whose ``status`` is ``warn`` or ``fail``.

    ``rank`` is the rank that observed it (``None`` outside ``torch.distributed``); after
    :func:`merge_alerts`, ``ranks`` holds every rank that reported the same event.
    """

    subject: str = ""
    value: float | None = None
    time: float | None = None
    ranks: tuple[int, ...] = ()

    def __init__(
        self,
        *args: Any,
        check: str | None = None,
        status: str | None = None,
        message: str = "",
        evidence: Mapping[str, Any] | None = None,
        step: int | None = None,
        rank: int | None = None,
        subject: str = "",
        value: float | None = None,
        time: float | None = None,
        ranks: Iterable[int] = (),
        layer: str = "watch",
        falsifies: str = "",
        predicts: str = "",
        duration_s: float | None = None,
        **old: Any,
    ) -> None:
        if args or old:
            unknown = set(old) - set(_OLD_ORDER)
            if unknown or len(args) > len(_OLD_ORDER):
                raise TypeError(f"Alert() got unexpected arguments {sorted(unknown) or args}")
            given = dict(zip(_OLD_ORDER, args), **old)
            warnings.warn(
                "Alert(kind, step, rank, severity, ...) is deprecated; build it with keywords: "
                "Alert(check=..., status=..., step=..., rank=..., message=...)",
                DeprecationWarning,
                stacklevel=2,
            )
            check = given.pop("kind", check)
            status = given.pop("severity", status)
            message = given.pop("message", message)
            evidence = given.pop("evidence", evidence)
            step = given.pop("step", step)
            rank = given.pop("rank", rank)
            subject = given.pop("subject", subject)
            value = given.pop("value", value)
            time = given.pop("time", time)
            ranks = given.pop("ranks", ranks)
        if status not in SEVERITIES:
            raise ValueError(
                f"an alert's status (severity) must be one of {SEVERITIES}; got {status!r}"
            )
        if not check:
            raise TypeError("Alert() needs check=, the invariant that broke")
        super().__init__(
            check=check,
            layer=layer,
            status=status,
            message=message,
            evidence=dict(evidence or {}),
            falsifies=falsifies,
            predicts=predicts,
            step=step,
            rank=rank,
            duration_s=duration_s,
        )
        self.subject = subject
        self.value = value
        self.time = time
        self.ranks = tuple(ranks)

    @property
    def kind(self) -> str:
        """Deprecated: the invariant's id is :attr:`check`."""
        _deprecated("kind", "check")
        return self.check

    @property
    def severity(self) -> str:
        """Deprecated: an alert's ``warn``/``fail`` is its :attr:`status`."""
        _deprecated("severity", "status")
        return self.status

    def to_finding(self, declared: Check | None = None) -> Finding:
        """The alert as a plain :class:`~labcoat.findings.Finding` for the ledger: what it is
        about (subject, value, ranks) moves into the evidence, and ``falsifies``/``predicts``
        come from ``declared`` (a user's own invariant's declaration) or the invariant
        registered under :attr:`check` (an unknown one is refused: every stored finding's check
        is declared)."""
        from labcoat.errors import InputError
        from labcoat.watch.invariants import INVARIANTS

        declared = declared or INVARIANTS.get(self.check)
        if declared is None:
            raise InputError(
                f"alert: {self.check!r} is no registered invariant (known: "
                f"{', '.join(INVARIANTS.ids())}); was the event file written by another version?"
            )
        evidence = dict(self.evidence)
        if self.subject:
            evidence.setdefault("subject", self.subject)
        if self.value is not None:
            evidence.setdefault("value", self.value)
        if self.ranks:
            evidence.setdefault("ranks", list(self.ranks))
        return Finding(
            check=declared.id,
            layer=declared.layer,
            status=self.status,
            message=self.message,
            evidence=evidence,
            falsifies=declared.falsifies,
            predicts=declared.predicts,
            step=self.step,
            rank=self.rank,
        )

    def to_event(self) -> dict[str, Any]:
        """The alert as one structured event (a JSON-able dict); :meth:`from_event` reads it.

        The event files keep their keys (``kind``, ``severity``), so files written before and
        after the rename read the same."""
        return jsonable(
            {
                "step": self.step,
                "rank": self.rank,
                "time": self.time,
                "kind": self.check,
                "value": self.value,
                "message": self.message,
                "severity": self.status,
                "subject": self.subject,
                "evidence": dict(self.evidence),
                "ranks": list(self.ranks),
            }
        )

    @classmethod
    def from_event(cls, event: Mapping[str, Any]) -> "Alert":
        value = event.get("value")
        return cls(
            check=event["kind"],
            step=int(event["step"]),
            rank=event.get("rank"),
            status=event["severity"],
            message=event.get("message", ""),
            evidence=dict(event.get("evidence") or {}),
            subject=event.get("subject", ""),
            value=float(value) if value is not None else None,
            time=event.get("time"),
            ranks=tuple(event.get("ranks") or ()),
        )

    @staticmethod
    def is_alert_event(event: Mapping[str, Any]) -> bool:
        """True for events that are alerts (other events, such as evals, carry no severity)."""
        return event.get("severity") in SEVERITIES


class Findings(list):
    """The findings of a watch result: a list, and for one release also callable
    (``w.findings()`` was a method; the protocol makes it a property)."""

    def __call__(self) -> "Findings":
        warnings.warn(
            "findings() is deprecated: findings is a property (labcoat.result.Result); drop the "
            "call parentheses",
            DeprecationWarning,
            stacklevel=2,
        )
        return self


def merge_alerts(alerts: Iterable[Alert]) -> list[Alert]:
    """One alert per event: copies with the same kind, step and subject from different ranks
    are folded together, keeping the first copy's message and listing every rank in ``ranks``.

    The result is sorted by step, then kind, so reports read in the order things happened.
    """
    merged: dict[tuple[str, int, str], Alert] = {}
    ranks: dict[tuple[str, int, str], set[int]] = {}
    for alert in alerts:
        key = (alert.check, alert.step, alert.subject)
        seen = ranks.setdefault(key, set())
        seen.update(alert.ranks)
        if alert.rank is not None:
            seen.add(alert.rank)
        if key not in merged or _rank_order(alert) < _rank_order(merged[key]):
            merged[key] = alert
    out = [replace(alert, ranks=tuple(sorted(ranks[key]))) for key, alert in merged.items()]
    return sorted(out, key=lambda a: (a.step, a.check, a.subject))


def _rank_order(alert: Alert) -> int:
    return -1 if alert.rank is None else alert.rank
