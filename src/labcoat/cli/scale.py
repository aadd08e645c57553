"""``labcoat scale``: fit a scaling law, predict, allocate compute, and backtest, with intervals.

Every subcommand reads one table of runs (CSV, TSV, JSONL, JSON, Parquet) through the stats
readers, fits it with :func:`labcoat.scale.fit`, and prints tables or, with ``--json``, one
JSON object.
"""

from __future__ import annotations

from typing import Any, Callable

import click

from labcoat.cli.group import Group
from labcoat.cli.output import (
    html_option,
    json_option,
    ledger_target,
    level_option,
    recording_options,
    renamed_option,
    respond,
    seed_options,
)
from labcoat.errors import InputError


def data_options(
    *, flops_name: tuple[str, ...] = ("--flops", "--flops-col"), n_resamples: int = 1000
) -> Callable[[Any], Any]:
    """The options naming the columns of a runs table, shared by every subcommand;
    ``n_resamples``: the default of --resamples, the library call's own."""
    options = [
        click.argument("file", type=click.Path(dir_okay=False)),
        click.option(
            "--n", "n_col", default=None, help="Column with the model size N (parameters)."
        ),
        click.option("--d", "d_col", default=None, help="Column with the data D (tokens)."),
        click.option(
            *flops_name,
            "flops_col",
            default=None,
            help="Column with training FLOPs; D = FLOPs / (6 N) when --d is not given.",
        ),
        click.option(
            "--x",
            "x_col",
            default=None,
            help="Column with the one variable of --form curve (data, steps or parameters).",
        ),
        click.option("--loss", "loss_col", required=True, help="Column with the final loss."),
        click.option(
            "--form",
            type=click.Choice(["chinchilla", "curve", "m1", "m2", "m3", "m4", "broken", "auto"]),
            default="chinchilla",
            show_default=True,
            help=(
                "chinchilla: L = E + A/N^α + B/D^β; curve: L = E + A/x^α; m1–m4, broken: "
                "learning curves of --x (Alabdulmohsin et al. 2022; a broken power law); auto: "
                "the learning-curve form with the lowest rolling-origin backtest error."
            ),
        ),
        click.option(
            "--interval",
            type=click.Choice(["calibrated", "bootstrap"]),
            default="calibrated",
            show_default=True,
            help=(
                "Prediction intervals: calibrated from the runs' own extrapolation errors "
                "against distance, or the bootstrap's."
            ),
        ),
        renamed_option(
            "--resamples",
            "--bootstrap",
            "n_resamples",
            type=click.IntRange(min=0),
            default=n_resamples,
            show_default=True,
            help="Bootstrap refits for the intervals.",
        ),
        seed_options(help="Seed of the bootstrap."),
        level_option,
        recording_options("the fit"),
        html_option("Also write the fit (or backtest) as an HTML page."),
        json_option,
    ]

    def decorate(fn):
        for option in reversed(options):
            fn = option(fn)
        return fn

    return decorate


def _read(file, n_col, d_col, flops_col, x_col, loss_col, form, **_):
    """(N or x, D or None, L) from the runs table the data options name."""
    from labcoat.scale.data import read_runs

    one = "curve" if form in ("curve", "m1", "m2", "m3", "m4", "broken", "auto") else form
    return read_runs(file, n_col, d_col, flops_col, x_col, loss_col, one)


def _fit(
    *,
    form,
    n_resamples,
    seed,
    ledger,
    no_ledger,
    interval=None,
    html=None,
    target="loss",
    metric_col=None,
    level=0.95,
    **columns,
):
    """The fit the data options ask for, recorded as --ledger/--no-ledger say (a downstream
    fit with --target accuracy|error and --metric COL)."""
    from labcoat.scale import fit

    N, D, L = _read(form=form, **columns)
    if target != "loss":
        if metric_col is None:
            raise InputError(f"--metric: --target {target} needs the column of the task's {target}")
        from labcoat.stats.readers import read_table

        metric = read_table(columns["file"]).scores(metric_col)
        result = fit(N, D, L, target=target, metric=metric, level=level, ledger=False)
    else:
        result = fit(
            N,
            D,
            L,
            form=form,
            n_resamples=n_resamples,
            seed=seed,
            level=level,
            ledger=ledger_target(ledger, no_ledger),
        )
    _page(result, html)
    return result


def _page(result: Any, html: str | None) -> None:
    """--html: the result's page, written after the answer is printed."""
    if html is not None:  # checked before the work (html_option)
        click.get_current_context().call_on_close(lambda: result.to_html(html, name="scale"))


def target_options(fn):
    """--target and --metric: a downstream metric instead of the loss."""
    fn = click.option(
        "--metric",
        "metric_col",
        default=None,
        help="Column with the downstream metric (accuracy or error, in [0, 1]) for --target.",
    )(fn)
    return click.option(
        "--target",
        type=click.Choice(["loss", "accuracy", "error"]),
        default="loss",
        show_default=True,
        help="Fit the loss, or a downstream accuracy or error (with --metric) through it.",
    )(fn)


def _views(*names: str, **arguments: Any) -> Callable[[], Any]:
    """The renderer respond calls: labcoat.scale.view's views, stacked in order."""

    def render():
        from rich.console import Group as Stack

        from labcoat.scale import view as views

        return Stack(*(getattr(views, name)(*arguments[name]) for name in names))

    return render


@click.group("scale", cls=Group)
def scale() -> None:
    """Scaling-law fits with honest uncertainty, and backtests on held-out larger runs."""


