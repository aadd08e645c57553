"""What the watch reports: an :class:`Alert`, and how alerts from many ranks become one.

An alert is plain data (like pytest's ``TestReport``): the kind of invariant that broke, the
step and rank that saw it, what it is about (``subject``: a tensor name, a parameter group, a
rank), a one-line message and the numbers behind it. Each rank stores its own alerts; when they
are reported together, :func:`merge_alerts` folds the copies of one event into a single alert
whose ``ranks`` lists every rank that saw it, so one desync is one alert, not one per rank.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping

from labcoat._jsonable import jsonable
from labcoat.findings import SEVERITIES, Check, Finding, Outcome, Severity


@dataclass(frozen=True)
class Alert:
    """One broken invariant, seen at one step.

    ``rank`` is the rank that observed it (``None`` outside ``torch.distributed``); after
    :func:`merge_alerts`, ``ranks`` holds every rank that reported the same event.
    """

    kind: str
    step: int
    rank: int | None
    severity: Severity
    message: str
    evidence: Mapping[str, Any] = field(default_factory=dict)
    subject: str = ""
    value: float | None = None
    time: float | None = None
    ranks: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}; got {self.severity!r}")

    def to_finding(self) -> Finding:
        """The alert as a :class:`~labcoat.findings.Finding` of the ``watch`` layer.

        ``falsifies``/``predicts`` come from the invariant registered under ``kind``.
        """
        from labcoat.watch.invariants import INVARIANTS

        declared = INVARIANTS.get(self.kind) or Check(self.kind, "watch", "", "", run=None)
        evidence = dict(self.evidence)
        if self.subject:
            evidence.setdefault("subject", self.subject)
        if self.value is not None:
            evidence.setdefault("value", self.value)
        if self.ranks:
            evidence.setdefault("ranks", list(self.ranks))
        outcome = Outcome(self.severity, self.message, evidence)
        return declared.finding(outcome, step=self.step, rank=self.rank)

    def to_event(self) -> dict[str, Any]:
        """The alert as one structured event (a JSON-able dict); :meth:`from_event` reads it."""
        return jsonable(
            {
                "step": self.step,
                "rank": self.rank,
                "time": self.time,
                "kind": self.kind,
                "value": self.value,
                "message": self.message,
                "severity": self.severity,
                "subject": self.subject,
                "evidence": dict(self.evidence),
                "ranks": list(self.ranks),
            }
        )

    @classmethod
    def from_event(cls, event: Mapping[str, Any]) -> "Alert":
        value = event.get("value")
        return cls(
            kind=event["kind"],
            step=int(event["step"]),
            rank=event.get("rank"),
            severity=event["severity"],
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


def merge_alerts(alerts: Iterable[Alert]) -> list[Alert]:
    """One alert per event: copies with the same kind, step and subject from different ranks
    are folded together, keeping the first copy's message and listing every rank in ``ranks``.

    The result is sorted by step, then kind, so reports read in the order things happened.
    """
    merged: dict[tuple[str, int, str], Alert] = {}
    ranks: dict[tuple[str, int, str], set[int]] = {}
    for alert in alerts:
        key = (alert.kind, alert.step, alert.subject)
        seen = ranks.setdefault(key, set())
        seen.update(alert.ranks)
        if alert.rank is not None:
            seen.add(alert.rank)
        if key not in merged or _rank_order(alert) < _rank_order(merged[key]):
            merged[key] = alert
    out = [replace(alert, ranks=tuple(sorted(ranks[key]))) for key, alert in merged.items()]
    return sorted(out, key=lambda a: (a.step, a.kind, a.subject))


def _rank_order(alert: Alert) -> int:
    return -1 if alert.rank is None else alert.rank
