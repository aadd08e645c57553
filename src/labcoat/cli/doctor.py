"""``labcoat doctor FILE.py[:NAME]``: run the check ladder on an experiment file."""

from __future__ import annotations

import sys

import click

from labcoat.cli.output import console, emit_json, json_option


@click.command()
@click.argument("target", metavar="FILE.py[:NAME]")
@json_option
@click.option("--budget", type=click.Choice(["fast", "full"]), default=None, help="How much training the controls may spend (default: the experiment's, else fast).")
@click.option("--all", "run_all", is_flag=True, help="Run every layer even after one fails.")
@click.option("--seed", type=int, default=None, help="Seed for splits, copies and controls (default: the experiment's).")
@click.option("--quiet", is_flag=True, help="No progress bars.")
@click.option("--ledger", "ledger", default=None, metavar="PATH_OR_URL", help="Record the findings in this ledger (default: the project's ledger, if one exists).")
@click.option("--no-ledger", is_flag=True, help="Record nothing.")
def doctor(target: str, as_json: bool, budget: str | None, run_all: bool, seed: int | None, quiet: bool, ledger: str | None, no_ledger: bool) -> None:
    """Diagnose the experiment that FILE.py's function NAME (default: experiment) returns.

    Exit status: 0 healthy, 1 a check failed, 2 bad input.
    """
    from labcoat.doctor.loader import load_experiment

    experiment = load_experiment(target)
    overrides: dict = {"run_all": run_all}
    if budget is not None:
        overrides["budget"] = budget
    if seed is not None:
        overrides["seed"] = seed
    if no_ledger:
        overrides["ledger"] = False
    elif ledger is not None:
        overrides["ledger"] = ledger
    if quiet or as_json or not sys.stdout.isatty():
        overrides["progress"] = False
    report = experiment.diagnose(**_supported(overrides))
    if as_json:
        emit_json({"target": target, **report.to_dict()})
    else:
        out = console()
        out.rule(f"labcoat doctor · {target}")
        out.print(report)
    raise click.exceptions.Exit(0 if report.ok else 1)


def _supported(overrides: dict) -> dict:
    """Drop options the installed diagnose does not take (progress arrives with the controls)."""
    import inspect

    from labcoat.doctor.api import diagnose

    params = inspect.signature(diagnose).parameters
    return {k: v for k, v in overrides.items() if k in params}


@click.command()
@json_option
def checks(as_json: bool) -> None:
    """List the doctor's checks: what each falsifies and what a healthy setup predicts."""
    from labcoat.doctor import REGISTRY

    rows = [{"id": c.id, "layer": c.layer, "falsifies": c.falsifies, "predicts": c.predicts} for c in REGISTRY]
    if as_json:
        emit_json({"checks": rows})
        return
    from rich.table import Table

    table = Table(title="labcoat doctor checks")
    table.add_column("layer")
    table.add_column("check", no_wrap=True, min_width=max(len(r["id"]) for r in rows))
    table.add_column("falsifies")
    table.add_column("a healthy setup predicts")
    for r in rows:
        table.add_row(r["layer"], r["id"], r["falsifies"], r["predicts"])
    console().print(table)
