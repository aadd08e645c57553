"""Rich views of audit results: the findings, then a table of what was found."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table

from labcoat.view import findings_grid

#: rows shown in a table; --json carries them all
SHOWN = 20


def result_view(result: Any) -> RenderableType:
    parts: list[RenderableType] = [findings_grid(result.findings)]
    table = _detail(result)
    if table is not None:
        parts.append(table)
    return Group(*parts)


def _detail(result: Any) -> Table | None:
    name = type(result).__name__
    if name == "LabelIssues" and result.count:
        if result.ids is None:
            table = _table("likely label errors, most likely first", "row", "label quality")
            for i, s in list(zip(result.indices, result.scores))[:SHOWN]:
                table.add_row(str(int(i)), f"{s:.3g}")
        else:
            table = _table("likely label errors, most likely first", "row", "id", "label quality")
            for i, key, s in list(zip(result.indices, result.ids, result.scores))[:SHOWN]:
                table.add_row(str(int(i)), str(key), f"{s:.3g}")
        return _more(table, result.count)
    if name == "Duplicates" and result.pairs:
        table = _table("duplicates across the splits", "row a", "row b", "similarity", "exact")
        for p in result.pairs[:SHOWN]:
            table.add_row(str(p.a), str(p.b), f"{p.similarity:.3f}", "yes" if p.exact else "")
        return _more(table, len(result.pairs))
    if name == "Contamination":
        table = _table(
            f"eval items in the corpus ({result.method}, {result.n}-grams)",
            "id",
            "dirty",
            "overlap",
        )
        shown = sorted(result.items, key=lambda i: -(i.overlap or 0))[:SHOWN]
        for item in shown:
            overlap = "too short" if item.overlap is None else f"{item.overlap:.2f}"
            table.add_row(str(item.id), "dirty" if item.dirty else "clean", overlap)
        if result.scores:
            for side in ("clean", "dirty"):
                m = result.scores.get(side)
                if m:
                    table.caption = (
                        table.caption or ""
                    ) + f"{side}: {m['mean']:.4g} ± {m['se']:.2g} (n={m['n']})  "
        return _more(table, len(result.items))
    if name == "SharedGroups" and result.shared:
        table = _table("groups on both sides", "group", "rows in a", "rows in b")
        for g in result.shared[:SHOWN]:
            table.add_row(str(g.group), str(g.n_a), str(g.n_b))
        return _more(table, result.n_shared)
    return None


def _table(title: str, *columns: str) -> Table:
    table = Table(title=title, title_justify="left")
    for c in columns:
        table.add_column(c, overflow="fold")
    return table


def _more(table: Table, total: int) -> Table:
    if total > SHOWN:
        table.caption = (table.caption or "") + f"{total - SHOWN} more; --json lists all"
    return table
