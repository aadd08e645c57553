"""Rich views of findings. Data classes stay free of formatting; they point here via
``__rich__``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from labcoat.findings import Finding

STATUS_STYLE = {"pass": "green", "warn": "yellow", "fail": "bold red", "skip": "dim"}
STATUS_MARK = {"pass": "✓", "warn": "!", "fail": "✗", "skip": "–"}


def status_text(status: str) -> Text:
    return Text(f"{STATUS_MARK.get(status, '?')} {status}", style=STATUS_STYLE.get(status, ""))


def evidence_text(evidence: dict[str, Any], *, limit: int = 8, width: int = 100) -> Text:
    """Evidence as ``key: value`` lines, long values shortened, at most ``limit`` keys."""
    out = Text(style="dim")
    for i, (key, value) in enumerate(evidence.items()):
        if i == limit:
            out.append(f"… {len(evidence) - limit} more\n")
            break
        shown = _short(value, width)
        out.append(f"{key}: {shown}\n")
    out.rstrip()
    return out


def _short(value: Any, width: int) -> str:
    if isinstance(value, float):
        text = f"{value:.4g}"
    elif isinstance(value, (list, tuple)) and value and all(isinstance(v, float) for v in value):
        text = (
            "[" + ", ".join(f"{v:.4g}" for v in value[:12]) + (", …]" if len(value) > 12 else "]")
        )
    else:
        text = str(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def finding_view(finding: Finding, *, show_evidence: bool | None = None) -> RenderableType:
    """One line for the finding; its evidence underneath when it warned or failed."""
    line = Text.assemble(
        status_text(finding.status), "  ", (finding.check, "bold"), "  ", finding.message
    )
    if show_evidence is None:
        show_evidence = finding.status in ("fail", "warn")
    if show_evidence and finding.evidence:
        ev = evidence_text(finding.evidence)
        return Group(line, _indent(ev, 6))
    return line


def findings_grid(
    findings: Iterable[Finding], *, evidence_for: tuple[str, ...] = ("fail", "warn")
) -> Table:
    """Aligned rows (status, check, message) with evidence under the findings that need it."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(no_wrap=True, style="bold")
    grid.add_column(overflow="fold")
    for f in findings:
        grid.add_row(status_text(f.status), f.check, f.message)
        if f.status in evidence_for and f.evidence:
            grid.add_row("", "", evidence_text(f.evidence))
    return grid


def _indent(text: Text, n: int) -> Text:
    lines = text.split("\n")
    out = Text()
    for i, line in enumerate(lines):
        if i:
            out.append("\n")
        out.append(" " * n)
        out.append_text(line)
    return out


def findings_table(findings: Iterable[Finding], *, title: str | None = None) -> Table:
    """A table with one row per finding; used for watch alerts and stored findings. The step and
    rank columns appear only when some finding has one, and the layer only when they differ, so
    the message keeps the width of an 80-column terminal."""
    findings = list(findings)
    columns: list[tuple[str, Any]] = [("status", lambda f: status_text(f.status))]
    if len({f.layer for f in findings}) > 1:
        columns.append(("layer", lambda f: f.layer))
    columns.append(("check", lambda f: f.check))
    for name in ("step", "rank"):
        if any(getattr(f, name) is not None for f in findings):
            columns.append(
                (name, lambda f, n=name: "" if getattr(f, n) is None else str(getattr(f, n)))
            )
    columns.append(("message", lambda f: f.message))
    table = Table(title=title, show_lines=False, expand=False)
    for name, _ in columns:
        table.add_column(name, overflow="fold", no_wrap=name in ("status", "step", "rank"))
    for f in findings:
        table.add_row(*(cell(f) for _, cell in columns))
    return table
