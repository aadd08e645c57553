"""Terminal views of the logs engine: the failure (``--why``), the folded view, the records."""

from __future__ import annotations

import datetime as _dt
from typing import Any, Iterable, Mapping

from rich.console import Group, RenderableType
from rich.text import Text

from labcoat.view import findings_table


def clock(when: float | None) -> str:
    if when is None:
        return "--:--:--"
    return _dt.datetime.fromtimestamp(when).strftime("%H:%M:%S.%f")[:-3]


def _who(rank: Any) -> str:
    return "launcher" if rank is None else f"rank {rank}"


def why_view(report: Any) -> RenderableType:
    """The first failure-indicating line, then its consequences, silent ranks and changes."""
    parts: list[RenderableType] = [
        Text(
            f"run {report.run}: {report.lines} lines from {len(report.ranks)} ranks, "
            f"{report.analysis.templates} templates",
            style="dim",
        )
    ]
    first = report.first
    if first is None:
        parts.append(Text("nothing indicates a failure", style="green"))
    else:
        step = "" if first["step"] is None else f" step {first['step']}"
        head = Text(f"first: {_who(first['rank'])}{step} {clock(first['time'])}  ", style="bold")
        head.append(first["line"] or "(no line)", style="bold red")
        parts += [head, Text(f"  {first['why']}", style="dim")]
    for c in report.consequences[:20]:
        step = "" if c["step"] is None else f" step {c['step']}"
        line = Text(f"then: {_who(c['rank'])}{step}  ", style="yellow")
        line.append(c["line"][:160])
        parts += [line, Text(f"  {c['because']}", style="dim")]
    if len(report.consequences) > 20:
        parts.append(Text(f"… {len(report.consequences) - 20} more consequences", style="dim"))
    for s in report.silent_ranks:
        parts.append(
            Text(
                f"silent: rank {s['rank']} after step {s['last_step']} at {clock(s['last_time'])}",
                style="yellow",
            )
        )
    for c in report.changes:
        parts.append(Text(f"change: {c['what']}", style="yellow"))
    parts.append(findings_table(report.findings))
    return Group(*parts)


def folded_view(groups: Iterable[Any]) -> RenderableType:
    """One line per template: ranks, count, the text or the template with its values."""
    out = Text()
    for g in groups:
        style = "red" if g.signal else ("yellow" if g.level == "WARNING" else "")
        count = f" ×{g.count}" if g.count > 1 else ""
        out.append(f"[{g.to_dict()['ranks']}]{count} ", style="dim")
        out.append(g.rendered() + "\n", style=style)
    out.rstrip()
    return out


def record_line(row: Mapping[str, Any]) -> str:
    step = "" if row["step"] is None else f" step {row['step']}"
    rank = "L" if row["rank"] is None else str(row["rank"])
    return f"{clock(row['time'])} [{rank}]{step} {row['text']}"


__all__ = ["clock", "folded_view", "record_line", "why_view"]
