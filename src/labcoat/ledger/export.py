"""The ledger for people and for other tools.

``md`` writes a dated chronicle, in the manner of the hand-kept logbooks of large training runs:
each day, each hypothesis with its prediction (and when it was recorded), the experiment, the
result and evidence, the verdict, the conclusion, and links to parents and runs. ``json``
writes everything, history and provenance included, plus the verify report.
"""

from __future__ import annotations

import base64
import json
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from labcoat._jsonable import jsonable
from labcoat._validation import OneOf
from labcoat.ledger.store.timestamps import now

if TYPE_CHECKING:
    from labcoat.ledger.ledger import Ledger
    from labcoat.ledger.records.entries import Entry
    from labcoat.ledger.records.runs import Run

FORMATS = ("md", "json")


def export(ledger: "Ledger", format: str = "md", *, since: Any = None, until: Any = None) -> str:
    OneOf(FORMATS).check(format, "format")
    if format == "md":
        return markdown(ledger, since=since, until=until)
    return (
        json.dumps(
            everything(ledger, since=since, until=until),
            indent=1,
            ensure_ascii=False,
            allow_nan=False,
        )
        + "\n"
    )


def _time(stamp: str | None) -> str:
    return "" if not stamp else stamp[11:19] + " UTC"


def _run_line(run: "Run") -> str:
    code = "no git"
    if run.git_commit:
        code = f"commit {run.git_commit[:10]}" + (" (dirty)" if run.git_dirty else "")
    elif run.git_root:
        code = "no commit yet" + (" (dirty)" if run.git_dirty else "")
    end = run.status if run.exit_status is None else f"{run.status}, exit {run.exit_status}"
    name = f" {run.name}" if run.name else ""
    return f"run {run.id}{name}: `{' '.join(run.command)}` — {code}, {end}"


def _entry_md(entry: "Entry", history: list["Entry"], runs: dict[int, "Run"]) -> list[str]:
    first_prediction = next((h for h in history if h.prediction), None)
    first_result = next((h for h in history if h.result), None)
    out = [f"### #{entry.id} {entry.title} — **{entry.verdict}**", ""]
    if entry.tags:
        out.append(f"- Tags: {', '.join(entry.tags)}")
    if entry.prediction:
        when = (
            f" (revision {first_prediction.revision}, {_time(first_prediction.recorded_at)})"
            if first_prediction
            else ""
        )
        out.append(f"- Prediction{when}: {entry.prediction}")
    if entry.experiment:
        out.append(f"- Experiment: {entry.experiment}")
    if entry.result:
        when = (
            f" (revision {first_result.revision}, {first_result.recorded_at[:10]} "
            f"{_time(first_result.recorded_at)})"
            if first_result
            else ""
        )
        lines = entry.result.splitlines()
        out.append(f"- Result{when}: {lines[0]}")
        out.extend(f"  {line}" for line in lines[1:])
    if entry.conclusion:
        out.append(f"- Conclusion: {entry.conclusion}")
    if entry.parents:
        out.append(f"- Follows from: {', '.join(f'#{p}' for p in entry.parents)}")
    for run_id in entry.runs:
        out.append(f"- {_run_line(runs[run_id])}" if run_id in runs else f"- run {run_id}")
    if len(history) > 1:
        out.append(
            f"- Revisions: {len(history)} (last: {history[-1].change}, "
            f"{history[-1].recorded_at[:10]})"
        )
    out.append("")
    return out


def markdown(ledger: "Ledger", *, since: Any = None, until: Any = None) -> str:
    found = ledger.entries(since=since, until=until)
    runs = {r.id: r for r in ledger.runs()}
    counts = defaultdict(int)
    for e in found:
        counts[e.verdict] += 1
    summary = ", ".join(
        f"{counts[v]} {v}" for v in ("open", "confirmed", "refuted", "inconclusive") if counts[v]
    )
    out = [
        "# Ledger chronicle",
        "",
        f"Exported {now()[:19]} UTC from `{ledger.location}`: {len(found)} entries"
        + (f" ({summary})" if summary else "")
        + f", {len(runs)} runs.",
        "",
    ]
    by_day: dict[str, list[Entry]] = defaultdict(list)
    for e in found:
        by_day[e.created_at[:10]].append(e)
    for day in sorted(by_day):
        out += [f"## {day}", ""]
        for e in by_day[day]:
            out += _entry_md(e, ledger.history(e.id), runs)
    if runs:
        out += ["## Runs", ""]
        for run in runs.values():
            out.append(f"- {run.started_at[:10]} {_time(run.started_at)} — {_run_line(run)}")
        out.append("")
    return "\n".join(out)


def _blob_value(content: bytes) -> dict[str, str]:
    try:
        return {"encoding": "utf-8", "content": content.decode()}
    except UnicodeDecodeError:
        return {"encoding": "base64", "content": base64.b64encode(content).decode()}


def everything(ledger: "Ledger", *, since: Any = None, until: Any = None) -> dict[str, Any]:
    from labcoat.ledger.store.blobs import get_blob
    from labcoat.ledger.store.select import rows_where

    found = ledger.entries(since=since, until=until, checks=True)
    runs = ledger.runs()
    with ledger.storage.read() as tx:
        findings, events = rows_where(tx, "findings"), rows_where(tx, "events")
        keys = {r.diff_hash for r in runs if r.diff_hash} | {
            r.output_hash for r in runs if r.output_hash
        }
        blobs = {key: _blob_value(get_blob(tx, key) or b"") for key in sorted(keys)}
    for rows, column in ((findings, "evidence"), (events, "data")):
        for row in rows:
            row[column] = json.loads(row[column]) if row[column] else {}
    return jsonable(
        {
            "format": "labcoat-ledger",
            "version": 1,
            "location": ledger.location,
            "exported_at": now(),
            "entries": [
                {
                    **e.to_dict(),
                    "history": [h.to_dict() for h in ledger.history(e.id)],
                    "plans": [
                        {"revision": p.revision, "recorded_at": p.recorded_at, **p.plan}
                        for p in ledger.plans(e.id)
                    ],
                    "verdicts": [v.result for v in ledger.verdicts(e.id)],
                }
                for e in found
            ],
            "runs": [r.to_dict() for r in runs],
            "findings": findings,
            "events": events,
            "blobs": blobs,
            "verify": ledger.verify().to_dict(),
        },
        max_items=10**9,
    )
