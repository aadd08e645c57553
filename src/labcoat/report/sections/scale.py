"""A scaling-law fit: the runs, the fitted law with its prediction band, and (for a backtest)
the held-out runs it was asked to predict, each inside or outside its interval."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from labcoat.report import charts
from labcoat.report.ladder import findings_list
from labcoat.report.page import Section, esc

#: how far past the largest run the band is drawn (a factor on the x axis)
EXTRAPOLATE = 30.0


def _axis(fit: Any) -> tuple[np.ndarray, str]:
    """The x of each fitted run: compute (6·N·D) for a law in N and D, else its one variable."""
    x = np.asarray(fit._x, dtype=float)
    if x.shape[0] == 2:
        return 6.0 * x[0] * x[1], "compute C = 6·N·D (FLOP)"
    return x[0], getattr(fit.form, "variables", ("x",))[0]


def _band(fit: Any, lo: float, hi: float) -> tuple[np.ndarray, ...] | None:
    """The law along the x axis: the compute-optimal frontier for (N, D), else the curve."""
    grid = np.logspace(np.log10(lo), np.log10(hi), 80)
    if np.asarray(fit._x).shape[0] == 2:
        if getattr(fit.form, "name", "") != "chinchilla":
            return None
        alloc = fit.optimal(grid)
        low, high = (alloc.intervals or {}).get("loss", (alloc.loss, alloc.loss))
        return grid, alloc.loss, low, high
    if np.asarray(fit._x).shape[0] != 1:
        return None
    import warnings

    with warnings.catch_warnings():  # the chart runs past the runs on purpose
        warnings.filterwarnings("ignore", category=UserWarning, message="predicting")
        pred = fit.predict(grid)
    low, high = pred.interval if pred.interval is not None else (pred.loss, pred.loss)
    return grid, pred.loss, low, high


def _chart(fit: Any, held: list[dict] | None = None, title: str = "") -> str:
    x, label = _axis(fit)
    loss = np.asarray(fit._loss, dtype=float)
    points = {"fitted runs": (x, loss)}
    top = x.max()
    if held:
        if "D" in held[0]:
            hx = np.array([6.0 * p["N"] * p["D"] for p in held])
        else:
            hx = np.array([next(v for k, v in p.items() if k not in ("loss",)) for p in held])
        inside = np.array([bool(p.get("covered")) for p in held])
        observed = np.array([p["observed"] for p in held])
        points["held out, inside interval"] = (hx[inside], observed[inside])
        points["held out, outside interval"] = (hx[~inside], observed[~inside])
        top = max(top, hx.max())
    band = _band(fit, x.min(), top * (1.0 if held else EXTRAPOLATE))
    if band is None:
        return ""
    frontier = " (compute-optimal frontier)" if "compute" in label else ""
    return charts.band_chart(
        "scale-fit",
        *band,
        points=points,
        title=title or f"Fitted law{frontier} with its prediction band",
        xlabel=label,
        ylabel="loss",
        caption="The band is the law's bootstrap interval along the frontier; runs off the "
        "frontier sit above it."
        if frontier
        else "",
    )


def _params(params: dict[str, float], ci: dict[str, Any]) -> str:
    rows = "".join(
        f"<tr><td>{esc(k)}</td><td>{v:.4g}</td><td>"
        f"{'' if k not in ci else f'{ci[k][0]:.4g} – {ci[k][1]:.4g}'}</td></tr>"
        for k, v in params.items()
    )
    return (
        '<div class="scroll"><table><tr><th>parameter</th><th>estimate</th><th>95% '
        f"interval</th></tr>{rows}</table></div>"
    )


def scale_section(result: Any, *, title: str = "Scaling law", id: str = "scale") -> Section:
    """A :class:`~labcoat.scale.ScalingFit` or a backtest result (it has ``.fit`` and
    ``.points``)."""
    backtest = hasattr(result, "points") and hasattr(result, "fit")
    fit = result.fit if backtest else result
    # a fit read back from the ledger keeps its figures, not the runs it was fitted to
    live = not isinstance(fit, Mapping) and getattr(fit, "_x", None) is not None
    if live or not backtest:
        figures = fit.to_dict()
        meta = f"{figures['n_points']} runs · form {esc(figures['form'])} · objective "
        body = [f'<p class="meta">{meta}{figures["objective"]:.4g}</p>']
    else:  # a stored backtest: its fit's parameters only
        figures = {"params": fit["params"], "ci": None}
        body = [f'<p class="meta">{result.n_fit} runs · form {esc(result.form)}</p>']
    if backtest:
        body.append(
            f'<div class="verdict {"pass" if result.coverage >= 0.9 * result.level else "warn"}">'
            f"Backtest ({esc(result.holdout)}): {result.n_holdout} held-out runs predicted from "
            f"{result.n_fit}; MAPE {result.mape:.2f}%, {result.coverage:.0%} inside their "
            f"{result.level:.0%} intervals</div>"
        )
    chart = _chart(fit, result.points if backtest else None) if live else ""
    if chart:
        body.append(chart)
    elif not live:
        body.append(
            '<p class="muted">The runs are not stored with the fit: fit them again to draw the '
            "law and its band.</p>"
        )
    body.append(_params(figures["params"], figures["ci"] or {}))
    diagnostics = fit.findings if live or not backtest else result.findings
    if diagnostics:
        body.append("<h3>Diagnostics</h3>" + findings_list(f.to_dict() for f in diagnostics))
    return Section(title, "\n".join(body), id=id)


def answer_section(result: Any, *, title: str = "", id: str = "scale") -> Section:
    """A prediction or an allocation (:class:`~labcoat.scale.result.FromFit`): its rows, then
    the fit it came from when it is at hand (a stored answer keeps its rows only)."""
    body = [_answer_rows(result.to_dict())]
    fit = getattr(result, "fit", None) if "_stored" not in vars(result) else None
    if fit is not None:
        body.append("<h3>The fit</h3>" + scale_section(fit).body)
    return Section(title or result.title, "\n".join(body), id=id)


def downstream_answer_section(
    prediction: Any, fit: Any, *, title: str = "Downstream prediction", id: str = "scale"
) -> Section:
    """A downstream prediction (``labcoat scale predict --target``): its rows, then the
    downstream fit (its verdict and backtest) it came from."""
    body = [_answer_rows(prediction.to_dict()), "<h3>The fit</h3>" + downstream_section(fit).body]
    return Section(title, "\n".join(body), id=id)


def _answer_rows(data: Mapping[str, Any]) -> str:
    """An answer's rows (predictions or allocations) as a table, under its level."""
    rows = data.get("predictions") or data.get("optimal") or []
    columns = [k for k in (rows[0] if rows else {}) if k not in ("kind", "version")]
    table = "".join(
        "<tr>" + "".join(f"<td>{_cell(row.get(c))}</td>" for c in columns) + "</tr>" for row in rows
    )
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    return (
        f'<p class="meta">{data["level"]:.0%} intervals</p>\n'
        f'<div class="scroll"><table><tr>{head}</tr>{table}</table></div>'
    )


