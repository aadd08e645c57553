"""``labcoat doctor FILE.py[:NAME]``: run the check ladder on an experiment file."""

from __future__ import annotations

import contextlib
import sys

import click

from labcoat.cli.output import json_option, ledger_target, recording_options, respond, titled
from labcoat.findings import ENGINES


@click.command()
@click.argument("target", metavar="FILE.py[:NAME]")
@json_option
@click.option(
    "--budget",
    type=click.Choice(["fast", "full"]),
    default=None,
    help="How much training the controls may spend (default: the experiment's, else fast).",
)
@click.option("--all", "run_all", is_flag=True, help="Run every layer even after one fails.")
@click.option(
    "--seed",
    type=int,
    default=None,
    help="Seed for splits, copies and controls (default: the experiment's).",
)
@click.option("--quiet", is_flag=True, help="No progress bars.")
@recording_options()
@click.option(
    "--html", "html", default=None, metavar="PATH", help="Also write the ladder as an HTML page."
)
def doctor(
    target: str,
    as_json: bool,
    budget: str | None,
    run_all: bool,
    seed: int | None,
    quiet: bool,
    ledger: str | None,
    no_ledger: bool,
    html: str | None,
) -> None:
    """Diagnose the experiment that FILE.py's function NAME (default: experiment) returns.

    NAME returns labcoat.Experiment(model, data, loss_fn, optimizer, ...), with the
    fields of labcoat.diagnose. Exit status: 0 healthy, 1 a check failed, 2 bad input.

    \b
    Examples:
      labcoat doctor examples/digits.py
      labcoat doctor examples/digits_bugs.py:head_not_in_optimizer --json
    """
    from labcoat.doctor.experiment_file import load_experiment

    # with --json, stdout carries one JSON object: what the user's code prints goes to stderr
    with contextlib.redirect_stdout(sys.stderr) if as_json else contextlib.nullcontext():
        report = _diagnose(
            load_experiment(target), as_json, budget, run_all, seed, quiet, ledger, no_ledger
        )
    if html is not None:
        report.to_html(html, title=f"Doctor · {target}")
    data = {"target": target, **report.to_dict()}
    respond(as_json, data, lambda: titled(f"labcoat doctor · {target}", report))
    raise click.exceptions.Exit(0 if report.ok else 1)


def _diagnose(experiment, as_json, budget, run_all, seed, quiet, ledger, no_ledger):
    """Run the experiment's diagnose with the command line's overrides."""
    overrides: dict = {"run_all": run_all}
    if budget is not None:
        overrides["budget"] = budget
    if seed is not None:
        overrides["seed"] = seed
    if no_ledger or ledger is not None:
        overrides["ledger"] = ledger_target(ledger, no_ledger)
    if quiet or as_json or not sys.stdout.isatty():
        overrides["progress"] = False
    return experiment.diagnose(**overrides)


@click.command()
@json_option
@click.option(
    "--engine",
    type=click.Choice(list(ENGINES)),
    default=None,
    help="Only this engine's checks.",
)
def checks(as_json: bool, engine: str | None) -> None:
    """List every declared check (doctor, watch, audit, scale, stats): what each falsifies and
    what a healthy setup predicts."""
    from labcoat.findings import catalogue

    rows = catalogue(engine)
    respond(as_json, {"checks": rows}, lambda: _checks_table(rows))


def _checks_table(rows: list[dict]):
    from rich.table import Table

    table = Table(title="labcoat checks")
    for column in ("engine", "layer"):
        table.add_column(column)
    table.add_column("check", no_wrap=True, min_width=max(len(r["id"]) for r in rows))
    table.add_column("falsifies")
    table.add_column("a healthy setup predicts")
    for r in rows:
        table.add_row(r["engine"], r["layer"], r["id"], r["falsifies"], r["predicts"])
    return table
