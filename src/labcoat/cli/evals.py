"""``labcoat evals``: plan a subset of a benchmark, estimate the full score from it, compare two
models on it. Logic lives in :mod:`labcoat.evals`; this module parses and prints."""

from __future__ import annotations

from typing import Any

import click

from labcoat.cli.group import Group
from labcoat.cli.ids import add_duplicates_option, reading
from labcoat.cli.output import (
    json_option,
    ledger_target,
    level_options,
    recording_options,
    renamed_option,
    respond,
    seed_options,
)

level_option = level_options(
    None, "Confidence level of the intervals (default: the plan's, 0.95 for a new plan)."
)
plan_option = click.option(
    "--plan",
    "plan_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="The plan file `labcoat evals plan -o` wrote.",
)
columns = [
    click.option("--id", "id_col", default=None, help="Item id column (found by name if not)."),
    click.option("--score", "score_col", default=None, help="Score column (found if not)."),
]
missing_option = click.option(
    "--allow-missing",
    is_flag=True,
    help="Estimate from the planned items that have a result (warns) instead of exiting 2.",
)


def _columns(fn):
    for option in reversed(columns):
        fn = option(fn)
    return fn


def _duplicates() -> str:
    """``--duplicates``: what an item id on more than one row is (error, or mean of its rows)."""
    return reading().get("duplicates", "error")


def _finish(result: Any, as_json: bool, ledger: str | None, no_ledger: bool) -> None:
    result.record(ledger_target(ledger, no_ledger))
    respond(as_json, result, lambda: result)
    raise click.exceptions.Exit(0 if result.ok else 1)


@click.group("evals", cls=Group)
def evals() -> None:
    """Fast evals from a few hundred items: plan, estimate, compare (intervals that hold)."""


@evals.command("plan")
@click.argument("history", nargs=-1)
@renamed_option(
    "--subset-size",
    "--budget",
    "subset_size",
    default=None,
    short="-k",
    type=click.IntRange(min=2),
    help="Items to plan (required).",
)
@click.option(
    "--method",
    type=click.Choice(["auto", "stratified", "irt", "model", "random"]),
    default="auto",
    show_default=True,
    help="auto: model where the history is large enough, else stratified; stratified: by "
    "difficulty and item clusters; irt: plus an item model as control variate; model: "
    "model-based (item model's predictions, calibrated on the history); random: plain random "
    "sampling.",
)
@click.option("--output", "-o", type=click.Path(dir_okay=False), default=None, help="Plan file.")
@click.option(
    "--orient",
    type=click.Choice(["auto", "items", "models"]),
    default="auto",
    show_default=True,
    help="For a matrix: are items the rows or the columns (auto: the longer side).",
)
@click.option("--model", "model_col", default=None, help="Model column of a long table.")
@_columns
@seed_options(help="Seed of the draw.")
@level_options()
@click.option("--no-calibrate", is_flag=True, help="Skip the leave-models-out check.")
@click.option(
    "--from-ledger",
    "ledger",
    default=None,
    metavar="PATH",
    help="Read the history from the per-item eval results this ledger stored (the checkpoints "
    "of watched runs; with HISTORY files too, they join them).",
)
@click.option(
    "--eval",
    "eval_name",
    default=None,
    help="With --from-ledger: the evaluation's name, if several.",
)
@json_option
def plan_cmd(
    history: tuple[str, ...],
    subset_size: int | None,
    method: str,
    output: str | None,
    orient: str,
    model_col: str | None,
    id_col: str | None,
    score_col: str | None,
    seed: int,
    level: float | None,
    no_calibrate: bool,
    ledger: str | None,
    eval_name: str | None,
    as_json: bool,
) -> None:
    """Choose --subset-size items of HISTORY's benchmark (per-item results of earlier models: one
    items x models matrix, a long table, or one file per model; or, with --from-ledger, the
    checkpoints a watched run scored on every item)."""
    from labcoat.errors import InputError
    from labcoat.evals import plan_subset, read_history

    if subset_size is None:
        raise InputError("evals plan: give --subset-size K (-k K), the number of items to plan.")
    if not history and ledger is None:
        raise InputError("evals plan: give a HISTORY file, or --from-ledger PATH to read one from.")
    hist = read_history(
        list(history),
        orient=orient,
        id=id_col,
        score=score_col,
        model=model_col,
        ledger=ledger,
        eval=eval_name,
        duplicates=_duplicates(),
    )
    plan = plan_subset(
        hist, subset_size, method=method, seed=seed, level=level, calibrate=not no_calibrate
    )
    if output is not None:
        plan.save(output)
    respond(as_json, plan, lambda: plan, max_items=10**9)  # the plan file's JSON, uncut
    raise click.exceptions.Exit(0 if plan.ok else 1)


@evals.command("estimate")
@click.argument("results")
@plan_option
@_columns
@level_option
@missing_option
@recording_options("the estimate")
@json_option
def estimate_cmd(
    results: str,
    plan_path: str,
    id_col: str | None,
    score_col: str | None,
    level: float | None,
    allow_missing: bool,
    ledger: str | None,
    no_ledger: bool,
    as_json: bool,
) -> None:
    """Estimate the full-benchmark score from RESULTS on the plan's items."""
    from labcoat.evals import estimate, read_results

    res = read_results(results, id=id_col, score=score_col, duplicates=_duplicates())
    result = estimate(res, plan_path, level=level, allow_missing=allow_missing)
    _finish(result, as_json, ledger, no_ledger)


@evals.command("compare")
@click.argument("a")
@click.argument("b")
@plan_option
@_columns
@level_option
@missing_option
@recording_options("the comparison")
@json_option
def compare_cmd(
    a: str,
    b: str,
    plan_path: str,
    id_col: str | None,
    score_col: str | None,
    level: float | None,
    allow_missing: bool,
    ledger: str | None,
    no_ledger: bool,
    as_json: bool,
) -> None:
    """Compare A and B paired on the plan's items; inconclusive, with the items needed, when
    the subset cannot tell them apart."""
    from labcoat.evals import compare, read_results

    ra = read_results(a, id=id_col, score=score_col, duplicates=_duplicates())
    rb = read_results(b, id=id_col, score=score_col, duplicates=_duplicates())
    result = compare(ra, rb, plan_path, level=level, allow_missing=allow_missing)
    _finish(result, as_json, ledger, no_ledger)


add_duplicates_option(evals)  # --duplicates error|mean on every evals command