@scale.command("fit")
@data_options()
@target_options
def fit_cmd(level, as_json, interval, **runs):
    """Fit the law (Huber on log loss, every grid start) with intervals and diagnostics."""
    result = _fit(level=level, **runs)
    if runs["target"] != "loss":
        respond(as_json, result, _views("downstream_view", downstream_view=(result,)))
        return
    respond(as_json, result, _views("fit_view", fit_view=(result, level)))


def _point(text: str, form: str) -> tuple[float, float | None]:
    parts = text.split(",")
    try:
        values = [float(p) for p in parts]
    except ValueError:
        values = []
    wanted = 1 if form == "curve" else 2
    if len(values) != wanted:
        shape = "X (one number)" if wanted == 1 else "N,D (two numbers, e.g. 7e10,1.4e12)"
        raise InputError(f"--at: expected {shape}; got {text!r}")
    return values[0], (values[1] if wanted == 2 else None)


@scale.command("predict")
@data_options()
@click.option(
    "--at",
    "at",
    multiple=True,
    required=True,
    help="Where to predict: N,D (or X for --form curve); repeatable.",
)
@target_options
def predict_cmd(level, as_json, at, **runs):
    """Predicted loss at new sizes, with the law's interval and a prediction interval."""
    import numpy as np

    form = runs["form"]
    points = [_point(p, "curve" if D_is_none(form) else form) for p in at]
    result = _fit(level=level, **runs)
    N = np.array([p[0] for p in points])
    D = None if D_is_none(form) else np.array([p[1] for p in points])
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if runs["target"] != "loss":
            prediction = result.predict(N, D)
        else:
            prediction = result.predict(N, D, level=level, interval=runs["interval"])
    for w in caught:
        if w.category.__name__ in ("ExtrapolationWarning", "PredictabilityWarning"):
            click.echo(f"labcoat: warning: {w.message}", err=True)
    if runs["target"] != "loss":
        render = _views(
            "downstream_prediction_view",
            "downstream_view",
            downstream_prediction_view=(prediction,),
            downstream_view=(result,),
        )
        respond(as_json, prediction, render)
        return
    render = _views(
        "prediction_view", "fit_view", prediction_view=(prediction,), fit_view=(result, level)
    )
    respond(as_json, prediction, render)


def D_is_none(form: str) -> bool:
    return form != "chinchilla"


@scale.command("optimal")
@data_options(flops_name=("--flops-col",))
@click.option(
    "--flops",
    "budgets",
    type=float,
    multiple=True,
    required=True,
    help="FLOP budget C; repeatable.",
)
def optimal_cmd(level, as_json, budgets, interval, **runs):
    """Compute-optimal N and D for FLOP budgets (C ≈ 6·N·D), with intervals."""
    if runs["form"] != "chinchilla":
        raise InputError("--form: optimal allocation needs the chinchilla form (loss in N and D)")
    result = _fit(level=level, **runs)
    allocation = result.optimal(list(budgets), level=level)
    render = _views(
        "allocation_view", "fit_view", allocation_view=(allocation,), fit_view=(result, level)
    )
    respond(as_json, allocation, render)


@scale.command("backtest")
@data_options(n_resamples=200)  # labcoat.scale.backtest's default: a refit per resample
@click.option(
    "--holdout-top",
    "top",
    type=click.IntRange(min=1),
    required=True,
    help="Hold out the K largest runs (ties included); per group with --by.",
)
@click.option(
    "--holdout-by",
    "holdout",
    type=click.Choice(["n", "compute"]),
    default="n",
    show_default=True,
    help="Largest by model size (or x) or by compute 6·N·D.",
)
@click.option(
    "--by",
    "by_col",
    default=None,
    help="Column naming each run's curve (a task, a model): one backtest per group.",
)
def backtest_cmd(level, as_json, top, holdout, by_col, html, **runs):
    """Fit the smaller runs, predict the K largest: per-run error, RMSE, interval coverage and
    width, and error against extrapolation distance (per group with --by)."""
    from labcoat.scale import backtest

    N, D, L = _read(**runs)
    by = None
    if by_col is not None:
        from labcoat.stats.readers import read_table

        table = read_table(runs["file"])
        if by_col in ("n", "compute") and by_col not in table.columns:
            # --by n|compute was the holdout before --by named a group column: one release more
            click.echo(
                f"labcoat: note: --by {by_col} is deprecated here; use --holdout-by {by_col} "
                "(--by now names a column of curves)",
                err=True,
            )
            holdout, by_col = by_col, None
        else:
            by = table.labels(by_col)
    if by_col is None and top >= len(L):
        raise InputError(
            f"--holdout-top: {top} of {len(L)} runs leaves none to fit; hold out fewer"
        )
    try:
        result = _backtest(backtest, N, D, L, holdout, top, by, level, runs)
    except InputError as exc:  # name the option, not the argument, where it is at fault
        text = str(exc)
        for arg, option in (("`top`", "--holdout-top"), ("holdout:", "--holdout-by:")):
            text = text.replace(arg, option)
        raise InputError(text) from None
    _page(result, html)
    respond(as_json, result, lambda: result)


def _backtest(backtest, N, D, L, holdout, top, by, level, runs):
    return backtest(
        N,
        D,
        L,
        holdout=holdout,
        top=top,
        form=runs["form"],
        n_resamples=runs["n_resamples"],
        seed=runs["seed"],
        level=level,
        interval=runs["interval"],
        by=by,
    )
