"""``verify``: is the ledger still what labcoat wrote, and did each prediction precede its result?

It walks every hash chain, re-hashes every blob, checks the derived tag/link index against the
chained revisions, and (on SQLite) runs the engine's integrity check, all in one read snapshot,
and checks that the file is whole: not cut off from commits still in its ``-wal`` file.
For every resolved entry it reports where in the chain its prediction and its result were
first recorded: an intact chain is the evidence that the prediction came first.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from labcoat.ledger.store.blobs import check_blobs
from labcoat.ledger.store.chain import Break, walk
from labcoat.ledger.store.connection import Store, Tx
from labcoat.ledger.store.migrations import TABLE as MIGRATIONS
from labcoat.ledger.store.schema import CHAINS, SEALED_ON_CLOSE


@dataclass(frozen=True)
class PredictionOrder:
    """When an entry's prediction and its result were first recorded (revision and time)."""

    entry_id: int
    predicted_revision: int | None
    predicted_at: str | None
    result_revision: int
    resolved_at: str
    #: the prediction text was changed in a revision written after the result
    changed_after_result: bool = False

    @property
    def order(self) -> str:
        """``before`` | ``together`` | ``no prediction`` | ``changed after result``."""
        if self.predicted_revision is None:
            return "no prediction"
        if self.changed_after_result:
            return "changed after result"
        return "before" if self.predicted_revision < self.result_revision else "together"

    def to_dict(self) -> dict[str, Any]:
        return {
            "entry_id": self.entry_id,
            "predicted_revision": self.predicted_revision,
            "predicted_at": self.predicted_at,
            "result_revision": self.result_revision,
            "resolved_at": self.resolved_at,
            "order": self.order,
        }


@dataclass
class VerifyResult:
    """Truthy when every chain, blob and index is intact (and SQLite's own check passes)."""

    location: str
    rows: dict[str, int] = field(default_factory=dict)
    breaks: list[Break] = field(default_factory=list)
    integrity: list[str] = field(default_factory=list)
    predictions: list[PredictionOrder] = field(default_factory=list)
    #: the file on disk is not the whole ledger (its WAL is missing): a problem
    storage: list[str] = field(default_factory=list)
    #: worth knowing, not a problem (commits still in the WAL while a writer is open)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.breaks and not self.integrity and not self.storage

    def __bool__(self) -> bool:
        return self.ok

    @property
    def predicted_first(self) -> int:
        """How many resolved entries had their prediction recorded in an earlier revision."""
        return sum(p.order == "before" for p in self.predictions)

    def problems(self) -> list[str]:
        integrity = [f"integrity check: {line}" for line in self.integrity]
        return [str(b) for b in self.breaks] + integrity + list(self.storage)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "location": self.location,
            "rows": dict(self.rows),
            "problems": self.problems(),
            "breaks": [
                {"table": b.table, "row_id": b.row_id, "kind": b.kind, "detail": b.detail}
                for b in self.breaks
            ],
            "integrity": list(self.integrity),
            "notes": list(self.notes),
            "predictions": {
                "resolved": len(self.predictions),
                "predicted_first": self.predicted_first,
                "entries": [p.to_dict() for p in self.predictions],
            },
        }

    def __rich__(self):
        from labcoat.ledger.view import verify_view

        return verify_view(self)


def _check_index(tx: Tx) -> list[Break]:
    actual: dict[int, set[tuple[str, str]]] = defaultdict(set)
    for revision_id, kind, value in tx.all("SELECT revision_id, kind, value FROM entry_index"):
        actual[int(revision_id)].add((kind, value))
    breaks = []
    for row in tx.dicts("SELECT id, tags, parents, runs FROM entry_revisions ORDER BY id"):
        try:
            expected = {("tag", t) for t in json.loads(row["tags"])}
            expected |= {("parent", str(p)) for p in json.loads(row["parents"])}
            expected |= {("run", str(r)) for r in json.loads(row["runs"])}
        except (TypeError, ValueError):
            continue  # an unreadable revision is already reported as edited by its chain
        if actual.pop(int(row["id"]), set()) != expected:
            breaks.append(
                Break(
                    "entry_index",
                    int(row["id"]),
                    "edited",
                    "tags/links index no longer matches the revision",
                )
            )
    for revision_id in sorted(actual):
        breaks.append(
            Break(
                "entry_index",
                revision_id,
                "edited",
                "index rows for a revision that does not exist",
            )
        )
    return breaks


def _check_references(tx: Tx) -> list[Break]:
    missing = tx.all(
        "SELECT 'runs', id, diff_hash FROM runs WHERE diff_hash IS NOT NULL AND diff_hash NOT IN "
        "(SELECT hash FROM blobs) UNION ALL SELECT 'run_ends', id, output_hash FROM run_ends "
        "WHERE output_hash IS NOT NULL AND output_hash NOT IN (SELECT hash FROM blobs)"
    )
    return [
        Break(table, int(row_id), "missing", f"blob {key[:19]}… it refers to was deleted")
        for table, row_id, key in missing
    ]


def _prediction_order(tx: Tx) -> list[PredictionOrder]:
    state: dict[int, dict[str, Any]] = {}
    for row in tx.dicts(
        "SELECT entry_id, revision, recorded_at, prediction, result FROM entry_revisions ORDER BY "
        "id"
    ):
        s = state.setdefault(int(row["entry_id"]), {"pred": None, "result": None, "changed": False})
        if row["prediction"] and s["pred"] is None:
            s["pred"] = (int(row["revision"]), row["recorded_at"], row["prediction"])
        if s["result"] is not None and row["prediction"] != s["result"][2]:
            s["changed"] = True
        if row["result"] and s["result"] is None:
            s["result"] = (int(row["revision"]), row["recorded_at"], row["prediction"])
    out = []
    for entry_id, s in sorted(state.items()):
        if s["result"] is None:
            continue
        pred = s["pred"]
        out.append(
            PredictionOrder(
                entry_id=entry_id,
                predicted_revision=None if pred is None else pred[0],
                predicted_at=None if pred is None else pred[1],
                result_revision=s["result"][0],
                resolved_at=s["result"][1],
                changed_after_result=s["changed"],
            )
        )
    return out


def verify(store: Store) -> VerifyResult:
    result = VerifyResult(location=store.location)
    tables = store.table_names()
    with store.read() as tx:
        for spec in CHAINS:
            if spec.table not in tables:  # an older ledger opened read-only: not migrated
                continue
            seen, breaks = walk(tx, spec)
            result.rows[spec.table] = seen
            result.breaks.extend(breaks)
        result.rows["blobs"], blob_breaks = check_blobs(tx)
        result.breaks.extend(blob_breaks)
        result.breaks.extend(_check_references(tx))
        result.breaks.extend(_check_index(tx))
        result.predictions = _prediction_order(tx)
    result.integrity = store.check_integrity()
    result.storage, result.notes = store.storage_problems(sealed_on_close=_sealed_on_close(store))
    return result


def _sealed_on_close(store: Store) -> bool:
    """Whether the seal-on-close migration was applied (older ledgers were left in WAL mode
    when closed)."""
    if MIGRATIONS not in store.table_names():
        return False
    with store.read() as tx:
        return (
            tx.value(f"SELECT 1 FROM {MIGRATIONS} WHERE name = ?", (SEALED_ON_CLOSE,)) is not None
        )
