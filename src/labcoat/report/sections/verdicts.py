"""The verdicts' page sections: a verdict with its deviations, and a plan's design review."""

from __future__ import annotations

from typing import Any

from labcoat.report.page import Section, esc
from labcoat.verdicts.view import number


def verdict_section(result: Any, *, title: str = "Verdict", id: str = "verdict"):
    css = (
        "fail"
        if result.deviations
        else {"confirmed": "pass", "refuted": "fail"}.get(result.verdict, "warn")
    )
    rows = "".join(
        f"<tr><td>{esc(k)}</td><td>{esc(v)}</td></tr>"
        for k, v in (
            (
                "estimate (A − B)",
                f"{result.estimate:+.4g} [{result.ci.low:+.4g}, {result.ci.high:+.4g}]",
            ),
            ("p-value (adjusted)", f"{number(result.pvalue)} ({number(result.pvalue_adjusted)})"),
            ("MDE", number(result.mde)),
            ("n paired / planned", f"{result.n['paired']} / {result.plan.items}"),
        )
    )
    devs = "".join(
        f"<li>{esc(d['kind'])}: planned {esc(d['planned'])}, observed {esc(d['observed'])}</li>"
        for d in result.deviations
    )
    body = (
        f'<p class="{css}"><b>{esc(result.headline)}</b></p><table class="evidence">{rows}</table>'
        + (f"<h3>Deviations</h3><ul>{devs}</ul>" if devs else "")
    )
    return Section(title, body, id=id)


def review_section(result: Any, *, title: str = "Design review", id: str = "review"):
    rows = "".join(
        f'<tr><td class="{esc(f.status)}">{esc(f.status)}</td><td>{esc(f.check)}</td>'
        f"<td>{esc(f.message)}</td></tr>"
        for f in result.findings
    )
    return Section(title, f'<table class="evidence">{rows}</table>', id=id)
