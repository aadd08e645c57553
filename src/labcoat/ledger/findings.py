"""Doctor and watch findings, stored against their run, and doctor checks as hypotheses.

A doctor check *falsifies* a failure mode ("labels are shuffled relative to inputs") by testing
what a healthy setup *predicts* ("the model can overfit a small batch"). Recorded as an entry,
the suspected failure mode is the hypothesis (title) and the healthy prediction is what was
predicted before the check ran. The check's status then maps onto the hypothesis's verdict:

========  ===============  =================================================================
status    verdict          why
========  ===============  =================================================================
pass      ``refuted``      the healthy prediction held, so this failure mode is ruled out
fail      ``confirmed``    the prediction was falsified: the failure mode is present
warn      ``inconclusive`` suspicious, but not proof either way
skip      ``inconclusive`` the check did not apply, so nothing was tested
========  ===============  =================================================================

The prediction and the result are written as two revisions, in that order, so the ledger shows
the prediction (declared with the check, before it ran) preceding its observation.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from labcoat.errors import InputError
from labcoat.findings import SEVERITY, STATUSES, Finding
from labcoat.ledger import entries
from labcoat.ledger.chain import append
from labcoat.ledger.schema import FINDINGS
from labcoat.ledger.storage import Tx
from labcoat.ledger.timestamps import now

#: a check's status -> the verdict on the failure mode it falsifies (see the module docstring)
VERDICT_FOR_STATUS: dict[str, str] = {
    "pass": "refuted",
    "fail": "confirmed",
    "warn": "inconclusive",
    "skip": "inconclusive",
}

_CONCLUSION = {
    "pass": "Ruled out: the healthy prediction held, so this failure mode is not what is wrong here.",
    "fail": "Confirmed: the prediction was falsified; the {layer} layer is broken here. Fix it before trusting later layers.",
    "warn": "Inconclusive: the observation is suspicious but does not prove the failure; read the evidence.",
    "skip": "Not tested: the check did not apply ({message}).",
}


def as_finding(item: Any) -> Finding:
    if isinstance(item, Finding):
        finding = item
    elif isinstance(item, Mapping):
        finding = Finding.from_dict(item)
    else:
        raise InputError(
            f"findings: expected labcoat.Finding objects (or their to_dict()); got a {type(item).__name__}"
        )
    if finding.status not in STATUSES:
        raise InputError(f"findings: status must be one of {', '.join(STATUSES)}; got {finding.status!r}")
    for name in ("step", "rank"):
        value = getattr(finding, name)
        if value is not None and not float(value).is_integer():
            raise InputError(f"findings: {name} must be a whole number; got {value!r} in check {finding.check!r}")
    return finding


def _evidence_json(evidence: Mapping[str, Any]) -> str:
    from labcoat._jsonable import jsonable

    return json.dumps(jsonable(dict(evidence)), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def result_text(finding: Finding) -> str:
    text = f"{finding.status}: {finding.message}"
    if finding.evidence:
        text += "\nevidence: " + _evidence_json(finding.evidence)
    return text


def _as_hypothesis(tx: Tx, finding: Finding, *, run_id: int | None, source: str) -> int:
    """Write the check as an entry: prediction first, then the observed result and verdict."""
    entry = entries.create(
        tx,
        title=finding.falsifies or f"{finding.check}: the setup is broken in the {finding.layer} layer",
        prediction=finding.predicts or None,
        experiment=f"{source} check {finding.check} ({finding.layer} layer)",
        tags=(source, finding.layer, finding.check) if finding.layer else (source, finding.check),
        runs=(run_id,) if run_id is not None else (),
    )
    entries.resolve(
        tx,
        entry.id,
        result=result_text(finding),
        verdict=VERDICT_FOR_STATUS[finding.status],
        conclusion=_CONCLUSION[finding.status].format(layer=finding.layer or "this", message=finding.message),
    )
    return entry.id


def record(
    tx: Tx, findings: Iterable[Any], *, run_id: int | None, source: str, as_hypotheses: bool
) -> list[int]:
    """Append ``findings`` (and their hypothesis entries) in the open write transaction."""
    items = [as_finding(f) for f in findings]
    stamp = now()
    rows = []
    for f in items:
        entry_id = _as_hypothesis(tx, f, run_id=run_id, source=source) if as_hypotheses else None
        rows.append(
            {
                "run_id": run_id,
                "entry_id": entry_id,
                "source": source,
                "recorded_at": stamp,
                "check_id": f.check,
                "layer": f.layer,
                "status": f.status,
                "severity": SEVERITY[f.status],
                "message": f.message,
                "evidence": _evidence_json(f.evidence or {}),
                "falsifies": f.falsifies,
                "predicts": f.predicts,
                "step": f.step,
                "rank": f.rank,
                "duration_s": None if f.duration_s is None else float(f.duration_s),
            }
        )
    return append(tx, FINDINGS, rows)


def _from_row(row: Mapping[str, Any]) -> Finding:
    return Finding(
        check=row["check_id"],
        layer=row["layer"],
        status=row["status"],
        message=row["message"] or "",
        evidence=json.loads(row["evidence"]) if row["evidence"] else {},
        falsifies=row["falsifies"] or "",
        predicts=row["predicts"] or "",
        step=row["step"],
        rank=row["rank"],
        duration_s=row["duration_s"],
    )


def query(
    tx: Tx, *, run_id: int | None = None, source: str | None = None, status: Any = None, entry_id: int | None = None
) -> list[Finding]:
    conditions, params = [], []
    for column, value in (("run_id", run_id), ("source", source), ("entry_id", entry_id)):
        if value is not None:
            conditions.append(f"{column} = ?")
            params.append(value)
    if status is not None:
        statuses = (status,) if isinstance(status, str) else tuple(status)
        bad = [s for s in statuses if s not in STATUSES]
        if bad:
            raise InputError(f"status: must be among {', '.join(STATUSES)}; got {bad[0]!r}")
        conditions.append("status IN (" + ", ".join("?" * len(statuses)) + ")")
        params.extend(statuses)
    sql = (
        "SELECT check_id, layer, status, message, evidence, falsifies, predicts, step, rank, duration_s "
        "FROM findings"
    )
    if conditions:
        sql += " WHERE " + " AND ".join(conditions)
    return [_from_row(r) for r in tx.dicts(sql + " ORDER BY id", params)]
