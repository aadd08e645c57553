"""Events: structured observations made while a run trains (the watch's samples and alerts).

An event is (step, rank, time, kind, value, severity, message, data). They arrive at training
speed, so :func:`record_all` appends a whole batch in one transaction with one
``executemany``. A non-finite value (a NaN loss is exactly what one wants to record) cannot
live in a REAL column on SQLite, so it is kept as text in ``data["value"]`` and read back.
"""

from __future__ import annotations

import dataclasses
import math
import time as _time
from dataclasses import dataclass, field, fields
from typing import Any, Iterable, Mapping

from labcoat._jsonable import jsonable
from labcoat.errors import InputError
from labcoat.ledger.store.chain import append
from labcoat.ledger.store.connection import Tx
from labcoat.ledger.store.schema import EVENTS
from labcoat.ledger.store.select import encode, record, rows_where, where
from labcoat.ledger.store.timestamps import now

_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


@dataclass
class Event:
    kind: str
    step: int | None = None
    rank: int | None = None
    time: float | None = None
    value: float | None = None
    severity: str | None = None
    message: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    source: str = "watch"
    run_id: int | None = None
    id: int | None = None
    recorded_at: str | None = None

    def __post_init__(self) -> None:
        if (
            self.value is None
            and isinstance(self.data.get("value"), str)
            and self.data["value"] in _NON_FINITE
        ):
            self.value = _NON_FINITE[self.data.pop("value")]

    def to_dict(self) -> dict[str, Any]:
        return jsonable({f.name: getattr(self, f.name) for f in fields(self)})


_KNOWN = {f.name for f in fields(Event)}


def _as_mapping(event: Any) -> Mapping[str, Any]:
    if isinstance(event, Mapping):
        return event
    if callable(getattr(event, "to_event", None)):  # a watch alert: its event, not its finding
        return event.to_event()
    if callable(getattr(event, "to_dict", None)):
        return event.to_dict()
    if dataclasses.is_dataclass(event) and not isinstance(event, type):
        return {f.name: getattr(event, f.name) for f in fields(event)}
    raise InputError(
        "events: each event must be a mapping, a dataclass or an object with to_dict(); got a "
        f"{type(event).__name__}"
    )


def _number(value: Any, name: str, kind: str, cast: type) -> Any:
    try:
        return None if value is None else cast(value)
    except (TypeError, ValueError):
        raise InputError(
            f"events: {name} must be a number; got {value!r} in a {kind!r} event"
        ) from None


def to_row(event: Any, *, run_id: int | None, source: str, recorded_at: str) -> dict[str, Any]:
    e = _as_mapping(event)
    kind = e.get("kind")
    if not isinstance(kind, str) or not kind:
        raise InputError(f"events: every event needs a non-empty 'kind'; got {kind!r}")
    data = dict(e.get("data") or {})
    data.update({k: v for k, v in e.items() if k not in _KNOWN and k != "evidence"})
    if e.get("evidence"):
        data.setdefault("evidence", e["evidence"])
    value = _number(e.get("value"), "value", kind, float)
    if value is not None and not math.isfinite(value):
        data["value"], value = jsonable(value), None  # "nan" / "inf" / "-inf"
    when = _number(e.get("time"), "time", kind, float)
    return {
        "run_id": run_id if e.get("run_id") is None else int(e["run_id"]),
        "source": e.get("source") or source,
        "recorded_at": recorded_at,
        "time": _time.time() if when is None else when,
        "step": _number(e.get("step"), "step", kind, int),
        "rank": _number(e.get("rank"), "rank", kind, int),
        "kind": kind,
        "severity": e.get("severity") or e.get("status"),
        "value": value,
        "message": str(e.get("message") or ""),
        "data": encode(data) if data else None,
    }


def record_all(tx: Tx, events: Iterable[Any], *, run_id: int | None, source: str) -> int:
    """Append ``events`` in the open write transaction; returns how many were written."""
    stamp = now()
    rows = [to_row(e, run_id=run_id, source=source, recorded_at=stamp) for e in events]
    append(tx, EVENTS, rows)
    return len(rows)


def query(
    tx: Tx,
    *,
    min_step: int | None = None,
    max_step: int | None = None,
    limit: int | None = None,
    **columns: Any,
) -> list[Event]:
    """Events in the order they were recorded; ``columns``: run_id, kind, source, rank."""
    clauses = where(**columns)
    clauses += [
        (f"step {op} ?", (int(v),))
        for op, v in ((">=", min_step), ("<=", max_step))
        if v is not None
    ]
    return [
        record(Event, row, json_columns=("data",))
        for row in rows_where(tx, "events", clauses, limit=limit)
    ]
