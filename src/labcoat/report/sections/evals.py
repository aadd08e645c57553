"""The evals results' page section: the numbers as a table, then the findings."""

from __future__ import annotations

from typing import Any

from labcoat.report.ladder import findings_list
from labcoat.report.page import Section, esc


def evals_section(result: Any, *, title: str = "Evals", **_: Any):
    """One page section: the result's numbers as a table and its findings."""
    data = result.to_dict()
    skip = {"findings", "subset", "items", "chosen", "design", "item_model", "models"}
    body = "".join(
        f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in data.items() if k not in skip
    )
    findings = findings_list([f.to_dict() for f in result.findings])
    return Section(title, f'<table data-table="evals">{body}</table>\n{findings}', id="evals")
