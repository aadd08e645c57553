"""``labcoat report``: one self-contained HTML page from everything a ledger holds."""

from __future__ import annotations

from pathlib import Path

import click

from labcoat.cli.output import checked_output, json_option, respond


@click.command("report")
@click.option(
    "-o",
    "--output",
    "output",
    type=click.Path(path_type=Path),
    default=Path("report.html"),
    show_default=True,
    help="The HTML file to write.",
    callback=checked_output(extra="report", purpose="labcoat report"),
)
@click.option(
    "--ledger",
    "location",
    default=None,
    metavar="PATH_OR_URL",
    help="The ledger to read (default: the project's ledger).",
)
@click.option(
    "--run", "runs", type=int, multiple=True, metavar="ID", help="Only these runs (repeatable)."
)
@click.option(
    "--since",
    default=None,
    metavar="DATE",
    help="Only runs and entries from this date on (YYYY-MM-DD).",
)
@json_option
def report(
    output: Path, location: str | None, runs: tuple[int, ...], since: str | None, as_json: bool
) -> None:
    """Write one HTML page with every recorded doctor run, watched run and result, then the
    notebook's chronicle. The page opens offline: nothing in it is fetched.

    \b
    Examples:
      labcoat report -o report.html
      labcoat report --run 3 --run 4 -o runs.html
    """
    from labcoat.report.build import write

    written = write(output, location=location, runs=runs, since=since)
    respond(as_json, written, lambda: str(written))
