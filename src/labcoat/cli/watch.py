"""``labcoat watch``: read back what a watched run recorded."""

from __future__ import annotations

from pathlib import Path

import click

from labcoat.cli.group import Group
from labcoat.cli.output import html_option, json_option, respond


@click.group("watch", cls=Group)
def watch_group() -> None:
    """Training-watch events: alerts raised while a run trained."""


@watch_group.command("report")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@json_option
@html_option("Also write the curves, with every alert marked, as an HTML page.")
def report(paths: tuple[Path, ...], as_json: bool, html: str | None) -> None:
    """Alerts from the JSON-lines event files of a run (one per rank), one row per event.
    Exit status: 0 no alert failed (warnings allowed), 1 an alert failed, 2 bad input.

    The same desync seen by every rank is shown once, with the ranks that saw it. The
    sampled series (loss, gradient norm, update/weight ratio) is summarised, not listed.

    \b
    Example:
      labcoat watch report runs/42/events*.jsonl
    """
    from labcoat.watch.result import report as read_report

    result = read_report(paths)
    respond(as_json, result, lambda: result)
    if html is not None:  # checked before the files were read (html_option)
        result.to_html(html)
    # like the doctor: 0 nothing failed (warnings allowed), 1 an alert failed
    raise click.exceptions.Exit(0 if result.ok else 1)
