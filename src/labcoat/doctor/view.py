"""Rich rendering of a doctor report as a ladder: a line per check, evidence under failures."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.text import Text

from labcoat.doctor.registry import RULES_OUT
from labcoat.findings import worst
from labcoat.view import STATUS_MARK, STATUS_STYLE, findings_grid


def ladder_view(report) -> RenderableType:
    parts: list[RenderableType] = []
    failed_layer = report.failed_layer
    for layer in report.layers_run:
        found = report.layer(layer)
        status = worst(found) or "skip"
        head = Text.assemble(
            (f"{STATUS_MARK[status]} {layer.upper():<8}", STATUS_STYLE[status]),
            (f" {report.timings.get(layer, 0.0):5.2f}s  ", "dim"),
            (
                RULES_OUT[layer]
                if status in ("pass", "warn")
                else ("BROKEN HERE" if layer == failed_layer else ""),
                "dim" if status != "fail" else "bold red",
            ),
        )
        body = findings_grid(found)
        if layer == failed_layer:
            parts.append(Panel(Group(head, body), border_style="red", padding=(0, 1)))
        else:
            parts.append(head)
            parts.append(_indent(body))
    for layer in report.layers_not_run:
        parts.append(Text(f"  {layer.upper():<8} not run: an earlier layer failed", style="dim"))
    note_style = "bold red" if report.selftest_failed else "cyan"
    for note in report.extras.get("notes", []):
        parts.append(Text(note, style=note_style))
    style = ("bold yellow" if report.warnings else "bold green") if report.ok else "bold red"
    parts.append(Text(report.summary(), style=style))
    return Group(*parts)


def _indent(renderable: RenderableType) -> RenderableType:
    from rich.padding import Padding

    return Padding(renderable, (0, 0, 0, 2))