def _cell(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, list):
        return f"{value[0]:.4g} – {value[1]:.4g}"
    return f"{value:.4g}" if isinstance(value, float) else esc(value)


def _figure(backtest: Any, name: str) -> Any:
    """One figure of a backtest: live, or the record a stored set keeps for it (its form is
    the name the record keeps, a live one's its fit's)."""
    if isinstance(backtest, Mapping):
        return backtest[name]
    return backtest.fit.form.name if name == "form" else getattr(backtest, name)


def backtest_set_section(result: Any, *, title: str = "Backtests by group", id: str = "scale"):
    """A :class:`~labcoat.scale.BacktestSet`: the pooled figures, then one backtest per group."""
    names = ("n_fit", "n_holdout", "rmse", "coverage", "median_width")
    rows = "".join(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.4f}</td><td>{:.0%}</td>"
        "<td>{:.1%}</td></tr>".format(
            esc(label), esc(_figure(r, "form")), *(_figure(r, n) for n in names)
        )
        for label, r in result.results.items()
    )
    body = [
        f'<p class="meta">{len(result.results)} groups · {esc(result.interval)} '
        f"{result.level:.0%} intervals · coverage {result.coverage:.1%} · median width "
        f"{result.median_width:.1%} · median RMSE of log loss {result.median_rmse:.4f}</p>",
        "<table><tr><th>group</th><th>form</th><th>fitted</th><th>held out</th>"
        f"<th>RMSE log</th><th>coverage</th><th>width</th></tr>{rows}</table>",
    ]
    body += [f"<p>{esc(k)}: {esc(v)}</p>" for k, v in result.failures.items()]
    return Section(title, "\n".join(body), id=id)


def downstream_section(result: Any, *, title: str = "Downstream fit", id: str = "scale"):
    """A :class:`~labcoat.scale.DownstreamFit`: its verdict and its backtest against a constant."""
    verdict = "pass" if result.predictable else "fail"
    bt = result.backtest
    body = [
        f'<div class="verdict {verdict}">{esc(result.target)} via {esc(result.via)} '
        f"({esc(result.link)} link): {'predictable' if result.predictable else 'NOT predictable'}"
        f" — {esc(result.reason)}</div>",
        f'<p class="meta">{result.n_points} runs · backtest MAE {bt["mae"]:.4g} against a '
        f"constant's {bt['constant_mae']:.4g} · "
        + (f"{bt['pairs']} extrapolations from " if "pairs" in bt else "")  # not in its record
        + f"{bt['origins']} origins</p>",
        findings_list(f.to_dict() for f in result.findings),
    ]
    return Section(title, "\n".join(body), id=id)
