"""Named, recorded, transactional schema migrations (the sqlite-utils idea, on both databases).

A :class:`Migrations` set registers functions by name with a decorator, in order, and refuses
duplicates. Applying a migration runs it and records its name in ``_labcoat_migrations`` in the
same transaction, so a crash leaves either both or neither. Every step re-reads what is applied
after taking the write lock, so two processes opening a new ledger at once migrate it once.
A ledger that records a migration this code does not know was written by a newer labcoat and
is refused rather than guessed at.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable

from labcoat.ledger.store.connection import PG_SCHEMA, POSTGRES, LedgerError, Store, Tx

TABLE = "_labcoat_migrations"

Step = Callable[[Tx], None]


@dataclass(frozen=True)
class AppliedMigration:
    migration_set: str
    name: str
    applied_at: str


class Migrations:
    """An ordered set of migrations called ``name``; register steps with ``@migrations()``."""

    def __init__(self, name: str):
        self.name = name
        self._steps: dict[str, Step] = {}

    def __call__(self, fn: Step | None = None, *, name: str | None = None):
        def register(step: Step) -> Step:
            key = name or step.__name__
            if key in self._steps:
                raise ValueError(
                    f"migration set {self.name!r} already has a migration named {key!r}"
                )
            self._steps[key] = step
            return step

        return register(fn) if fn is not None else register

    def names(self) -> list[str]:
        return list(self._steps)

    def applied(self, store: Store) -> list[AppliedMigration]:
        """What is recorded as applied, oldest first; read-only."""
        if TABLE not in store.table_names():
            return []
        with store.read() as tx:
            return self._applied(tx)

    def _applied(self, tx: Tx) -> list[AppliedMigration]:
        rows = tx.all(
            f"SELECT migration_set, name, applied_at FROM {TABLE} WHERE migration_set = ? ORDER BY "
            "applied_at, name",
            (self.name,),
        )
        return [AppliedMigration(*row) for row in rows]

    def pending(self, store: Store) -> list[str]:
        """Names not applied yet, in the order they will run; read-only."""
        done = {m.name for m in self.applied(store)}
        self._refuse_unknown(store, done)
        return [n for n in self._steps if n not in done]

    def _refuse_unknown(self, store: Store, done: set[str]) -> None:
        unknown = sorted(done - set(self._steps))
        if unknown:
            raise LedgerError(
                f"ledger {store.location}: its schema has migrations this labcoat does not know ("
                f"{', '.join(unknown)}); it was written by a newer labcoat: upgrade labcoat to use "
                "it"
            )

    def apply(self, store: Store) -> list[str]:
        """Run every pending migration, one transaction each; returns the names that ran here."""
        ran: list[str] = []
        with store.write() as tx:
            if tx.dialect is POSTGRES:
                tx.execute(f"CREATE SCHEMA IF NOT EXISTS {PG_SCHEMA}")
            tx.execute(
                f"CREATE TABLE IF NOT EXISTS {TABLE} (migration_set TEXT NOT NULL, name TEXT NOT "
                "NULL, applied_at TEXT NOT NULL, PRIMARY KEY (migration_set, name))"
            )
        for name, step in self._steps.items():
            with store.write() as tx:
                done = {m.name for m in self._applied(tx)}
                self._refuse_unknown(store, done)
                if name in done:  # another process got here first
                    continue
                step(tx)
                tx.execute(
                    f"INSERT INTO {TABLE} (migration_set, name, applied_at) VALUES (?, ?, ?)",
                    (
                        self.name,
                        name,
                        datetime.now(timezone.utc).isoformat(timespec="microseconds"),
                    ),
                )
            ran.append(name)
        return ran
