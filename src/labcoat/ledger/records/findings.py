"""Doctor and watch findings, stored against the run that produced them.

A doctor or a watch session is one run; each check's :class:`~labcoat.findings.Finding` is a
row of that run (check, layer, status, message, evidence, what it falsifies and predicts), to
be queried by run, source, status or check. Hypotheses stay the user's: checks are not entries.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from labcoat._validation import OneOf
from labcoat.errors import InputError
from labcoat.findings import SEVERITY, STATUSES, Finding
from labcoat.ledger.store.chain import append
from labcoat.ledger.store.connection import Tx
from labcoat.ledger.store.schema import FINDINGS
from labcoat.ledger.store.select import encode, record, rows_where, where
from labcoat.ledger.store.timestamps import now


def as_finding(item: Any) -> Finding:
    if isinstance(item, Finding):
        finding = item
    elif isinstance(item, Mapping):
        finding = Finding.from_dict(item)
    else:
        raise InputError(
            "findings: expected labcoat.Finding objects (or their to_dict()); got a "
            f"{type(item).__name__}"
        )
    if finding.status not in STATUSES:
        raise InputError(
            f"findings: status must be one of {', '.join(STATUSES)}; got {finding.status!r}"
        )
    for name in ("step", "rank"):
        value = getattr(finding, name)
        if value is not None and not float(value).is_integer():
            raise InputError(
                f"findings: {name} must be a whole number; got {value!r} in check {finding.check!r}"
            )
    return finding


def record_all(tx: Tx, findings: Iterable[Any], *, run_id: int, source: str) -> list[int]:
    """Append ``findings`` to run ``run_id`` in the open write transaction; returns their ids."""
    stamp = now()
    rows = [
        {
            **{
                name: getattr(f, name)
                for name in ("layer", "status", "message", "falsifies", "predicts", "step", "rank")
            },
            "run_id": run_id,
            "source": source,
            "recorded_at": stamp,
            "check_id": f.check,
            "severity": SEVERITY[f.status],
            "evidence": encode(f.evidence or {}),
            "duration_s": None if f.duration_s is None else float(f.duration_s),
        }
        for f in map(as_finding, findings)
    ]
    return append(tx, FINDINGS, rows)


#: findings named as :class:`~labcoat.findings.Finding` fields, with where they came from
SOURCE = """(SELECT id, run_id, entry_id, source, check_id AS "check", layer, status,
    COALESCE(message, '') AS message, evidence,
    falsifies, predicts, step, rank, duration_s FROM findings) q"""


def query(tx: Tx, *, status: Any = None, **columns: Any) -> list[Finding]:
    """Findings in the order they were recorded; ``columns``: run_id, source, entry_id, check."""
    statuses = (status,) if isinstance(status, str) else status
    for s in statuses or ():
        OneOf(STATUSES).check(s, "status")
    renamed = {'"check"' if k == "check" else k: v for k, v in columns.items()}
    rows = rows_where(tx, SOURCE, where(status=statuses, **renamed))
    return [record(Finding, row, json_columns=("evidence",)) for row in rows]
