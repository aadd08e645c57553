"""One page from a ledger: for every run, a section per engine whose findings or results it holds
(in the order of :mod:`labcoat.engines`), then the notebook's chronicle. A stored result is drawn
by the same ``section`` that draws it live."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from labcoat.report.page import Page, Section


def stored_results(events: Sequence[Any]) -> list[tuple[str, Any]]:
    """``(name, result)`` for every result stored in ``events`` (:func:`labcoat.ledger.record`
    keeps each as an event of kind ``"result"``), read back as its class."""
    from labcoat.engines import load_result
    from labcoat.ledger.persist import RESULT_EVENT

    return [
        (e.data.get("name", ""), load_result(e.data["result"]))
        for e in events
        if e.kind == RESULT_EVENT and isinstance(e.data.get("result"), dict)
    ]


def engine_section(engine: Any, run: Any, findings: list, events: list) -> Section | None:
    """One engine's section of one run: its descriptor's ``section`` when it names one, else
    each stored result through the very ``section`` that draws it live, else its findings as a
    list; ``None`` when the run holds nothing of the engine's."""
    from labcoat.ledger.persist import RESULT_EVENT
    from labcoat.report.ladder import findings_list
    from labcoat.result import load

    results = stored_results(events)
    plain = [e for e in events if e.kind != RESULT_EVENT]
    if not (findings or results or (engine.section and plain)):
        return None
    title = _title(engine.name.capitalize(), run)
    id = f"{engine.name}-run-{run.id}"
    if engine.section is not None:
        return load(engine.section)(run, findings, plain, results, title=title, id=id)
    if not results:
        return Section(title, findings_list(f.to_dict() for f in findings), id=id)
    from labcoat.report.html import stored_sections

    return Section(title, stored_sections(results, id=id), id=id)


def _title(kind: str, run: Any) -> str:
    name = f" · {run.name}" if getattr(run, "name", None) else ""
    return f"{kind} · run {run.id}{name} · {run.started_at[:16].replace('T', ' ')}"


def from_ledger(
    ledger: Any,
    *,
    runs: Sequence[int] | None = None,
    since: str | None = None,
    title: str = "labcoat report",
) -> Page:
    """A page with a section per recorded doctor run, watched run and result, then the chronicle."""
    from labcoat.report.sections.ledger import ledger_section

    chosen = [
        r
        for r in ledger.runs()
        if (not runs or r.id in runs) and (since is None or r.started_at >= since)
    ]
    if runs:
        missing = sorted(set(runs) - {r.id for r in chosen})
        if missing:
            from labcoat.errors import InputError

            raise InputError(
                f"--run: no run {', '.join(map(str, missing))} in {ledger.location}; "
                "`labcoat ledger runs` lists them"
            )
    page = Page(title, subtitle=f"from {ledger.location} · {len(chosen)} runs")
    from labcoat.engines import engines

    for run in chosen:
        for engine in engines():
            found = ledger.findings(run=run.id, source=engine.name)
            events = ledger.events(run=run.id, source=engine.name)
            section = engine_section(engine, run, found, events)
            if section is not None:
                page.add(section)
    entries = ledger.entries(since=since) if since else ledger.entries()
    status = ledger.plan_status(entries) if hasattr(ledger, "plan_status") else None
    page.add(ledger_section(entries, chosen, plan_status=status))
    return page


@dataclass(frozen=True)
class Written:
    """Where :func:`write` put the page, how large it is and which sections it holds."""

    path: Path
    bytes: int
    sections: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "bytes": self.bytes, "sections": self.sections}

    def __str__(self) -> str:
        return f"wrote {self.path} ({self.bytes / 1024:.0f} KiB, {len(self.sections)} sections)"


def write(
    output: str | Path,
    *,
    location: str | None = None,
    runs: Sequence[int] | None = None,
    since: str | None = None,
) -> Written:
    """Write the page of the ledger at ``location`` (default: the project's) to ``output``."""
    from labcoat.errors import InputError
    from labcoat.extras import require
    from labcoat.ledger import Ledger
    from labcoat.outputs import check_writable

    require("report", "labcoat report")
    check_writable(output, "-o/--output")
    if since is not None:
        import datetime as _dt

        try:
            _dt.date.fromisoformat(since[:10])
        except ValueError:
            raise InputError(
                f"--since: expected a date such as 2026-12-01; got {since!r}"
            ) from None
    ledger = Ledger.existing(location)
    if ledger is None:
        where = f"at {location!r}" if location else "here yet"
        raise InputError(
            f"no ledger {where}: run `labcoat doctor`, `labcoat run` or `labcoat ledger add` "
            "first, or pass --ledger PATH"
        )
    with ledger:
        page = from_ledger(ledger, runs=list(runs or ()) or None, since=since)
    written = page.save(output)
    return Written(written, written.stat().st_size, [s.id for s in page.sections])
