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
