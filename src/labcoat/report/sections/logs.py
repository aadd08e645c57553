"""HTML section of a run's logs: the findings, the first line and its consequences, and a
per-rank timeline (a row per rank from its first line to its last, a mark per
failure-indicating line, the first in red, a hollow mark where a rank went silent, a triangle
where it slowed).

Drawn live from a ``LogsReport`` (``report.to_html()``) and, in the ledger's report, from the
``logs.timeline`` event ``labcoat run`` stores with the run: the same data, the same drawing.
"""

from __future__ import annotations

from typing import Any, Mapping

from labcoat.report.ladder import findings_list
from labcoat.report.page import Section, esc

#: the event ``labcoat run`` stores with a run (labcoat.logs.result.TIMELINE_EVENT): what
#: :func:`timeline_svg` draws
TIMELINE_EVENT = "logs.timeline"
LABEL_W = 80


def _ticks(span: float) -> list[float]:
    for step in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600, 7200):
        if span / step <= 6:
            return [i * step for i in range(int(span / step) + 1)]
    return [0.0, span]


def timeline_svg(data: Mapping[str, Any], width: int = 720, row: int = 18) -> str:
    """The per-rank timeline of ``data`` (``LogsReport.timeline()``); '' without times."""
    ranks = data.get("ranks") or []
    timed = [r for r in ranks if r.get("last_time") is not None]
    if not timed:
        return ""
    t0 = min(r["first_time"] for r in timed if r.get("first_time") is not None)
    marks = [m for m in data.get("marks", []) if m.get("time") is not None]
    t1 = max([r["last_time"] for r in timed] + [m["time"] for m in marks])
    span = max(t1 - t0, 1e-6)
    inner = width - LABEL_W - 10
    x = lambda t: LABEL_W + inner * (t - t0) / span  # noqa: E731
    height = row * len(ranks) + 28
    parts = [
        f'<figure data-chart="logs-timeline"><svg viewBox="0 0 {width} {height}" width="100%" '
        f'style="max-width:{width}px" role="img" aria-label="lines of each rank over time">'
    ]
    silent = {s["rank"]: s for s in data.get("silent", [])}
    slowed = {c["rank"]: c for c in data.get("changes", []) if c.get("time") is not None}
    for i, r in enumerate(ranks):
        y = 5 + i * row + 8
        rank = r["rank"]
        label = "launcher" if rank is None else f"rank {rank}"
        parts.append(f'<g class="rank" data-rank="{esc(label)}">')
        parts.append(
            f'<text x="0" y="{y + 4}" font-size="11" fill="currentColor">{esc(label)}</text>'
        )
        if r.get("first_time") is not None and r.get("last_time") is not None:
            parts.append(
                f'<line x1="{x(r["first_time"]):.1f}" y1="{y}" x2="{x(r["last_time"]):.1f}" '
                f'y2="{y}" style="stroke:var(--muted)" stroke-width="2">'
                f"<title>{esc(label)}: {r.get('lines', 0)} lines, last step "
                f"{esc(r.get('last_step'))}</title></line>"
            )
        for m in marks:
            if m["rank"] != rank:
                continue
            color, kind = ("var(--fail)", "first") if m.get("first") else ("var(--warn)", "later")
            parts.append(
                f'<circle class="mark {kind}" cx="{x(m["time"]):.1f}" cy="{y}" r="4" '
                f'style="fill:{color}"><title>{esc(label)}, step {esc(m.get("step"))}: '
                f"{esc(str(m.get('line', ''))[:200])}</title></circle>"
            )
        if rank in silent:
            s = silent[rank]
            parts.append(
                f'<circle class="mark silent" cx="{x(s["last_time"]):.1f}" cy="{y}" r="5" '
                'style="fill:none;stroke:var(--fail)" stroke-width="2"><title>'
                f"{esc(label)} went silent in step {esc(s.get('last_step'))} "
                f"({esc(s.get('silent_s'))} s before the end)</title></circle>"
            )
        if rank in slowed:
            c = slowed[rank]
            cx = x(c["time"])
            parts.append(
                f'<path class="mark slowed" d="M{cx - 5:.1f},{y + 5} L{cx + 5:.1f},{y + 5} '
                f'L{cx:.1f},{y - 5} Z" style="fill:var(--warn)"><title>'
                f"{esc(c.get('what', ''))}</title></path>"
            )
        parts.append("</g>")
    axis = 5 + len(ranks) * row + 4
    parts.append(
        f'<line x1="{LABEL_W}" y1="{axis}" x2="{width - 10}" y2="{axis}" '
        'style="stroke:var(--line)"/>'
    )
    for tick in _ticks(span):
        parts.append(
            f'<text x="{x(t0 + tick):.1f}" y="{axis + 14}" font-size="10" text-anchor="middle" '
            f'fill="currentColor">{tick:g} s</text>'
        )
    parts.append("</svg><figcaption class=\"muted\">each rank's lines over time: ● a "
                 "failure-indicating line (red: the first), ○ where a rank went silent, ▲ where "
                 "it slowed</figcaption></figure>")  # fmt: skip
    return "".join(parts)


