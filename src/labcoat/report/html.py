"""Any labcoat result as a page: ``result.to_html(path)`` and inline display in Jupyter.

A result class names the section that draws it on the type (:attr:`labcoat.result.Result.section`,
``"module:function"``), so the results' modules never import plotting code and no table of class
names has to follow them.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from labcoat._validation import article


def section_for(result: Any, **options: Any):
    """The page section that draws ``result``: the one its type declares
    (:attr:`labcoat.result.Result.section`)."""
    declared = getattr(type(result), "section", None)
    if not isinstance(declared, str):
        raise TypeError(
            f"no report section draws {article(type(result).__name__)}: its class declares no "
            "`section = 'module:function'` (see labcoat.result.Result)"
        )
    module, _, attr = declared.partition(":")
    options.setdefault("title", getattr(type(result), "title", "") or type(result).__name__)
    return getattr(importlib.import_module(module), attr)(result, **options)


def stored_sections(results: Any, *, id: str) -> str:
    """Each stored ``(name, result)`` (a result read back from the ledger) drawn through its
    own section under its name, as HTML; one whose section needs the live result says so and
    lists its findings instead."""
    from labcoat.report.ladder import findings_list
    from labcoat.report.page import esc

    parts = []
    for i, (name, result) in enumerate(results):
        heading = name or type(result).title or result.KIND
        try:
            body = section_for(result, title=heading, id=f"{id}-{i}").body
        except (AttributeError, KeyError, TypeError) as exc:  # it needs the live result
            body = (
                f'<p class="warn">! this stored {esc(result.KIND)} result cannot be drawn '
                f"from its record ({esc(exc)}); its findings:</p>"
                + findings_list(f.to_dict() for f in result.findings)
            )
        parts.append(f"<h3>{esc(heading)}</h3>{body}")
    return "\n".join(parts)


def to_html(
    result: Any,
    path: str | os.PathLike[str] | None = None,
    *,
    title: str = "labcoat report",
    subtitle: str = "",
    **options: Any,
) -> str:
    """One self-contained page drawing ``result``; written to ``path`` when given."""
    from labcoat.extras import require
    from labcoat.outputs import check_writable
    from labcoat.report.page import Page

    require("report", "an HTML page")
    if path is not None:
        check_writable(path, "path")

    page = Page(title, subtitle=subtitle).add(section_for(result, **options))
    if path is not None:
        page.save(path)
    return page.to_html()
