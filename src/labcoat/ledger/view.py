"""Rich views of ledger records. The records stay plain data; they point here via ``__rich__``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from labcoat.view import findings_table

if TYPE_CHECKING:
    from labcoat.findings import Finding
    from labcoat.ledger.records.entries import Entry
    from labcoat.ledger.records.runs import Run
    from labcoat.ledger.store.sql import SqlResult
    from labcoat.ledger.store.verify import VerifyResult

VERDICT_STYLE = {
    "open": "cyan",
    "confirmed": "bold red",
    "refuted": "green",
    "inconclusive": "yellow",
}
RUN_STYLE = {
    "ok": "green",
    "failed": "bold red",
    "interrupted": "yellow",
    "killed": "bold red",
    "running": "cyan",
}


def verdict_text(verdict: str) -> Text:
    return Text(verdict, style=VERDICT_STYLE.get(verdict, ""))


def _short(text: str | None, width: int = 60) -> str:
    if not text:
        return ""
    first = text.splitlines()[0]
    return first if len(first) <= width else first[: width - 1] + "…"


#: how an entry's verdict came about (``Ledger.plan_status``), as ``ledger list`` shows it
PLAN_STYLE = {
    "planned": "green",
    "deviating": "bold red",
    "unplanned": "yellow",
    "registered": "cyan",
}


def entries_table(
    entries: Iterable["Entry"],
    *,
    title: str | None = None,
    plan_status: dict[int, str] | None = None,
) -> Table:
    table = Table(title=title)
    names = ["id", "created", "verdict", "title", "prediction", "tags"]
    if plan_status is not None:
        names.insert(3, "plan")
    for name in names:
        table.add_column(name, overflow="fold")
    for e in entries:
        cells = [
            str(e.id),
            e.created_at[:16].replace("T", " "),
            verdict_text(e.verdict),
            _short(e.title),
            _short(e.prediction, 40),
            ", ".join(e.tags),
        ]
        if plan_status is not None:
            status = plan_status.get(e.id, "")
            cells.insert(3, Text(status, style=PLAN_STYLE.get(status, "")))
        table.add_row(*cells)
    return table


def entry_view(
    entry: "Entry", history: list["Entry"] | None = None, findings: list["Finding"] | None = None
) -> RenderableType:
    head = Text.assemble(
        (f"#{entry.id} ", "bold"), (entry.title, "bold"), "  ", verdict_text(entry.verdict)
    )
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column(overflow="fold")
    for label, value in (
        ("prediction", entry.prediction),
        ("experiment", entry.experiment),
        ("result", entry.result),
        ("conclusion", entry.conclusion),
        ("tags", ", ".join(entry.tags)),
        ("parents", ", ".join(f"#{p}" for p in entry.parents)),
        ("runs", ", ".join(f"run {r}" for r in entry.runs)),
        ("created", entry.created_at),
        ("revision", f"{entry.revision} ({entry.change}, {entry.recorded_at})"),
    ):
        if value:
            grid.add_row(label, value)
    parts: list[RenderableType] = [head, grid]
    if history and len(history) > 1:
        revs = Table(title="revisions", title_justify="left")
        for name in ("rev", "recorded", "change", "verdict", "hash"):
            revs.add_column(name)
        for h in history:
            revs.add_row(
                str(h.revision), h.recorded_at, h.change, verdict_text(h.verdict), h.hash[:12]
            )
        parts.append(revs)
    if findings:
        parts.append(findings_table(findings, title="findings"))
    return Group(*parts)


def runs_table(runs: Iterable["Run"]) -> Table:
    table = Table()
    for name in ("id", "name", "started", "status", "exit", "command", "commit", "config"):
        table.add_column(name, overflow="fold")
    for r in runs:
        commit = (r.git_commit or "")[:10] + ("*" if r.git_dirty else "")
        table.add_row(
            str(r.id),
            r.name or "",
            r.started_at[:19].replace("T", " "),
            Text(r.status, style=RUN_STYLE.get(r.status, "")),
            "" if r.exit_status is None else str(r.exit_status),
            _short(" ".join(r.command), 50),
            commit,
            (r.config_hash or "")[:10],
        )
    return table


def _ending(run: "Run") -> str:
    if not run.ended_at:
        return "no end recorded (still running, or the process died)"
    took = "" if run.duration_s is None else f", {run.duration_s:.3f} s"
    return f"{run.ended_at} (exit {run.exit_status}{took})"


def run_view(run: "Run", findings: list["Finding"] | None = None) -> RenderableType:
    head = Text.assemble(
        (f"run {run.id}", "bold"),
        f" {run.name or ''}  ",
        Text(run.status, style=RUN_STYLE.get(run.status, "")),
    )
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column(overflow="fold")
    python = run.env.get("python", {}) if run.env else {}
    torch = (run.env or {}).get("torch") or {}
    rows = [
        ("command", " ".join(run.command)),
        ("cwd", run.cwd),
        ("host", f"{run.host} ({run.user}, pid {run.pid})"),
        ("started", run.started_at),
        ("ended", _ending(run)),
        ("error", run.error),
        (
            "git",
            f"{run.git_branch or '(detached)'} @ {run.git_commit or '(no commit)'}"
            + (" dirty" if run.git_dirty else "")
            if run.git_root
            else "not a git repository",
        ),
        ("diff", run.diff_hash),
        (
            "config",
            f"{run.config_hash[:16]}  {_short(str(run.config), 80)}" if run.config_hash else None,
        ),
        (
            "data",
            "; ".join(f"{d.name}: {d.digest.split(':')[-1][:12]} ({d.method})" for d in run.data),
        ),
        ("python", f"{python.get('version')} {python.get('executable', '')}" if python else None),
        ("torch", f"{torch.get('version')} cuda {torch.get('cuda')}" if torch else None),
        (
            "packages",
            f"{len((run.env or {}).get('packages', {}))} recorded, env {(run.env_hash or '')[:16]}",
        ),
        ("seeds", ", ".join(f"{k}={v}" for k, v in run.seeds.items())),
        ("factors", ", ".join(f"{k}={v}" for k, v in run.factors.items())),
    ]
    for label, value in rows:
        if value:
            grid.add_row(label, str(value))
    parts: list[RenderableType] = [head, grid]
    if findings:
        parts.append(findings_table(findings, title="findings"))
    return Group(*parts)


def verify_view(result: "VerifyResult") -> RenderableType:
    verdict = Text("intact", style="bold green") if result.ok else Text("BROKEN", style="bold red")
    head = Text.assemble("ledger ", (result.location, "bold"), ": ", verdict)
    table = Table(show_header=True)
    table.add_column("table")
    table.add_column("rows", justify="right")
    for name, count in result.rows.items():
        table.add_row(name, str(count))
    parts: list[RenderableType] = [head, table]
    for problem in result.problems():
        parts.append(Text(f"✗ {problem}", style="red"))
    for note in result.notes:
        parts.append(Text(f"! {note}", style="yellow"))
    n = len(result.predictions)
    if n:
        parts.append(
            Text(
                f"{result.predicted_first} of {n} resolved entries had their prediction recorded "
                "in an earlier revision than their result (chain order)"
            )
        )
        for p in result.predictions:
            if p.order != "before":
                parts.append(Text(f"! entry #{p.entry_id}: {p.order}", style="yellow"))
    return Group(*parts)


def sql_table(result: "SqlResult") -> Table:
    table = Table()
    for name in result.columns:
        table.add_column(name, overflow="fold")
    for row in result.to_dict()["rows"]:
        table.add_row(*("NULL" if v is None else str(v) for v in row))
    return table
