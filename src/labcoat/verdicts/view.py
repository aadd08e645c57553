"""Terminal and HTML views of a verdict and of a design review (the results stay plain data)."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from labcoat.view import findings_table

VERDICT_STYLE = {"confirmed": "bold green", "refuted": "bold red", "inconclusive": "yellow"}


def number(x: Any) -> str:
    return "—" if x is None else f"{x:.4g}"


def verdict_view(result: Any) -> RenderableType:
    """The headline first (it says when the analysis deviated), then the numbers, then the
    deviation findings that failed."""
    return Group(headline_text(result), verdict_details(result))


def headline_text(result: Any) -> Text:
    style = "bold red" if result.deviations else VERDICT_STYLE.get(result.verdict, "")
    return Text(result.headline, style=style)


def verdict_details(result: Any) -> RenderableType:
    """Everything below the headline: the numbers, the deviations, what is worth a look."""
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
            f"{number(result.pvalue)} "
            f"(adjusted within the family: {number(result.pvalue_adjusted)})",
        ),
        ("MDE", result.power_line or number(result.mde)),
        (
            "n",
            f"A {result.n['a']}, B {result.n['b']}, paired {result.n['paired']} "
            f"(planned {plan.items})",
        ),
        ("data", "  ".join(f"{k}: {v}" for k, v in result.fingerprints.items())),
    ]
    for label, value in rows:
        grid.add_row(label, value)
    parts: list[RenderableType] = [grid]
    bad = [f for f in result.findings if f.status == "fail"]
    if bad:
        parts.append(findings_table(bad, title="deviations from the plan"))
    if result.warnings:
        parts.append(findings_table(result.warnings, title="worth a look"))
    return Group(*parts)


def review_view(result: Any) -> RenderableType:
    return findings_table(result.findings, title="design review")
