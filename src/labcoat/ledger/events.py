"""Events: structured observations made while a run trains (the watch writes these), in bulk.

An event is (step, rank, time, kind, value, severity, message, data). They arrive at training
speed, so :func:`record` appends a whole batch in one transaction with one ``executemany``. A
non-finite value (a NaN loss is exactly what one wants to record) cannot live in a REAL column
on SQLite, so it is kept as text in ``data["value"]`` and read back as a float.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time as _time
from dataclasses import dataclass, field, fields
from typing import Any, Iterable, Mapping

from labcoat._jsonable import jsonable
from labcoat.errors import InputError
from labcoat.ledger.chain import append
from labcoat.ledger.schema import EVENTS
from labcoat.ledger.storage import Tx
from labcoat.ledger.timestamps import now

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

    def to_dict(self) -> dict[str, Any]:
        return jsonable({f.name: getattr(self, f.name) for f in fields(self)})


_KNOWN = {f.name for f in fields(Event)}


def _as_mapping(event: Any) -> Mapping[str, Any]:
    if isinstance(event, Mapping):
        return event
    to_dict = getattr(event, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    if dataclasses.is_dataclass(event) and not isinstance(event, type):
        return {f.name: getattr(event, f.name) for f in fields(event)}
    raise InputError(
        f"events: each event must be a mapping, a dataclass or an object with to_dict(); got a {type(event).__name__}"
    )


def _optional_int(value: Any, name: str) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise InputError(f"events: {name} must be an integer; got {value!r}") from None


def to_row(event: Any, *, run_id: int | None, source: str, recorded_at: str) -> dict[str, Any]:
    e = _as_mapping(event)
    kind = e.get("kind")
    if not isinstance(kind, str) or not kind:
        raise InputError(f"events: every event needs a non-empty 'kind'; got {kind!r}")
    data = dict(e.get("data") or {})
    data.update({k: v for k, v in e.items() if k not in _KNOWN and k != "evidence"})
    if e.get("evidence"):
        data.setdefault("evidence", e["evidence"])
    value = e.get("value")
    if value is not None:
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise InputError(f"events: value must be a number; got {value!r} in a {kind!r} event") from None
        if not math.isfinite(value):
            data["value"] = jsonable(value)  # "nan" / "inf" / "-inf"
            value = None
    when = e.get("time")
    return {
        "run_id": run_id if e.get("run_id") is None else int(e["run_id"]),
        "source": e.get("source") or source,
        "recorded_at": recorded_at,
        "time": float(when) if when is not None else _time.time(),
        "step": _optional_int(e.get("step"), "step"),
        "rank": _optional_int(e.get("rank"), "rank"),
        "kind": kind,
        "severity": e.get("severity") or e.get("status"),
        "value": value,
        "message": str(e.get("message") or ""),
        "data": json.dumps(jsonable(data), sort_keys=True, separators=(",", ":"), allow_nan=False) if data else None,
    }


def record(tx: Tx, events: Iterable[Any], *, run_id: int | None, source: str) -> int:
    """Append ``events`` in the open write transaction; returns how many were written."""
    stamp = now()
    rows = [to_row(e, run_id=run_id, source=source, recorded_at=stamp) for e in events]
    append(tx, EVENTS, rows)
    return len(rows)


def _from_row(row: Mapping[str, Any]) -> Event:
    data = json.loads(row["data"]) if row["data"] else {}
    value = row["value"]
    if value is None and isinstance(data.get("value"), str) and data["value"] in _NON_FINITE:
        value = _NON_FINITE[data.pop("value")]
    return Event(
        kind=row["kind"],
        step=row["step"],
        rank=row["rank"],
        time=row["time"],
        value=value,
        severity=row["severity"],
        message=row["message"] or "",
        data=data,
        source=row["source"],
        run_id=row["run_id"],
        id=row["id"],
        recorded_at=row["recorded_at"],
    )


def query(
    tx: Tx,
    *,
    run_id: int | None = None,
    kind: str | None = None,
    source: str | None = None,
    rank: int | None = None,
    min_step: int | None = None,
    max_step: int | None = None,
    limit: int | None = None,
) -> list[Event]:
    conditions, params = [], []
    for column, value in (("run_id", run_id), ("kind", kind), ("source", source), ("rank", rank)):
        if value is not None:
            conditions.append(f"{column} = ?")
            params.append(value)
    if min_step is not None:
        conditions.append("step >= ?")
        params.append(int(min_step))
    if max_step is not None:
        conditions.append("step <= ?")
        params.append(int(max_step))
    sql = "SELECT id, run_id, source, recorded_at, time, step, rank, kind, severity, value, message, data FROM events"
    if conditions:
        sql += " WHERE " + " AND ".join(conditions)
    sql += " ORDER BY id"
    if limit:
        sql += f" LIMIT {int(limit)}"
    return [_from_row(r) for r in tx.dicts(sql, params)]
