"""Reading a run's log records back from the ledger: filters, templates and the background."""

from __future__ import annotations

import json
import re
from typing import Any, Iterator

from labcoat.errors import InputError
from labcoat.logs.classify import LEVELS, RANK_OF

#: how many earlier healthy runs make the background
HISTORY = 20

_COLUMNS = (
    "seq, time, rank, local_rank, node, step, level, stream, logger, template_id, kinds, text"
)


def run_with_logs(ledger: Any, run: str | int) -> int:
    """``RUN`` as the command line gives it (an id or ``last``) -> a run id with log records."""
    with ledger.storage.read() as tx:
        if str(run) == "last":
            found = tx.value("SELECT max(run_id) FROM log_sources")
            if found is None:
                raise InputError(
                    f"logs: no run in {ledger.location} has captured logs yet; record one with "
                    "`labcoat run -- CMD`"
                )
            return int(found)
        if not str(run).isdigit():
            raise InputError(
                f"logs: RUN must be a run id, `last` or a folder of log files; got {run!r}"
            )
        run_id = int(run)
        if not tx.value("SELECT count(*) FROM runs WHERE id = ?", (run_id,)):
            raise InputError(f"logs: there is no run {run_id} in {ledger.location}")
        if not tx.value("SELECT count(*) FROM log_sources WHERE run_id = ?", (run_id,)):
            raise InputError(
                f"logs: run {run_id} has no captured logs (it was not recorded by `labcoat run`, "
                "or by a labcoat older than the logs engine)"
            )
        return run_id


def templates(ledger: Any, run_id: int) -> dict[int, dict[str, Any]]:
    with ledger.storage.read() as tx:
        rows = tx.all(
            "SELECT template_id, template, count, ranks, level, first_seq FROM log_templates "
            "WHERE run_id = ?",
            (run_id,),
        )
    return {
        r[0]: {"template": r[1], "count": r[2], "ranks": json.loads(r[3]), "level": r[4]}
        for r in rows
    }


def background(ledger: Any, run_id: int) -> tuple[dict[str, set[str]], int]:
    """The templates of the latest earlier healthy runs (status ok, and no logs finding that
    failed or warned: a run that exits 0 with a NaN loss is no background), each with the
    signals its lines showed there, and how many runs those are."""
    with ledger.storage.read() as tx:
        runs = [
            r[0]
            for r in tx.all(
                "SELECT DISTINCT s.run_id FROM log_sources s JOIN run_ends e ON e.run_id = "
                "s.run_id WHERE s.run_id < ? AND e.status = 'ok' AND NOT EXISTS (SELECT 1 FROM "
                "findings f WHERE f.run_id = s.run_id AND f.source = 'logs' AND f.status IN "
                "('fail', 'warn')) ORDER BY s.run_id DESC LIMIT ?",
                (run_id, HISTORY),
            )
        ]
        if not runs:
            return {}, 0
        marks = ", ".join("?" for _ in runs)
        texts = tx.all(
            f"SELECT DISTINCT template, kinds FROM log_templates WHERE run_id IN ({marks})", runs
        )
    out: dict[str, set[str]] = {}
    for template, kinds in texts:
        if template:
            out.setdefault(template, set()).update((kinds or "").split(",") if kinds else ())
    return out, len(runs)


def last_steps(ledger: Any, run_id: int) -> dict[Any, int]:
    """rank -> the last step its processes were told (a hung rank's step, though it wrote
    nothing in it)."""
    with ledger.storage.read() as tx:
        found = tx.all(
            "SELECT rank, max(last_step) FROM log_sources WHERE run_id = ? AND last_step IS NOT "
            "NULL GROUP BY rank",
            (run_id,),
        )
    return {r: s for r, s in found}


def _steps(value: str | None) -> tuple[int | None, int | None]:
    if value is None:
        return None, None
    m = re.fullmatch(r"\s*(-?\d*)\s*\.\.\s*(-?\d*)\s*|\s*(-?\d+)\s*", value)
    if not m:
        raise InputError(f"--step: expected A..B, A.., ..B or one step N; got {value!r}")
    if m.group(3) is not None:
        return int(m.group(3)), int(m.group(3))
    a, b = m.group(1), m.group(2)
    return (int(a) if a else None), (int(b) if b else None)


def rows(
    ledger: Any,
    run_id: int,
    *,
    rank: int | None = None,
    level: str | None = None,
    step: str | None = None,
    grep: str | None = None,
    batch: int = 5000,
) -> Iterator[dict[str, Any]]:
    """The run's records in order, filtered; streamed, never all in memory."""
    clauses, params = ["run_id = ?"], [run_id]
    if rank is not None:
        clauses.append("rank = ?")
        params.append(rank)
    if level is not None:
        name = level.upper()
        if name not in LEVELS:
            raise InputError(f"--level: expected one of {', '.join(LEVELS)}; got {level!r}")
        wanted = [lv for lv in LEVELS if RANK_OF[lv] >= RANK_OF[name]]
        clauses.append(f"level IN ({', '.join('?' for _ in wanted)})")
        params.extend(wanted)
    lo, hi = _steps(step)
    if lo is not None:
        clauses.append("step >= ?")
        params.append(lo)
    if hi is not None:
        clauses.append("step <= ?")
        params.append(hi)
    pattern = None
    if grep is not None:
        try:
            pattern = re.compile(grep)
        except re.error as exc:
            raise InputError(f"--grep: {grep!r} is not a regular expression ({exc})") from None
    sql = f"SELECT {_COLUMNS} FROM log_lines WHERE {' AND '.join(clauses)} ORDER BY seq"
    with ledger.storage.read() as tx:
        for row in tx.dicts(sql, params, batch=batch):
            if pattern is None or pattern.search(row["text"]):
                yield row


__all__ = ["background", "rows", "run_with_logs", "templates"]
