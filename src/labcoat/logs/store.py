"""Reading a run's log records back from the ledger: filters, templates and the background."""

from __future__ import annotations

import json
import re
from typing import Any, Iterator

from labcoat.errors import InputError
from labcoat.logs.classify import LEVELS, RANK_OF

#: how many earlier healthy runs make the background
HISTORY = 20

_NOBODY = (None, None, None)


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
    batch: int = 8,
) -> Iterator[dict[str, Any]]:
    """The run's records in order (the columns of the ``log_lines`` view), filtered; streamed a
    few blocks at a time, never all in memory."""
    wanted_levels: list[str] = []
    if level is not None:
        name = level.upper()
        if name not in LEVELS:
            raise InputError(f"--level: expected one of {', '.join(LEVELS)}; got {level!r}")
        wanted_levels = [lv for lv in LEVELS if RANK_OF[lv] >= RANK_OF[name]]
    lo, hi = _steps(step)
    pattern = None
    if grep is not None:
        try:
            pattern = re.compile(grep)
        except re.error as exc:
            raise InputError(f"--grep: {grep!r} is not a regular expression ({exc})") from None
    wanted = set(wanted_levels) if level is not None else None
    with ledger.storage.read() as tx:
        who = {
            s: (r, lr, nd)
            for s, r, lr, nd in tx.all(
                "SELECT source, rank, local_rank, node FROM log_sources WHERE run_id = ?", (run_id,)
            )
        }
        blocks = tx.dicts(
            "SELECT first_seq, data FROM log_blocks WHERE run_id = ? ORDER BY block",
            (run_id,),
            batch=batch,
        )
        for block in blocks:
            seq = block["first_seq"]
            for when, source, at, lv, stream, logger, tid, kinds, text in json.loads(block["data"]):
                seq += 1
                r, lr, nd = who.get(source, _NOBODY)
                if (
                    (rank is not None and r != rank)
                    or (wanted is not None and lv not in wanted)
                    or (lo is not None and (at is None or at < lo))
                    or (hi is not None and (at is None or at > hi))
                    or (pattern is not None and not pattern.search(text))
                ):
                    continue
                yield {
                    "seq": seq - 1,
                    "time": None if when is None else float(when),
                    "rank": r,
                    "local_rank": lr,
                    "node": nd,
                    "step": at,
                    "level": lv,
                    "stream": stream,
                    "logger": logger,
                    "template_id": tid,
                    "kinds": kinds,
                    "text": text,
                }


__all__ = ["background", "rows", "run_with_logs", "templates"]
