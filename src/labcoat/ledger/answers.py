"""What the ledger answers when it is read: each reading command of ``labcoat ledger`` is one
call here, and the ``to_dict()`` of what it returns is that command's ``--json`` (the terminal
view is its ``__rich__``), so a script and the shell get the same data."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labcoat.errors import InputError

if TYPE_CHECKING:
    from labcoat.findings import Finding
    from labcoat.ledger.ledger import Ledger
    from labcoat.ledger.records.entries import Entry
    from labcoat.ledger.records.runs import Run


@dataclass(frozen=True)
class EntryListing:
    """The entries a filter kept, each with how its verdict came about (``plan``: see
    :meth:`Ledger.plan_status`)."""

    entries: list["Entry"]
    plan_status: dict[int, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "count": len(self.entries),
            "entries": [
                {**e.to_dict(), "plan": self.plan_status.get(e.id, "")} for e in self.entries
            ],
        }

    def __rich__(self) -> Any:
        from labcoat.ledger.view import entries_table

        title = f"{len(self.entries)} entries"
        return entries_table(self.entries, title=title, plan_status=self.plan_status)


def list_entries(ledger: "Ledger", **filters: Any) -> EntryListing:
    """The entries :meth:`Ledger.entries` keeps for ``filters``, with their plan status."""
    found = ledger.entries(**filters)
    return EntryListing(found, ledger.plan_status(found))


@dataclass(frozen=True)
class EntryRecord:
    """One entry with its revisions, its findings, its current plan (as stored) and the
    verdicts recorded on it."""

    entry: "Entry"
    history: list["Entry"]
    findings: list["Finding"]
    plan: dict[str, Any] | None
    verdicts: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "entry": self.entry.to_dict(),
            "history": [h.to_dict() for h in self.history],
            "findings": [f.to_dict() for f in self.findings],
            "plan": self.plan,
            "verdicts": self.verdicts,
        }

    def __rich__(self) -> Any:
        from labcoat.ledger.view import entry_view

        return entry_view(self.entry, self.history, self.findings)


def show_entry(ledger: "Ledger", entry_id: int) -> EntryRecord:
    """Entry ``entry_id`` as :class:`EntryRecord`."""
    plans = ledger.plans(entry_id)
    return EntryRecord(
        ledger.entry(entry_id),
        ledger.history(entry_id),
        ledger.findings(entry=entry_id),
        plans[-1].plan if plans else None,
        [v.result for v in ledger.verdicts(entry_id)],
    )


@dataclass(frozen=True)
class RunRecord:
    """One run: its provenance, its findings, the entries about it and how many events it
    holds; ``diff`` and ``output`` (the uncommitted diff and the captured output) when asked."""

    run: "Run"
    findings: list["Finding"]
    entries: list[int]
    events: int
    diff: str | None = None
    output: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "run": self.run.to_dict(),
            "findings": [f.to_dict() for f in self.findings],
            "entries": self.entries,
            "events": self.events,
        }
        if self.diff is not None:
            out["diff"] = self.diff
        if self.output is not None:
            out["output"] = self.output
        return out

    def __rich__(self) -> Any:
        from rich.console import Group

        from labcoat.ledger.view import run_view

        parts: list[Any] = [run_view(self.run, self.findings)]
        if self.entries:
            parts.append(f"entries: {', '.join(f'#{e}' for e in self.entries)}")
        return Group(*parts)


def show_run(
    ledger: "Ledger", run_id: int, *, diff: bool = False, output: bool = False
) -> RunRecord:
    """Run ``run_id`` as :class:`RunRecord` (``diff``/``output``: with its uncommitted diff or
    its captured output)."""
    return RunRecord(
        ledger.get_run(run_id),
        ledger.findings(run=run_id),
        [e.id for e in ledger.entries(run=run_id)],
        len(ledger.events(run=run_id)),
        ledger.run_diff_text(run_id) if diff else None,
        ledger.run_output(run_id) if output else None,
    )


@dataclass(frozen=True)
class RunListing:
    """Recorded runs, oldest first, one summary row each (:meth:`Run.summary`)."""

    runs: list["Run"]

    def to_dict(self) -> dict[str, Any]:
        return {"count": len(self.runs), "runs": [r.summary() for r in self.runs]}

    def __rich__(self) -> Any:
        from labcoat.ledger.view import runs_table

        return runs_table(self.runs)


def list_runs(
    ledger: "Ledger", *, limit: int | None = None, status: str | None = None
) -> RunListing:
    """The runs :meth:`Ledger.runs` returns, as :class:`RunListing`."""
    return RunListing(ledger.runs(limit=limit, status=status))


@dataclass(frozen=True)
class FindingListing:
    """Stored findings, oldest first, whichever engine recorded them."""

    findings: list["Finding"]

    def to_dict(self) -> dict[str, Any]:
        return {"count": len(self.findings), "findings": [f.to_dict() for f in self.findings]}

    def __rich__(self) -> Any:
        from labcoat.view import findings_table

        return findings_table(self.findings, title=f"{len(self.findings)} findings")


def list_findings(ledger: "Ledger", **filters: Any) -> FindingListing:
    """The findings :meth:`Ledger.findings` keeps for ``filters``, as :class:`FindingListing`."""
    return FindingListing(ledger.findings(**filters))


@dataclass(frozen=True)
class Exported:
    """A written export: its format, the ledger it came from, where it went (``output``, or
    ``None``: the text is ``content``) and its size."""

    format: str
    ledger: str
    output: str | None
    text: str

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "format": self.format,
            "ledger": self.ledger,
            "output": self.output,
            "bytes": len(self.text.encode()),
        }
        if not self.output:
            out["content"] = json.loads(self.text) if self.format == "json" else self.text
        return out

    def __str__(self) -> str:
        return f"wrote {self.output} ({self.format})" if self.output else self.text


def export_to(
    ledger: "Ledger",
    format: str = "md",
    output: str | Path | None = None,
    *,
    since: Any = None,
    until: Any = None,
) -> Exported:
    """Export ``ledger`` (:meth:`Ledger.export`) and write it to ``output`` when given."""
    text = ledger.export(format, since=since, until=until)
    if output:
        try:
            Path(output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise InputError(
                f"--output {output}: cannot write it ({exc.strerror or exc}); give a path in an "
                "existing, writable folder"
            ) from None
    return Exported(format, ledger.location, None if not output else str(output), text)


@dataclass(frozen=True)
class Added:
    """A hypothesis just recorded in ``ledger`` (a location); ``review``: with a plan, the
    review of the analysis registered with it (its ``plan`` and ``findings``; judged by
    :mod:`labcoat.verdicts`, kept here as given)."""

    entry: "Entry"
    ledger: str
    review: Any = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.entry.id, "entry": self.entry.to_dict()}
        out["ledger"] = self.ledger
        if self.review is not None:
            out["plan"] = self.review.plan.to_dict()
            out["review"] = [f.to_dict() for f in self.review.findings]
        return out

    def __rich__(self) -> Any:
        line = f"recorded entry #{self.entry.id} in {self.ledger}"
        if self.review is None:
            return line
        from rich.console import Group

        return Group(line, self.review)


def add_entry(ledger: "Ledger", title: str, *, predict: str, **fields: Any) -> Added:
    """Record hypothesis ``title`` and its prediction (:meth:`Ledger.hypothesis`); with a
    plan, :func:`labcoat.verdicts.judge.register_entry` is the call."""
    return Added(ledger.hypothesis(title, predict=predict, **fields), ledger.location)


@dataclass(frozen=True)
class Resolved:
    """An entry's new revision with its result and verdict."""

    entry: "Entry"

    def to_dict(self) -> dict[str, Any]:
        e = self.entry
        return {"id": e.id, "revision": e.revision, "verdict": e.verdict, "entry": e.to_dict()}

    def __str__(self) -> str:
        e = self.entry
        return f"entry #{e.id} is now {e.verdict} (revision {e.revision})"


def resolve_entry(ledger: "Ledger", entry_id: int, **fields: Any) -> Resolved:
    """Record the result and verdict of entry ``entry_id`` (:meth:`Ledger.resolve`)."""
    return Resolved(ledger.resolve(entry_id, **fields))


__all__ = [
    "Added",
    "Resolved",
    "add_entry",
    "resolve_entry",
    "EntryListing",
    "EntryRecord",
    "Exported",
    "FindingListing",
    "RunListing",
    "RunRecord",
    "export_to",
    "list_entries",
    "list_findings",
    "list_runs",
    "show_entry",
    "show_run",
]
