"""Rich view of a run diff; the diff stays plain data and points here via ``__rich__``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from labcoat.provenance.diff import RunDiff


def diff_view(diff: "RunDiff") -> RenderableType:
    """The changes between two runs, section by section (``diff.sections``)."""
    if diff.same:
        return Text(
            f"runs {diff.run_a} and {diff.run_b}: no differences in code, config, data, "
            "environment or seeds"
        )
    table = Table(title=f"run {diff.run_a} → run {diff.run_b}")
    for name in ("section", "key", "change", f"run {diff.run_a}", f"run {diff.run_b}"):
        table.add_column(name, overflow="fold")
    for section in diff.sections:
        for c in diff.section(section):
            table.add_row(
                section,
                c.key,
                c.kind,
                "" if c.before is None else str(c.before),
                "" if c.after is None else str(c.after),
            )
    parts: list[RenderableType] = [table]
    if diff.commit_stat:
        parts.append(Text("\n".join(diff.commit_stat), style="dim"))
    return Group(*parts)
