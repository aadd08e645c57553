"""Change a ledger behind labcoat's back, with plain SQL, as a person with a SQL shell would."""

from __future__ import annotations

import sqlite3
from typing import Any, Sequence

from labcoat.ledger.store.connection import PG_SCHEMA, is_postgres_url


def raw_sql(location: str, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
    """Execute one statement with a plain read-write connection, bypassing labcoat."""
    if is_postgres_url(location):
        import psycopg

        with psycopg.connect(location, autocommit=True) as conn:
            conn.execute(f"SET search_path TO {PG_SCHEMA}")
            cur = conn.execute(sql.replace("?", "%s"), tuple(params))
            return cur.fetchall() if cur.description else []
    conn = sqlite3.connect(location, isolation_level=None)
    try:
        cur = conn.execute(sql, tuple(params))
        return cur.fetchall()
    finally:
        conn.close()
