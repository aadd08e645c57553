"""Rich views of scaling fits, predictions, allocations and backtests (the CLI's tables)."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from labcoat.view import findings_grid


def _g(x: float | None, digits: int = 4) -> str:
    return "–" if x is None else f"{x:.{digits}g}"


def _pair(pair, digits: int = 4) -> str:
    return "–" if pair is None else f"[{pair[0]:.{digits}g}, {pair[1]:.{digits}g}]"


def fit_view(fit, level: float = 0.95) -> RenderableType:
    has_boot = len(fit.bootstrap_theta) >= 2
    cis = fit.confidence_interval(level) if has_boot else {}
    table = Table(title=f"{fit.form.name} fit on {fit.n_points} runs", title_justify="left")
    table.add_column("parameter")
    table.add_column("estimate", justify="right")
    table.add_column(f"{level:.0%} CI (bootstrap, {len(fit.bootstrap_theta)})", justify="right")
    for name, value in fit.params.items():
        table.add_row(name, _g(value), _pair(cis.get(name)))
    note = Text(
        f"Huber δ={fit.huber_delta:g} on log loss, best of {fit.n_starts} starts, "
        f"objective {fit.objective:.6g}",
        style="dim",
    )
    parts = [table, note]
    seeds = _seeds(fit)
    if seeds:
        parts.append(Text(seeds))
    if fit.selection:
        parts.append(Text(f"form {fit.selection['chosen']}: {fit.selection['why']}"))
    return Group(*parts, findings_grid(fit.findings))


def _seeds(fit) -> str:
    """How many runs (seeds) each size has: seeds at one size are replicates of one point."""
    import numpy as np

    from labcoat.scale.calibrate import replicates

    x = getattr(fit, "_x", None)
    if x is None:  # a fit read back from the ledger keeps no runs
        return ""
    uniq, inverse = replicates(np.asarray(x, dtype=float))
    counts = np.bincount(inverse)
    if counts.min() == counts.max():
        each = f"{counts[0]} seed{'s' if counts[0] > 1 else ''} each"
    else:
        at = ["×".join(_g(v, 3) for v in point) + f": {c}" for point, c in zip(uniq.T, counts)]
        each = "seeds per size " + ", ".join(at)
    return f"{counts.sum()} runs at {uniq.shape[1]} sizes, {each}"


def prediction_view(prediction) -> RenderableType:
    how = prediction.method
    if prediction.calibration:
        c = prediction.calibration
        own = c.get("coverage")
        how += f", {c['method']}" + (f", own coverage {own:.0%}" if own is not None else "")
    table = Table(
        title=f"predicted loss ({prediction.level:.0%} intervals: {how})", title_justify="left"
    )
    for name in prediction.points:
        table.add_column(name, justify="right")
    table.add_column("loss", justify="right")
    table.add_column("law CI", justify="right")
    table.add_column("prediction interval", justify="right")
    table.add_column("log distance", justify="right")
    for row in prediction.rows():
        table.add_row(
            *(_g(row[n]) for n in prediction.points),
            _g(row["loss"]),
            _pair(row["ci"]),
            _pair(row["interval"]),
            _g(row.get("distance"), 3),
        )
    return table


def allocation_view(allocation) -> RenderableType:
    table = Table(
        title=f"compute-optimal allocation, C ≈ 6·N·D ({allocation.level:.0%} intervals)",
        title_justify="left",
    )
    for column in ("FLOPs", "N", "N interval", "D", "D interval", "D/N", "loss", "loss interval"):
        table.add_column(column, justify="right")
    for row in allocation.rows():
        table.add_row(
            _g(row["flops"], 3),
            _g(row["N"], 3),
            _pair(row.get("N_interval"), 3),
            _g(row["D"], 3),
            _pair(row.get("D_interval"), 3),
            f"{row['tokens_per_parameter']:.1f}",
            _g(row["loss"]),
            _pair(row.get("loss_interval")),
        )
    return table


def backtest_view(result, runs=None) -> RenderableType:
    """The held-out points, the summary and the fit's diagnostics; ``runs`` (the variables,
    (k, n), and the losses of every run) adds each held-out run's row where seeds were scored
    by their mean."""
    variables = result.fit.form.variables
    table = Table(
        title=(
            f"backtest: fitted {result.n_fit} runs, predicted {result.n_holdout} held out "
            f"({result.holdout})"
        ),
        title_justify="left",
    )
    means = result.scored == "seed means"
    for column in (
        *variables,
        "seeds",
        "observed (mean)" if means else "observed",
        "predicted",
        f"{result.level:.0%} interval" + (" of the mean" if means else ""),
        "point error %",
        "interval score %",
        "inside",
    ):
        table.add_column(column, justify="right")
    for p in result.points:
        inside = "–" if p["covered"] is None else ("yes" if p["covered"] else "NO")
        score = p.get("interval_score")
        table.add_row(
            *(_g(p[v], 3) for v in variables),
            str(p.get("seeds", 1)),
            _g(p["observed"]),
            _g(p["loss"]),
            _pair(p.get("mean_interval") if means else p["interval"]),
            f"{p['percent_error']:+.2f}",
            "–" if score is None else f"{100 * score:.2f}",
            inside,
        )
    width = (
        ""
        if result.median_width != result.median_width
        else (f"  ·  median width {result.median_width:.1%}")
    )
    calibration = result.calibration or {}
    own = calibration.get("coverage")
    how = (
        f"  ·  {result.interval} ({calibration.get('method')}"
        + (f", own coverage {own:.0%}" if own is not None else "")
        + ")"
        if calibration
        else f"  ·  {result.interval}"
    )
    score = (
        ""
        if result.interval_score != result.interval_score
        else f"  ·  interval score {100 * result.interval_score:.2f}% of the value"
    )
    summary = Text(
        f"point error (MAPE) {result.mape:.2f}%  ·  RMSE log {result.rmse:.4f}  ·  coverage "
        f"{result.coverage:.0%} (nominal {result.level:.0%}){width}{score}{how}"
    )
    parts = [table, summary]
    if runs is not None and means:
        parts.append(backtest_runs_view(result, *runs))
    if result.fit.selection:
        parts.append(Text(f"form {result.fit.form.name}: {result.fit.selection['why']}"))
    return Group(*parts, findings_grid(result.fit.findings))


def backtest_runs_view(result, x, loss) -> RenderableType:
    """Each held-out run against the interval for one new run (``x``: the runs' variables,
    (k, n); ``loss``: theirs), numbered as the rows of the file from 1; the backtest itself
    scores a size's seeds by their mean."""
    variables = result.fit.form.variables
    at = {tuple(p[v] for v in variables): p for p in result.points}
    table = Table(
        title=f"held-out runs ({result.level:.0%} interval for one run)", title_justify="left"
    )
    for column in ("row", *variables, "observed", "predicted", "point error %", "inside"):
        table.add_column(column, justify="right")
    for i in range(len(loss)):
        p = at.get(tuple(float(v) for v in x[:, i]))
        if p is None:  # a fitted run
            continue
        band = p.get("interval")
        table.add_row(
            str(i + 1),
            *(_g(p[v], 3) for v in variables),
            _g(loss[i]),
            _g(p["loss"]),
            f"{100 * (p['loss'] / loss[i] - 1):+.2f}",
            "–" if band is None else ("yes" if band[0] <= loss[i] <= band[1] else "NO"),
        )
    return table


