"""One page from a ledger: every run's doctor ladder, watch curves and recorded results, then the
notebook's chronicle. Which section a run's findings make is decided by their ``source``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from labcoat.report.page import Page, Section


def _doctor(run, findings, events) -> Section:
    from labcoat.report.sections.doctor import doctor_section

    return doctor_section(findings, title=_title("Doctor", run), id=f"doctor-run-{run.id}")


def _watch(run, findings, events) -> Section:
    from labcoat.report.sections.watch import watch_section

    return watch_section(events, title=_title("Watch", run), id=f"watch-run-{run.id}")


def _stats(run, findings, events) -> Section:
    from labcoat.report.page import esc
    from labcoat.report.sections.stats import stats_section

    parts = []
    for i, f in enumerate(findings):
        name = f.evidence.get("name") or f.check
        part = stats_section(
            f.evidence, title=name, name=f"r{run.id}-{i}", id=f"stats-{run.id}-{i}"
        )
        parts.append(f"<h3>{esc(name)}</h3>{part.body}")
    return Section(_title("Stats", run), "\n".join(parts), id=f"stats-run-{run.id}")


def _findings(kind: str) -> Callable[[Any, list, list], Section]:
    def build(run, findings, events) -> Section:
        from labcoat.report.ladder import findings_list

        return Section(
            _title(kind.capitalize(), run),
            findings_list(f.to_dict() for f in findings),
            id=f"{kind}-run-{run.id}",
        )

    return build


#: finding source → section builder; a new part of labcoat adds one line here
SECTIONS: dict[str, Callable[[Any, list, list], Section]] = {
    "doctor": _doctor,
    "watch": _watch,
    "stats": _stats,
}
#: the sources a page shows, in this order (those without a builder list their findings)
SOURCES: tuple[str, ...] = ("doctor", "watch", "stats", "scale", "audit")


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
    for run in chosen:
        events = ledger.events(run=run.id)
        for source in SOURCES:
            found = ledger.findings(run=run.id, source=source)
            if found or (source == "watch" and events):
                build = SECTIONS.get(source) or _findings(source)
                page.add(build(run, found, events))
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
