"""HTML section of a run's logs (``LogsReport.to_html()``): the findings, the first line and its
consequences, and a per-rank timeline: one row per rank, a mark per failure-indicating line."""

from __future__ import annotations

from typing import Any

from labcoat.report.ladder import findings_list
from labcoat.report.page import Section, esc


def _timeline(report: Any, width: int = 720, row: int = 18) -> str:
    a = report.analysis
    ends = [s["last_time"] for s in a.per_rank.values() if s["last_time"] is not None]
    if not ends:
        return ""
    starts = [c.time for c in a.candidates if c.time is not None]
    t0 = min(s["first_time"] for s in a.per_rank.values() if s["first_time"] is not None)
    t1 = max(starts + ends)
    span = max(t1 - t0, 1e-6)
    keys = sorted(a.per_rank, key=lambda r: (r is None, r if r is not None else 0))
    x = lambda t: 80 + (width - 90) * (t - t0) / span  # noqa: E731
    parts = [f'<svg width="{width}" height="{row * len(keys) + 10}" role="img">']
    for i, rank in enumerate(keys):
        y = 5 + i * row
        label = "launcher" if rank is None else f"rank {rank}"
        last = a.per_rank[rank]["last_time"]
        parts.append(f'<text x="0" y="{y + 12}" font-size="11">{esc(label)}</text>')
        if last is not None:
            parts.append(
                f'<line x1="80" y1="{y + 8}" x2="{x(last):.1f}" y2="{y + 8}" stroke="#999"/>'
            )
        for c in a.candidates:
            if c.rank == rank and c.time is not None:
                color = "#c00" if report.first and c.seq == report.first.get("seq") else "#e90"
                parts.append(
                    f'<circle cx="{x(c.time):.1f}" cy="{y + 8}" r="4" fill="{color}">'
                    f"<title>{esc(c.text[:200])}</title></circle>"
                )
    parts.append("</svg>")
    return "".join(parts)


def logs_section(report: Any, *, title: str = "Logs", id: str = "logs") -> Section:
    first = report.first
    # a report read back from the ledger keeps its figures, not the lines behind the timeline
    analysis = getattr(report, "analysis", None)
    templates = report.templates if analysis is None else analysis.templates
    parts = [
        f'<p class="meta">run {esc(report.run)} · {report.lines} lines · '
        f"{len(report.ranks)} ranks · {templates} templates</p>",
        findings_list(f.to_dict() for f in report.findings),
    ]
    if first is not None:
        parts.append(
            f"<p><b>first:</b> rank {esc(first['rank'])}, step {esc(first['step'])}: "
            f"<code>{esc(first['line'])}</code> ({esc(first['why'])})</p>"
        )
    if report.consequences:
        items = "".join(
            f"<li>rank {esc(c['rank'])}: <code>{esc(c['line'][:200])}</code> "
            f"({esc(c['because'])})</li>"
            for c in report.consequences[:50]
        )
        parts.append(f"<ul>{items}</ul>")
    if analysis is not None:
        parts.append(_timeline(report))
    return Section(title, "\n".join(parts), id)
