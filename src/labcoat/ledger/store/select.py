"""One generic query and one row mapper for every record type (sqlite-utils' ``rows_where``).

A record type names its source (a table, or a SELECT that joins and renames columns into the
record's field names), a query is a list of :data:`Clause` s, and :func:`record` turns a row
into the record's dataclass, decoding the JSON columns it lists. Column names in clauses come
from labcoat's code, never from the user; the user's values are always parameters.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, fields
from functools import lru_cache
from typing import Any, Iterable, Mapping, Sequence, TypeVar

from labcoat._jsonable import dumps, jsonable
from labcoat.ledger.store.connection import Tx

#: a condition with ``?`` placeholders and its parameters
Clause = tuple[str, tuple]
T = TypeVar("T")


def where(**columns: Any) -> list[Clause]:
    """``column = value`` for each value given; a list or tuple means any of its values (IN);
    None means no condition."""
    clauses: list[Clause] = []
    for column, value in columns.items():
        if value is None:
            continue
        if isinstance(value, (list, tuple, set, frozenset)):
            values = tuple(value)
            clauses.append(
                (f"{column} IN ({', '.join('?' * len(values))})", values)
                if values
                else ("1 = 0", ())
            )
        else:
            clauses.append((f"{column} = ?", (value,)))
    return clauses


def rows_where(
    tx: Tx,
    source: str,
    clauses: Iterable[Clause] = (),
    *,
    either: Sequence[Clause] = (),
    order_by: str = "id",
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """Rows of ``source`` matching every clause and, when ``either`` is given, any one of those."""
    parts = list(clauses)
    if either:
        parts.append(
            ("(" + " OR ".join(sql for sql, _ in either) + ")", sum((p for _, p in either), ()))
        )
    sql = f"SELECT * FROM {source}"
    if parts:
        sql += " WHERE " + " AND ".join(f"({c})" for c, _ in parts)
    sql += f" ORDER BY {order_by}"
    if limit:
        sql += f" LIMIT {int(limit)}"
    return list(tx.dicts(sql, sum((p for _, p in parts), ())))


def encode(value: Any, *, max_items: int = 1000) -> str | None:
    """A value as the JSON text the ledger stores (None stays NULL); arrays in evidence are cut
    to ``max_items`` entries, as everywhere findings are shown."""
    return None if value is None else dumps(jsonable(value, max_items=max_items))


@lru_cache(maxsize=None)
def _fields(cls: type) -> tuple[tuple[str, bool], ...]:
    return tuple(
        (f.name, f.default is not MISSING or f.default_factory is not MISSING) for f in fields(cls)
    )


def record(cls: type[T], row: Mapping[str, Any], json_columns: Iterable[str] = ()) -> T:
    """The dataclass ``cls`` from a row named like its fields; NULL means the field's default."""
    values = {}
    for name, has_default in _fields(cls):
        value = row.get(name)
        if value is None:
            if not has_default:
                values[name] = None
        else:
            values[name] = json.loads(value) if name in json_columns else value
    return cls(**values)