def backtest_set_view(result) -> RenderableType:
    table = Table(
        title=f"backtests by group ({result.interval} {result.level:.0%} intervals)",
        title_justify="left",
    )
    columns = ("group", "form", "fitted", "held out", "point error %", "RMSE log", "coverage")
    for column in (*columns, "width", "interval score %"):
        table.add_column(column, justify="right")
    for label, r in result.results.items():
        table.add_row(
            label,
            r.fit.form.name,
            str(r.n_fit),
            str(r.n_holdout),
            f"{r.mape:.2f}",
            f"{r.rmse:.4f}",
            "–" if r.coverage != r.coverage else f"{r.coverage:.0%}",
            "–" if r.median_width != r.median_width else f"{r.median_width:.1%}",
            "–" if r.interval_score != r.interval_score else f"{100 * r.interval_score:.2f}",
        )
    lines = [
        f"coverage {result.coverage:.1%} of every held-out point (nominal {result.level:.0%}); "
        f"median width {result.median_width:.1%}; interval score "
        f"{100 * result.interval_score:.2f}% of the value; point error (MAPE) "
        f"{result.mape:.2f}%; median RMSE of log loss {result.median_rmse:.4f}"
    ]
    lines += [f"{label}: {why}" for label, why in result.failures.items()]
    return Group(table, Text("\n".join(lines)))


def downstream_view(result) -> RenderableType:
    bt = result.backtest
    head = Text(
        f"{result.target} via {result.via} ({result.link} link) on {result.n_points} runs: "
        + ("predictable" if result.predictable else "NOT predictable")
        + f" — {result.reason}",
        style="green" if result.predictable else "bold red",
    )
    shown = ", ".join(f"{k}={v:.4g}" for k, v in result.params.items())
    meta = Text(
        f"link {shown}; backtest MAE {bt['mae']:.4g} against a constant's "
        f"{bt['constant_mae']:.4g} ({bt['pairs']} extrapolations, {bt['origins']} origins)",
        style="dim",
    )
    return Group(head, meta, findings_grid(result.findings))


def downstream_prediction_view(prediction) -> RenderableType:
    table = Table(
        title=f"predicted {prediction.target} ({prediction.level:.0%} intervals)"
        + ("" if prediction.predictable else " — NOT predictable"),
        title_justify="left",
    )
    for name in prediction.points:
        table.add_column(name, justify="right")
    for column in (prediction.target, "interval", "log distance"):
        table.add_column(column, justify="right")
    for i in range(prediction.value.size):
        low, high = prediction.interval[0][i], prediction.interval[1][i]
        shown = "[0, 1]: refused" if low <= 0 and high >= 1 else _pair((low, high), 3)
        table.add_row(
            *(_g(v[i]) for v in prediction.points.values()),
            _g(prediction.value[i], 3),
            shown,
            _g(prediction.distance[i], 3),
        )
    return table
