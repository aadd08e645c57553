"""``labcoat doctor FILE.py[:NAME]``: run the check ladder on an experiment file."""

from __future__ import annotations

import contextlib
import sys

import click

from labcoat.cli.output import (
    html_option,
    json_option,
    ledger_target,
    recording_options,
    renamed_option,
    respond,
    seed_options,
    titled,
)
from labcoat.engines import names as engine_names


class DoctorCommand(click.Command):
    """An option labcoat does not know is most likely one of the file's own: say where those go."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            exc.possibilities = None
            exc.message = (
                f"no such option {exc.option_name!r}; the file's own arguments go after --: "
                f"labcoat doctor FILE.py -- {exc.option_name}"
            )
            raise


@click.command(cls=DoctorCommand)
@click.argument("target", metavar="FILE.py[:NAME]")
@click.argument("args", nargs=-1, type=click.UNPROCESSED, metavar="[-- ARGS]...")
@json_option
@renamed_option(
    "--effort",
    "--budget",
    "effort",
    type=click.Choice(["fast", "full"]),
    default=None,
    help="How much training the controls may spend (default: the experiment's, else fast).",
)
@click.option("--all", "run_all", is_flag=True, help="Run every layer even after one fails.")
@seed_options(None, "Seed for splits, copies and controls (default: the experiment's).")
@click.option("--quiet", is_flag=True, help="No progress bars.")
@click.option(
    "--strict", is_flag=True, help="Exit 1 on any warning too, not only on a failed check (CI)."
)
@recording_options()
@html_option("Also write the ladder as an HTML page.")
def doctor(
    target: str,
    args: tuple[str, ...],
    as_json: bool,
    effort: str | None,
    run_all: bool,
    seed: int | None,
    quiet: bool,
    strict: bool,
    ledger: str | None,
    no_ledger: bool,
    html: str | None,
) -> None:
    """Diagnose the experiment that FILE.py's function NAME (default: experiment) returns.

    NAME returns labcoat.Experiment(model, data, loss_fn, optimizer, ...), with the
    fields of labcoat.diagnose. The file runs with sys.argv = [FILE.py, ARGS...]: what follows
    -- is its own. Exit status: 0 healthy, 1 a check failed (with --strict: or warned), 2 bad
    input.

    \b
    Examples:
      labcoat doctor examples/digits.py
      labcoat doctor examples/digits_bugs.py:head_not_in_optimizer --json
      labcoat doctor train.py --strict -- --lr 3e-4
    """
    from labcoat.doctor.experiment_file import check_file, diagnose_file

    check_file(target)  # missing, unparsable or without the function: said before torch loads
    overrides: dict = {"run_all": run_all}  # the file's own effort, seed, ledger unless given
    for name, value in (("effort", effort), ("seed", seed)):
        if value is not None:
            overrides[name] = value
    if no_ledger or ledger is not None:
        overrides["ledger"] = ledger_target(ledger, no_ledger)
    if quiet or as_json or not sys.stdout.isatty():
        overrides["progress"] = False
    # with --json, stdout carries one JSON object: what the user's code prints goes to stderr
    with contextlib.redirect_stdout(sys.stderr) if as_json else contextlib.nullcontext():
        report = diagnose_file(target, args, **overrides)
    respond(as_json, report, lambda: titled(f"labcoat doctor · {target}", report))
    if html is not None:  # checked before the ladder ran (html_option), written after the answer
        report.to_html(html, title=f"Doctor · {target}")
    raise click.exceptions.Exit(0 if report.ok and not (strict and report.warnings) else 1)


@click.command()
@json_option
@click.option(
    "--engine",
    type=click.Choice(engine_names()),
    default=None,
    help="Only this engine's checks.",
)
def checks(as_json: bool, engine: str | None) -> None:
    """List every declared check of every engine: what each falsifies and what a healthy setup
    predicts."""
    from labcoat.engines import checks as declared_checks

    found = declared_checks(engine)
    respond(as_json, found, lambda: _checks_table(found.checks))


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
