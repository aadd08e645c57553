"""``labcoat design FACTORS.toml``: a design for several interventions, its aliasing and power;
with ``--analyse RESULTS``, the planned effects estimated from the runs' results; with
``--register TITLE``, the design sealed in the ledger as a hypothesis' plan before any run
(``labcoat run --for ID --factor ...`` records its runs, ``labcoat verdict ID`` judges them)."""

from __future__ import annotations

from pathlib import Path

import click

from labcoat.cli.output import html_option, json_option, respond


@click.command("design")
@click.argument("factors", type=click.Path(path_type=Path))
@click.option("--runs", type=int, default=None, help="Runs per seed (a fraction or a screen).")
@click.option("--seeds", type=int, default=None, help="Seeds (replicates) per run.")
@click.option("--resolution", type=int, default=None, help="The smallest fraction at this.")
@click.option("--budget", type=int, default=None, help="Total runs: the most powerful design.")
@click.option(
    "--analyse",
    "results",
    type=click.Path(path_type=Path),
    default=None,
    help="Estimate the planned effects from these results (CSV/JSONL: factors, seed, metric).",
)
@click.option(
    "--metric",
    default="metric",
    show_default=True,
    help="The results' metric column (on a ledger: the event kind each run records it under).",
)
@click.option(
    "--register",
    "title",
    default=None,
    help="Seal the design in the ledger as hypothesis TITLE's plan (needs --predict).",
)
@click.option("--predict", default=None, help="What you expect the design to show (--register).")
@click.option(
    "--ledger",
    "location",
    metavar="PATH_OR_URL",
    default=None,
    help="Ledger to register in, and whose earlier runs' seed variance gives the noise when "
    "FACTORS.toml states none (default: $LABCOAT_LEDGER or .labcoat/ledger.db).",
)
@json_option
@html_option()
def design_command(
    factors,
    runs,
    seeds,
    resolution,
    budget,
    results,
    metric,
    title,
    predict,
    location,
    as_json,
    html,
):
    """A two-level design for the factors in FACTORS.toml ([factors] name = [low, high], and an
    optional [design] table of labcoat.design()'s keywords): its runs, what they alias, each
    planned effect's power. Exit 0; with --analyse, 0 unless a check failed (1); 2 bad input.

    \b
    Example:
      labcoat design factors.toml --seeds 2
      labcoat design factors.toml --analyse results.csv --metric accuracy
      labcoat design factors.toml --register "lr and width matter" --predict "both help" \
          --metric accuracy
    """
    import labcoat.design as design_engine
    from labcoat.errors import InputError

    spec = design_engine.read_factors(factors)
    given = {"runs": runs, "seeds": seeds, "resolution": resolution, "budget": budget}
    for key, value in given.items():
        if value is not None:
            spec[key] = value
    if any(given[k] is not None for k in ("runs", "resolution", "budget")):
        for key in ("runs", "resolution", "budget"):
            if given[key] is None:
                spec.pop(key, None)
    if title is not None and (predict is None or results is not None):
        raise InputError("--register: give --predict, and no --analyse (a plan comes before runs)")
    if title is None and predict is not None:
        raise InputError("--predict goes with --register TITLE")
    book = _ledger(location, create=title is not None)
    try:
        if book is not None:  # its earlier runs' seed variance, where they show one
            spec.update(ledger=book, metric=metric)
        made = design_engine.design(**spec)
        result = made if results is None else made.analyse(str(results), metric=metric)
        if title is not None:
            entry = design_engine.register(book, title, made, predict=predict, metric=metric)
            click.echo(
                f"labcoat: design registered as entry #{entry.id} in {book.location}", err=True
            )
            data = {**made.to_dict(), "entry": entry.id, "ledger": book.location}
            respond(as_json, data, lambda: made)
        else:
            respond(as_json, result, lambda: result)
    finally:
        if book is not None:
            book.close()
    if html is not None:
        result.to_html(html)
    raise click.exceptions.Exit(0 if result.ok else 1)


def _ledger(location, *, create: bool):
    """The ledger to register in (created when registering), or the existing one whose runs
    measure the noise; None when there is none to read."""
    from labcoat.ledger import Ledger

    if create:
        return Ledger(location, create=True)
    return Ledger.existing(location) if location is None else Ledger(location, create=False)
