"""``labcoat logs RUN``: a run's lines with rank and step, folded, or read for its failure."""

from __future__ import annotations

import click

from labcoat.cli.ledger import ledger_option
from labcoat.cli.output import console, emit_json, json_option


@click.command("logs")
@click.argument("run", default="last")
@click.option("--why", "explain", is_flag=True, help="Name the failure-indicating lines.")
@click.option("--folded", is_flag=True, help="One line per template, with its ranks and count.")
@click.option("--rank", type=int, default=None, help="Only this rank's lines.")
@click.option(
    "--level",
    "log_level",
    default=None,
    help="Only lines at this log level or worse (DEBUG … CRITICAL).",
)
@click.option("--step", "steps", default=None, metavar="A..B", help="Only steps A to B.")
@click.option("--grep", default=None, metavar="RE", help="Only lines matching this regex.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="At most N lines.")
@click.option(
    "--engine",
    type=click.Choice(("local", "ray")),
    default="local",
    show_default=True,
    help="For a folder: mine its per-rank files here, or in parallel Ray tasks.",
)
@ledger_option
@json_option
@click.pass_context
def logs_command(
    ctx, run, explain, folded, rank, log_level, steps, grep, limit, engine, location, as_json
) -> None:
    """A run's log records: RUN is a run id, `last`, or a folder of per-rank log files
    (torchrun --log-dir). With --why, exit 1 when a failure-indicating line is named.

    \b
    Example:
      labcoat run -- torchrun --nproc-per-node 8 train.py
      labcoat logs last --why
      labcoat logs last --folded
      labcoat logs 12 --rank 3 --level WARNING --step 100..200
    """
    from labcoat.ledger import Ledger
    from labcoat.logs import api

    book = Ledger(location, create=False) if location or not _is_folder(run) else None
    filters = {"rank": rank, "level": log_level, "step": steps, "grep": grep}
    try:
        if explain:
            report = api.why(run, ledger=book, engine=engine)
            if as_json:
                emit_json(report.to_dict())
            else:
                console().print(report)
            ctx.exit(0 if report.first is None else 1)
        if folded:
            found = api.fold_log(run, ledger=book, engine=engine, **filters)
            if as_json:
                emit_json(found.to_dict())
                return
            from labcoat.logs.view import folded_view

            console().print(folded_view(found.groups), highlight=False, markup=False)
            return
        if as_json:
            found = api.first_records(run, ledger=book, engine=engine, limit=limit, **filters)
            emit_json(found.to_dict())
            return
        rows = api.records(run, ledger=book, engine=engine, **filters)  # streamed, not gathered
        from labcoat.logs.view import record_line

        try:
            for i, row in enumerate(rows):
                if limit is not None and i >= limit:
                    break
                click.echo(record_line(row))
        finally:
            rows.close()  # before the ledger closes under the open read
    finally:
        if book is not None:
            book.close()


def _is_folder(run: str) -> bool:
    import os

    return os.path.isdir(run)
