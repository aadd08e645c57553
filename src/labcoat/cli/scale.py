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
        html_option("Also write the answer (its fit included) as one self-contained HTML page."),
        json_option,
    ]

    def decorate(fn):
        for option in reversed(options):
            fn = option(fn)
        return fn

    return decorate


def _read(file, n_col, d_col, flops_col, x_col, loss_col, form, **_):
    """(N or x, D or None, L) from the runs table the data options name; runs all at one size
    are one line naming the file, the option and its column."""
    import numpy as np

    from labcoat.scale.data import read_runs

    one = "curve" if form in ("curve", "m1", "m2", "m3", "m4", "broken", "auto") else form
    N, D, L = read_runs(file, n_col, d_col, flops_col, x_col, loss_col, one)
    named = [("--x", x_col, N)] if D is None else [("--n", n_col, N)]
    if D is not None:
        named.append(("--d", d_col, D) if d_col is not None else ("--flops", flops_col, D))
    for option, column, values in named:
        if L.size > 1 and np.unique(values).size < 2:
            raise InputError(
                f"{file}: {option} {column}: all {L.size} runs are at one size ({values[0]:.4g});"
                " a law needs runs at 2 or more sizes (5 or more to extrapolate)"
            )
    return N, D, L


def _check_holdout(N, top: int) -> None:
    """--holdout-top against the number of runs (the library checks what the rest can fit)."""
    if top >= N.shape[0]:
        raise InputError(
            f"--holdout-top: {top} of {N.shape[0]} runs leaves none to fit; hold out fewer"
        )


def _fit(
    *,
    form,
    n_resamples,
    seed,
    ledger,
    no_ledger,
    interval=None,
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
        if form not in ("chinchilla", "m2"):  # fit_downstream's own loss laws
            law = "chinchilla" if D is not None else "m2"
            click.echo(
                f"labcoat: note: --target {target} fits the loss with {law}; --form {form} "
                "only chose how the columns are read",
                err=True,
            )
        try:
            result = fit(N, D, L, target=target, metric=metric, level=level, ledger=False)
        except InputError as exc:  # name the option and its column, not the argument
            text = str(exc)
            if text.startswith("metric:"):
                text = f"{columns['file']}: --metric {metric_col}:" + text[len("metric:") :]
            raise InputError(text) from None
        result.record(ledger_target(ledger, no_ledger))  # the library's fit records loss fits only
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
    return result


def _page(result: Any, html: str | None, file: str) -> None:
    """--html: the answer's page (a prediction's carries its fit), written after the answer is
    printed."""
    if html is not None:  # checked before the work (html_option)
        title = f"labcoat scale · {file}"
        click.get_current_context().call_on_close(lambda: result.to_html(html, title=title))


def _downstream_page(prediction: Any, fit: Any, html: str | None, file: str) -> None:
    """--html for a downstream prediction: its rows, then the downstream fit it came from."""
    if html is not None:
        from labcoat.report.page import Page
        from labcoat.report.sections.scale import downstream_answer_section

        page = Page(f"labcoat scale · {file}").add(downstream_answer_section(prediction, fit))
        click.get_current_context().call_on_close(lambda: page.save(html))


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
        help=(
            "Fit the loss, or a downstream accuracy or error (with --metric) through it (the "
            "loss law: m2 for --x, chinchilla for N and D)."
        ),
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
def fit_cmd(level, as_json, interval, html, **runs):
    """Fit the law (Huber on log loss, every grid start) with intervals and diagnostics."""
    result = _fit(level=level, **runs)
    _page(result, html, runs["file"])
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
def predict_cmd(level, as_json, at, html, **runs):
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
        _downstream_page(prediction, result, html, runs["file"])
        render = _views(
            "downstream_prediction_view",
            "downstream_view",
            downstream_prediction_view=(prediction,),
            downstream_view=(result,),
        )
        respond(as_json, prediction, render)
        return
    _page(prediction, html, runs["file"])
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
def optimal_cmd(level, as_json, budgets, interval, html, **runs):
    """Compute-optimal N and D for FLOP budgets (C ≈ 6·N·D), with intervals."""
    if runs["form"] != "chinchilla":
        raise InputError("--form: optimal allocation needs the chinchilla form (loss in N and D)")
    result = _fit(level=level, **runs)
    allocation = result.optimal(list(budgets), level=level)
    _page(allocation, html, runs["file"])
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
    if by_col is None:
        _check_holdout(N, top)
    try:
        result = _backtest(backtest, N, D, L, holdout, top, by, level, runs)
    except InputError as exc:  # name the option, not the argument, where it is at fault
        text = str(exc)
        variable, column = ("x", runs["x_col"]) if D is None else ("N", runs["n_col"])
        for arg, option in (
            ("`top`", "--holdout-top"),
            ("holdout:", "--holdout-by:"),
            (f"({variable} >= ", f"({column} >= "),
        ):
            text = text.replace(arg, option)
        raise InputError(text) from None
    if by is not None and not result.results:  # every group refused: no backtest to show
        label, why = next(iter(result.failures.items()))
        raise InputError(
            f"--by {by_col}: none of the {len(result.failures)} groups could be backtested "
            f"({label}: {why})"
        )
    _page(result, html, runs["file"])
    respond(as_json, result, lambda: _backtest_tables(result, N, D, L))


def _backtest_tables(result: Any, N, D, L) -> Any:
    """The backtest's tables: a group's set as it is, one backtest with each held-out run."""
    if not hasattr(result, "points"):
        return result
    import numpy as np

    from labcoat.scale.view import backtest_view

    return backtest_view(result, runs=(np.vstack([N] if D is None else [N, D]), L))


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
