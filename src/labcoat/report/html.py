"""Any labcoat result as a page: ``result.to_html(path)`` and inline display in Jupyter.

Result classes opt in with :class:`HtmlMixin`; which section draws a result is declared in
:data:`SECTION_FOR` by class name, so the results' modules never import plotting code.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

#: result class name → "module:function" of the section builder that draws it
SECTION_FOR: dict[str, str] = {
    "Report": "labcoat.report.sections.doctor:doctor_section",
    "MeanResult": "labcoat.report.sections.stats:stats_section",
    "CompareResult": "labcoat.report.sections.stats:stats_section",
    "LeaderboardResult": "labcoat.report.sections.stats:stats_section",
    "GateResult": "labcoat.report.sections.stats:stats_section",
    "ScalingFit": "labcoat.report.sections.scale:scale_section",
    "BacktestResult": "labcoat.report.sections.scale:scale_section",
    "LabelIssues": "labcoat.report.sections.audit:audit_section",
    "Duplicates": "labcoat.report.sections.audit:audit_section",
    "Contamination": "labcoat.report.sections.audit:audit_section",
    "SharedGroups": "labcoat.report.sections.audit:audit_section",
}

TITLES = {
    "Report": "Doctor",
    "ScalingFit": "Scaling law",
    "BacktestResult": "Backtest",
    "LeaderboardResult": "Leaderboard",
    "GateResult": "Release gate",
    "CompareResult": "Comparison",
    "MeanResult": "Mean",
}


def section_for(result: Any, **options: Any):
    """The page section that draws ``result``: the one its type declares
    (:attr:`labcoat.result.Result.section`)."""
    declared = getattr(type(result), "section", None)
    if isinstance(declared, str):
        from labcoat.result import load

        options.setdefault("title", getattr(type(result), "title", "") or type(result).__name__)
        return load(declared)(result, **options)
    name = type(result).__name__
    if name not in SECTION_FOR:
        raise TypeError(f"no report section draws a {name}; expected one of {sorted(SECTION_FOR)}")
    module, _, attr = SECTION_FOR[name].partition(":")
    build = getattr(importlib.import_module(module), attr)
    options.setdefault("title", TITLES.get(name, "Audit"))
    return build(result, **options)


def to_html(
    result: Any,
    path: str | os.PathLike[str] | None = None,
    *,
    title: str = "labcoat report",
    **options: Any,
) -> str:
    """One self-contained page drawing ``result``; written to ``path`` when given."""
    from labcoat.extras import require
    from labcoat.outputs import check_writable
    from labcoat.report.page import Page

    require("report", "an HTML page")
    if path is not None:
        check_writable(path, "path")

    page = Page(title).add(section_for(result, **options))
    if path is not None:
        page.save(path)
    return page.to_html()


class HtmlMixin:
    """``.to_html(path=None)`` and Jupyter's inline display for a result class."""

    def to_html(self, path: str | os.PathLike[str] | None = None, **options: Any) -> str:
        """This result as one self-contained HTML page (written to ``path`` when given)."""
        return to_html(self, path, **options)

    def _repr_html_(self) -> str:
        return to_html(self)