def _who(rank: Any) -> str:
    return "the launcher" if rank is None else f"rank {esc(rank)}"


def _body(data: Mapping[str, Any], findings: list, note: str = "") -> str:
    first = data.get("first")
    parts = [
        f'<p class="meta">{note}run {esc(data.get("run"))} · {esc(data.get("lines"))} lines · '
        f"{len([r for r in data.get('ranks', []) if r['rank'] is not None])} ranks · "
        f"{esc(data.get('templates'))} templates</p>",
        findings_list(f.to_dict() if hasattr(f, "to_dict") else f for f in findings),
    ]
    if first is not None:
        parts.append(
            f"<p><b>first:</b> rank {esc(first['rank'])}, step {esc(first['step'])}: "
            f"<code>{esc(first['line'])}</code> ({esc(first['why'])})</p>"
        )
    consequences = data.get("consequences") or []
    if consequences:
        items = "".join(
            f"<li>{_who(c['rank'])}: "
            f"<code>{esc(str(c['line'])[:200])}</code> ({esc(c['because'])})</li>"
            for c in consequences[:50]
        )
        parts.append(f"<ul>{items}</ul>")
    parts.append(timeline_svg(data))
    return "\n".join(parts)


def logs_section(report: Any, *, title: str = "Logs", id: str = "logs") -> Section:
    """A ``LogsReport``, live or read back from the ledger; a stored record keeps the run's
    figures and first line, not the lines behind the timeline."""
    try:
        data, note = report.timeline(), ""
    except AttributeError:  # a stored record: its to_dict() only
        data = {k: getattr(report, k) for k in ("run", "lines", "templates", "first")}
        data["consequences"] = report.consequences
        data["ranks"] = [{"rank": r} for r in report.ranks]
        note = "timeline not kept in this record · "
    return Section(title, _body(data, report.findings, note), id)


def stored_run(run: Any, findings: list, events: list, results: list, **options: Any) -> Section:
    """One ledger run's logs (the logs engine's descriptor names this): its findings, the
    timeline ``labcoat run`` stored with it and the logs reports recorded with it."""
    stored = [e for e in events if getattr(e, "kind", None) == TIMELINE_EVENT]
    data = dict(stored[-1].data) if stored else {"run": run.id}
    base = options.get("id", f"logs-run-{run.id}")
    body = _body(data, findings, "" if stored else "no timeline stored with this run · ")
    if results:  # logs reports recorded with the run: each through its own section
        from labcoat.report.html import stored_sections

        body += stored_sections(results, id=base)
    return Section(options.get("title", "Logs"), body, base)


__all__ = ["TIMELINE_EVENT", "logs_section", "stored_run", "timeline_svg"]
