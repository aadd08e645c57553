"""Read-only SQL over the ledger, for questions the commands do not ask.

The statement runs through the store's read-only door: a ``mode=ro`` connection with
``query_only`` and no ATTACH on SQLite, a read-only transaction that has already taken its
snapshot (so it cannot be switched back to read-write) on PostgreSQL. One statement at a time,
with a time limit. Writes are refused with :class:`~labcoat.ledger.store.connection.ReadOnlyError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from labcoat._jsonable import jsonable
from labcoat.errors import InputError
from labcoat.ledger.store.connection import Store


@dataclass
class SqlResult:
    columns: list[str]
    rows: list[tuple] = field(default_factory=list)

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row)) for row in self.rows]

    def to_dict(self) -> dict[str, Any]:
        rows = [[jsonable(_plain(v)) for v in row] for row in self.rows]
        return {"columns": list(self.columns), "rows": rows}

    def __rich__(self):
        from labcoat.ledger.view import sql_table

        return sql_table(self)


def _plain(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<{len(bytes(value))} bytes>"
    return value


def run_sql(
    store: Store, query: str, params: Sequence[Any] = (), *, timeout_s: float = 30.0
) -> SqlResult:
    if not isinstance(query, str) or not query.strip():
        raise InputError(
            'sql: the query is empty; give one SELECT statement, e.g. "SELECT id, title FROM '
            'entry_revisions"'
        )
    if timeout_s <= 0:
        raise InputError(f"timeout: must be positive seconds; got {timeout_s!r}")
    columns, rows = store.readonly_sql(query, params, timeout_s=timeout_s)
    return SqlResult(columns, rows)
