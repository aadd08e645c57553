"""``labcoat report``: one self-contained HTML page from everything a ledger holds."""

from __future__ import annotations

from pathlib import Path

import click

from labcoat.cli.output import emit_json, json_option


@click.command("report")
@click.option("-o", "--output", "output", type=click.Path(path_type=Path), default=Path("report.html"),
              show_default=True, help="The HTML file to write.")
@click.option("--ledger", "location", default=None, metavar="PATH_OR_URL",
              help="The ledger to read (default: the project's ledger).")
@click.option("--run", "runs", type=int, multiple=True, metavar="ID", help="Only these runs (repeatable).")
@click.option("--since", default=None, metavar="DATE", help="Only runs and entries from this date on (YYYY-MM-DD).")
@json_option
def report(output: Path, location: str | None, runs: tuple[int, ...], since: str | None, as_json: bool) -> None:
    """Write one HTML page with every recorded doctor run, watched run and result, then the
    notebook's chronicle. The page opens offline: nothing in it is fetched.

    \b
    Examples:
      labcoat report -o report.html
      labcoat report --run 3 --run 4 -o runs.html
    """
    from labcoat.errors import InputError
    from labcoat.ledger import Ledger
    from labcoat.report.build import from_ledger

    if since is not None:
        import datetime as _dt

        try:
            _dt.date.fromisoformat(since[:10])
        except ValueError:
            raise InputError(f"--since: expected a date such as 2026-12-01; got {since!r}") from None
    ledger = Ledger.existing(location)
    if ledger is None:
        where = f"at {location!r}" if location else "here yet"
        raise InputError(f"no ledger {where}: run `labcoat doctor`, `labcoat run` or `labcoat ledger add` "
                         "first, or pass --ledger PATH")
    with ledger:
        page = from_ledger(ledger, runs=list(runs) or None, since=since)
    written = page.save(output)
    size = written.stat().st_size
    if as_json:
        emit_json({"path": str(written), "bytes": size, "sections": [s.id for s in page.sections]})
    else:
        click.echo(f"wrote {written} ({size / 1024:.0f} KiB, {len(page.sections)} sections)")
