"""The lab notebook as a chronicle: hypotheses → predictions → results → verdicts on a
timeline (refuted ones kept), each linked to its runs and their provenance."""

from __future__ import annotations

from typing import Any, Iterable

from labcoat.report.page import Section, esc

VERDICT_CSS = {"confirmed": "fail", "refuted": "pass", "inconclusive": "warn", "open": "skip"}
#: how a verdict came about (``Ledger.plan_status``): computed by its plan, deviating, by hand
PLAN_MARK = {
    "planned": ("pass", "planned verdict"),
    "deviating": ("fail", "verdict deviating from its plan"),
    "unplanned": ("warn", "unplanned verdict"),
    "registered": ("muted", "plan registered"),
}


def _entry_html(e: Any, plan: str = "") -> str:
    runs = ", ".join(f'<a href="#run-{r}">run {r}</a>' for r in getattr(e, "runs", ()) or ())
    rows = [
        ("prediction", e.prediction),
        ("experiment", e.experiment),
        ("result", e.result),
        ("conclusion", e.conclusion),
    ]
    detail = "".join(f"<tr><td>{k}</td><td>{esc(v)}</td></tr>" for k, v in rows if v)
    tags = f' <span class="muted">{esc(", ".join(e.tags))}</span>' if e.tags else ""
    css = VERDICT_CSS.get(e.verdict, "skip")
    mark = ""
    if plan in PLAN_MARK:
        mark = f' <span class="{PLAN_MARK[plan][0]}">[{esc(PLAN_MARK[plan][1])}]</span>'
    return (
        f'<details class="finding" data-entry="{e.id}" data-verdict="{esc(e.verdict)}" '
        f'data-plan="{esc(plan)}"><summary>'
        f'<span class="muted">{esc(e.created_at[:16].replace("T", " "))}</span> '
        f'<span class="{css}">{esc(e.verdict)}</span>{mark} <b>#{e.id} {esc(e.title)}</b>{tags}'
        "</summary>"
        f'<div class="scroll"><table class="evidence">{detail}'
        f"{f'<tr><td>runs</td><td>{runs}</td></tr>' if runs else ''}"
        f"<tr><td>revision</td><td>{e.revision} ({esc(e.change)})</td></tr></table></div></details>"
    )


def _run_html(r: Any) -> str:
    commit = (r.git_commit or "")[:10]
    dirty = " (uncommitted changes)" if r.git_dirty else ""
    fields = [
        ("command", " ".join(r.command or [])),
        ("status", r.status),
        ("started", r.started_at),
        ("ended", r.ended_at),
        ("commit", f"{commit} on {r.git_branch or '?'}{dirty}" if commit else ""),
        ("config hash", r.config_hash),
        ("data", ", ".join(getattr(d, "name", "") or str(d) for d in (r.data or []))),
        ("host", r.host),
    ]
    rows = "".join(f"<tr><td>{k}</td><td>{esc(v)}</td></tr>" for k, v in fields if v)
    return (
        f'<details class="finding" id="run-{r.id}" data-run="{r.id}"><summary><b>run {r.id}</b> '
        f'{esc(r.name or "")} <span class="muted">{esc(r.status)}</span></summary>'
        f'<div class="scroll"><table class="evidence">{rows}</table></div></details>'
    )


def ledger_section(
    entries: Iterable[Any],
    runs: Iterable[Any] = (),
    *,
    title: str = "Lab notebook",
    id: str = "ledger",
    plan_status: dict[int, str] | None = None,
) -> Section:
    """Entries oldest first (the chronicle), then the runs they point to with provenance;
    ``plan_status`` (``Ledger.plan_status``) marks planned, deviating and unplanned verdicts."""
    plan_status = plan_status or {}
    entries = sorted(entries, key=lambda e: (e.created_at, e.id))
    runs = list(runs)
    counts: dict[str, int] = {}
    for e in entries:
        counts[e.verdict] = counts.get(e.verdict, 0) + 1
    summary = ", ".join(f"{n} {v}" for v, n in sorted(counts.items())) or "no entries"
    body = [
        f'<p class="meta">{len(entries)} hypotheses ({esc(summary)}); refuted ones are kept.</p>'
    ]
    body += [_entry_html(e, plan_status.get(e.id, "")) for e in entries]
    if runs:
        body.append("<h3>Runs</h3>")
        body += [_run_html(r) for r in runs]
    return Section(title, "\n".join(body), id=id)
