"""Hash chains: every appended row commits to its content and to the row before it.

Each chained table has explicit, consecutive ids and two extra columns, ``prev_hash`` and
``hash`` = sha256(table, previous hash, canonical JSON of the row's content). The head of each
chain (last id and hash) is kept in ``chain_heads`` and moved in the same transaction as the
rows. Walking a chain therefore finds a row edited in place (its hash no longer matches), a row
deleted or inserted by hand (the links or the ids no longer follow) and rows cut from the end
(the head no longer matches). Appends happen under the store's write lock, so the order is the
commit order: a row provably existed before every row after it.
"""

from __future__ import annotations

import hashlib
import math
import operator
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from labcoat._jsonable import dumps
from labcoat._validation import article
from labcoat.ledger.store.connection import Tx

GENESIS = "0" * 64


@dataclass(frozen=True)
class ChainSpec:
    """A chained table: its name and the hashed content columns with their types (``id`` first).

    The types matter: SQLite converts a value to its column's affinity (3.0 into an INTEGER
    column reads back as 3), so every value is coerced to its column's type before it is hashed.
    """

    table: str
    fields: tuple[tuple[str, type], ...]

    @classmethod
    def of(cls, table: str, **types: type) -> "ChainSpec":
        return cls(table, tuple(types.items()))

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.fields)

    def insert_sql(self) -> str:
        names = (*self.columns, "prev_hash", "hash")
        return (
            f"INSERT INTO {self.table} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
        )


@dataclass(frozen=True)
class Break:
    """One place where a chain does not hold, with what it means."""

    table: str
    row_id: int | None
    kind: str  # "edited" | "relinked" | "missing" | "head"
    detail: str

    def __str__(self) -> str:
        where = f"{self.table} row {self.row_id}" if self.row_id is not None else self.table
        return f"{where}: {self.detail}"


def canonical(content: Mapping[str, Any]) -> bytes:
    """The bytes that are hashed: sorted keys, no spaces, UTF-8, no NaN."""
    return dumps(content).encode()


def link_hash(table: str, prev_hash: str, content: Mapping[str, Any]) -> str:
    digest = hashlib.sha256()
    digest.update(table.encode())
    digest.update(b"\n")
    digest.update(prev_hash.encode())
    digest.update(b"\n")
    digest.update(canonical(content))
    return digest.hexdigest()


def storable(value: Any, kind: type = str) -> Any:
    """``value`` as a column of type ``kind`` (int, float or str) stores and returns it, so
    the hash reads back identically on both databases.

    Booleans and numpy scalars become plain numbers, an integral float an int, other scalars
    their text; NUL characters (which PostgreSQL text cannot hold) become ``\ufffd``.
    Non-finite floats are refused: callers keep them as text.
    """
    if value is None:
        return None
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()  # numpy / torch scalars
    if kind is int:
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return operator.index(value)
    if kind is float:
        if isinstance(value, str):
            raise TypeError(f"expected a number for a float column; got {value!r}")
        number = float(value)
        if not math.isfinite(number):
            raise ValueError(f"non-finite float {value!r} cannot be stored in a chained column")
        return number
    if isinstance(value, (dict, list, tuple, set, bytes)):
        raise TypeError(
            f"cannot store {article(type(value).__name__)} in a text column; encode it first"
        )
    return str(value).replace("\x00", "\ufffd")


def append(tx: Tx, spec: ChainSpec, rows: Sequence[Mapping[str, Any]]) -> list[int]:
    """Append ``rows`` (dicts without ``id``) to the chain; returns their ids. Needs the write
    lock."""
    head = tx.one("SELECT last_id, hash FROM chain_heads WHERE name = ?", (spec.table,))
    if head is None:
        raise RuntimeError(f"chain {spec.table!r} has no head row; the schema was not migrated")
    last_id, prev = int(head[0]), head[1]
    values: list[list[Any]] = []
    ids: list[int] = []
    for row in rows:
        last_id += 1
        content = {"id": last_id, **{c: storable(row.get(c), kind) for c, kind in spec.fields[1:]}}
        digest = link_hash(spec.table, prev, content)
        values.append([content[c] for c in spec.columns] + [prev, digest])
        ids.append(last_id)
        prev = digest
    if values:
        tx.executemany(spec.insert_sql(), values)
        tx.execute(
            "UPDATE chain_heads SET last_id = ?, hash = ? WHERE name = ?",
            (last_id, prev, spec.table),
        )
    return ids


def walk(tx: Tx, spec: ChainSpec) -> tuple[int, list[Break]]:
    """Check every row of one chain; returns (rows seen, breaks). One fault gives one break."""
    breaks: list[Break] = []
    expected_prev, expected_id, seen = GENESIS, 1, 0
    columns = ", ".join((*spec.columns, "prev_hash", "hash"))
    for row in tx.dicts(f"SELECT {columns} FROM {spec.table} ORDER BY id"):
        seen += 1
        row_id = row["id"]
        if row_id != expected_id:
            breaks.append(
                Break(
                    spec.table, row_id, "missing", f"rows {expected_id}..{row_id - 1} were deleted"
                )
                if row_id > expected_id
                else Break(spec.table, row_id, "missing", f"id {row_id} appears out of order")
            )
        elif row["prev_hash"] != expected_prev:
            breaks.append(
                Break(
                    spec.table,
                    row_id,
                    "relinked",
                    "does not follow the row before it (a row was replaced or inserted by hand)",
                )
            )
        content = {c: row[c] for c in spec.columns}
        try:
            actual = link_hash(spec.table, row["prev_hash"], content)
        except ValueError:
            actual = ""
        if actual != row["hash"]:
            breaks.append(
                Break(
                    spec.table,
                    row_id,
                    "edited",
                    "content changed after it was written (hash mismatch)",
                )
            )
        expected_prev, expected_id = row["hash"], row_id + 1
    head = tx.one("SELECT last_id, hash FROM chain_heads WHERE name = ?", (spec.table,))
    if head is None:
        breaks.append(Break(spec.table, None, "head", "its chain head is missing"))
    elif int(head[0]) != expected_id - 1 or head[1] != expected_prev:
        breaks.append(
            Break(
                spec.table,
                None,
                "head",
                f"the chain head says {head[0]} rows but the table ends at row {expected_id - 1} "
                "(rows were removed from the end or added by hand)",
            )
        )
    return seen, breaks
