"""``labcoat watch``: read back what a watched run recorded."""

from __future__ import annotations

from pathlib import Path

import click

from labcoat.cli.group import Group
from labcoat.cli.output import json_option, respond


@click.group("watch", cls=Group)
def watch_group() -> None:
    """Training-watch events: alerts raised while a run trained."""


@watch_group.command("report")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@json_option
@click.option(
    "--html",
    "html",
    default=None,
    metavar="PATH",
    help="Also write the curves, with every alert marked, as an HTML page.",
)
def report(paths: tuple[Path, ...], as_json: bool, html: str | None) -> None:
    """Alerts from the JSON-lines event files of a run (one per rank), one row per event.

    The same desync seen by every rank is shown once, with the ranks that saw it. The
    sampled series (loss, gradient norm, update/weight ratio) is summarised, not listed.

    \b
    Example:
      labcoat watch report runs/42/events*.jsonl
    """
    from labcoat.watch.result import report as read_report

    result = read_report(paths)
    if html is not None:
        result.to_html(html)
    respond(as_json, result, lambda: result)
