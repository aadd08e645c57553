"""``labcoat design FACTORS.toml``: a design for several interventions, its aliasing and power;
with ``--analyse RESULTS``, the planned effects estimated from the runs' results."""

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
@click.option("--metric", default="metric", show_default=True, help="The results' metric column.")
@json_option
@html_option()
def design_command(factors, runs, seeds, resolution, budget, results, metric, as_json, html):
    """A two-level design for the factors in FACTORS.toml ([factors] name = [low, high], and an
    optional [design] table of labcoat.design()'s keywords): its runs, what they alias, each
    planned effect's power. Exit 0; with --analyse, 0 unless a check failed (1); 2 bad input.

    \b
    Example:
      labcoat design factors.toml --seeds 2
      labcoat design factors.toml --analyse results.csv --metric accuracy
    """
    import labcoat.design as design_engine

    spec = design_engine.read_factors(factors)
    given = {"runs": runs, "seeds": seeds, "resolution": resolution, "budget": budget}
    for key, value in given.items():
        if value is not None:
            spec[key] = value
    if any(given[k] is not None for k in ("runs", "resolution", "budget")):
        for key in ("runs", "resolution", "budget"):
            if given[key] is None:
                spec.pop(key, None)
    made = design_engine.design(**spec)
    result = made if results is None else made.analyse(str(results), metric=metric)
    respond(as_json, result, lambda: result)
    if html is not None:
        result.to_html(html)
    raise click.exceptions.Exit(0 if result.ok else 1)
