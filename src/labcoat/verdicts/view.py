"""Terminal and HTML views of a verdict and of a design review (the results stay plain data)."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from labcoat.view import findings_table

VERDICT_STYLE = {"confirmed": "bold green", "refuted": "bold red", "inconclusive": "yellow"}


def _num(x: Any) -> str:
    return "—" if x is None else f"{x:.4g}"


def verdict_view(result: Any) -> RenderableType:
    """The headline first (it says when the analysis deviated), then the numbers, then the
    deviation findings that failed."""
    style = "bold red" if result.deviations else VERDICT_STYLE.get(result.verdict, "")
    head = Text(result.headline, style=style)
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column(overflow="fold")
    plan = result.plan
    rows = [
        (
            "test",
            f"{result.test}; {plan.comparison}, margin {plan.margin:g}, α {plan.alpha:g} "
            f"({plan.sides})",
        ),
        ("metric", f"{plan.metric} ({plan.column})"),
        (
            "estimate",
            f"A − B = {result.estimate:+.4g}  [{result.ci.low:+.4g}, {result.ci.high:+.4g}]",
        ),
        (
            "p-value",
            f"{_num(result.pvalue)} (adjusted within the family: {_num(result.pvalue_adjusted)})",
        ),
        ("MDE", _num(result.mde)),
        (
            "n",
            f"A {result.n['a']}, B {result.n['b']}, paired {result.n['paired']} "
            f"(planned {plan.items})",
        ),
        ("data", "  ".join(f"{k}: {v}" for k, v in result.fingerprints.items())),
    ]
    for label, value in rows:
        grid.add_row(label, value)
    parts: list[RenderableType] = [head, grid]
    bad = [f for f in result.findings if f.status == "fail"]
    if bad:
        parts.append(findings_table(bad, title="deviations from the plan"))
    if result.warnings:
        parts.append(findings_table(result.warnings, title="worth a look"))
    return Group(*parts)


def review_view(result: Any) -> RenderableType:
    return findings_table(result.findings, title="design review")


def verdict_section(result: Any, *, title: str = "Verdict", id: str = "verdict"):
    from labcoat.report.page import Section, esc

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
            ("p-value (adjusted)", f"{_num(result.pvalue)} ({_num(result.pvalue_adjusted)})"),
            ("MDE", _num(result.mde)),
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
    from labcoat.report.page import Section, esc

    rows = "".join(
        f'<tr><td class="{esc(f.status)}">{esc(f.status)}</td><td>{esc(f.check)}</td>'
        f"<td>{esc(f.message)}</td></tr>"
        for f in result.findings
    )
    return Section(title, f'<table class="evidence">{rows}</table>', id=id)
