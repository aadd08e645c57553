"""Plans and verdicts: a hypothesis' pre-registered analysis and what the ledger computed from it.

A plan is sealed into its own hash chain beside the entry revision it was written with (the
row keeps that revision's hash), so it provably existed before every later row; a change is a
new plan revision, never an edit. A verdict row holds what :mod:`labcoat.verdicts` computed,
sealed with the entry revision that resolved the entry. Rows hold plain JSON; this module does
not know what a plan means, nor how a family's p-values combine (that is
:mod:`labcoat.verdicts.judge`, a layer above): it stores, returns and chains them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable

from labcoat.ledger.store.chain import append
from labcoat.ledger.store.connection import Tx
from labcoat.ledger.store.schema import ENTRY_PLANS, ENTRY_VERDICTS
from labcoat.ledger.store.select import encode
from labcoat.ledger.store.timestamps import now


@dataclass(frozen=True)
class StoredPlan:
    entry_id: int
    revision: int
    recorded_at: str
    plan: dict[str, Any]
    review: list[dict[str, Any]]
    entry_hash: str
    hash: str


@dataclass(frozen=True)
class StoredVerdict:
    id: int
    entry_id: int
    plan_revision: int
    recorded_at: str
    verdict: str
    family: str | None
    pvalue: float | None
    n_paired: int
    deviations: int
    fingerprints: dict[str, str]
    result: dict[str, Any]
    entry_hash: str
    hash: str


def has_tables(tx: Tx) -> bool:
    return tx.value("SELECT 1 FROM chain_heads WHERE name = ?", (ENTRY_PLANS.table,)) is not None


def seal_plan(
    tx: Tx,
    entry_id: int,
    plan: dict[str, Any],
    review: list[dict[str, Any]],
    entry_hash: str,
    author: str | None,
) -> StoredPlan:
    """Append the next revision of ``entry_id``'s plan."""
    revision = (
        int(
            tx.value(
                "SELECT COALESCE(MAX(revision), 0) FROM entry_plans WHERE entry_id = ?", (entry_id,)
            )
        )
        + 1
    )
    [row_id] = append(
        tx,
        ENTRY_PLANS,
        [
            dict(
                entry_id=entry_id,
                revision=revision,
                recorded_at=now(),
                plan=encode(plan),
                review=encode(review),
                entry_hash=entry_hash,
                author=author,
            )
        ],
    )
    return _plans(tx, "id = ?", (row_id,))[0]


def _plans(tx: Tx, where: str, params: tuple) -> list[StoredPlan]:
    rows = tx.dicts(
        "SELECT entry_id, revision, recorded_at, plan, review, entry_hash, hash FROM entry_plans "
        f"WHERE {where} ORDER BY id",
        params,
    )
    return [
        StoredPlan(
            int(r["entry_id"]),
            int(r["revision"]),
            r["recorded_at"],
            json.loads(r["plan"]),
            json.loads(r["review"]) if r["review"] else [],
            r["entry_hash"],
            r["hash"],
        )
        for r in rows
    ]


def plans(tx: Tx, entry_id: int | None = None) -> list[StoredPlan]:
    """Every plan revision of an entry (or of every entry), oldest first."""
    if not has_tables(tx):
        return []
    if entry_id is None:
        return _plans(tx, "1 = 1", ())
    return _plans(tx, "entry_id = ?", (entry_id,))


def record_verdict(
    tx: Tx,
    *,
    entry_id: int,
    plan_revision: int,
    result: dict[str, Any],
    family: str | None,
    entry_hash: str,
) -> StoredVerdict:
    [row_id] = append(
        tx,
        ENTRY_VERDICTS,
        [
            dict(
                entry_id=entry_id,
                plan_revision=plan_revision,
                recorded_at=now(),
                verdict=result["verdict"],
                family=family,
                pvalue=result.get("pvalue"),
                n_paired=result["n"]["paired"],
                deviations=len(result.get("deviations", [])),
                fingerprints=encode(result.get("fingerprints", {})),
                result=encode(result),
                entry_hash=entry_hash,
            )
        ],
    )
    return _verdicts(tx, "id = ?", (row_id,))[0]


def _verdicts(tx: Tx, where: str, params: tuple) -> list[StoredVerdict]:
    rows = tx.dicts(
        "SELECT id, entry_id, plan_revision, recorded_at, verdict, family, pvalue, n_paired, "
        f"deviations, fingerprints, result, entry_hash, hash FROM entry_verdicts WHERE {where} "
        "ORDER BY id",
        params,
    )
    return [
        StoredVerdict(
            int(r["id"]),
            int(r["entry_id"]),
            int(r["plan_revision"]),
            r["recorded_at"],
            r["verdict"],
            r["family"],
            None if r["pvalue"] is None else float(r["pvalue"]),
            int(r["n_paired"]),
            int(r["deviations"]),
            json.loads(r["fingerprints"]),
            json.loads(r["result"]),
            r["entry_hash"],
            r["hash"],
        )
        for r in rows
    ]


def verdicts(tx: Tx, entry_id: int | None = None) -> list[StoredVerdict]:
    """Computed verdicts (of one entry, or all), oldest first."""
    if not has_tables(tx):
        return []
    if entry_id is None:
        return _verdicts(tx, "1 = 1", ())
    return _verdicts(tx, "entry_id = ?", (entry_id,))


#: how an entry's verdict came about, as ``ledger list`` and the report show it
PLANNED, DEVIATING, UNPLANNED, REGISTERED = "planned", "deviating", "unplanned", "registered"


def plan_status(tx: Tx, entries: Iterable[Any]) -> dict[int, str]:
    """Per entry id: ``planned`` (its verdict was computed from its plan, by the plan),
    ``deviating`` (computed, with deviations), ``unplanned`` (resolved by hand),
    ``registered`` (open, with a plan) or ``""`` (open, no plan)."""
    entries = list(entries)
    if not has_tables(tx):
        return {e.id: ("" if e.is_open else UNPLANNED) for e in entries}
    planned_ids = {int(r[0]) for r in tx.all("SELECT DISTINCT entry_id FROM entry_plans")}
    computed = {v.entry_hash: v for v in _verdicts(tx, "1 = 1", ())}
    out = {}
    for e in entries:
        if e.is_open:
            out[e.id] = REGISTERED if e.id in planned_ids else ""
            continue
        v = computed.get(e.hash)
        out[e.id] = UNPLANNED if v is None else (DEVIATING if v.deviations else PLANNED)
    return out
