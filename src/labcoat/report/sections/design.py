"""A design's page section (its runs and aliasing) and its analysis' (the effects with their
intervals, and the half-normal plot that ranks them even when no interval can be stated)."""

from __future__ import annotations

from typing import Any

from labcoat.report.ladder import findings_list
from labcoat.report.page import Section, esc


def design_section(d: Any, *, title: str = "Design", **_: Any) -> Section:
    rows = "".join(
        f"<tr><th>{esc(name)}</th><td>{esc(', '.join(aliases) or '-')}</td>"
        f"<td>{esc(f'{d.power[name]:.2f}' if name in d.power else '-')}</td></tr>"
        for name, aliases in d.aliases.items()
    )
    statements = "".join(f"<li>{esc(s)}</li>" for s in d.statements)
    body = (
        f"<p>{esc(d.describe())}</p>"
        f'<table data-table="design"><tr><th>effect</th><th>aliased with</th><th>power</th></tr>'
        f"{rows}</table><ul>{statements}</ul>" + findings_list([f.to_dict() for f in d.findings])
    )
    return Section(title, body, id="design")


def half_normal(a: Any) -> str:
    """|effect| against half-normal quantiles: real effects stand off the line of the rest."""
    from scipy import stats

    from labcoat.report.charts import figure, to_svg

    shown = [r for r in a.effects if r["estimate"] is not None]
    if len(shown) < 2:
        return ""
    shown.sort(key=lambda r: abs(r["estimate"]))
    m = len(shown)
    q = stats.halfnorm.ppf([(i + 0.5) / m for i in range(m)])
    fig, ax = figure(6.4, 3.2)
    ax.scatter(q, [abs(r["estimate"]) for r in shown], s=14)
    for x, r in zip(q, shown):
        if r["decision"] == "effect":
            ax.annotate(r["effect"], (x, abs(r["estimate"])), fontsize=7, xytext=(3, 2),
                        textcoords="offset points")  # fmt: skip
    ax.set_xlabel("half-normal quantile")
    ax.set_ylabel(f"|effect on {a.metric}|")
    ax.set_title("half-normal plot of the effects")
    return to_svg(fig, "half-normal", "effects far above the line of the others are real")


def analysis_section(a: Any, *, title: str = "Design analysis", **_: Any) -> Section:
    rows = []
    for r in a.effects:
        ci = "-" if r["ci"] is None else f"[{r['ci'][0]:+.4g}, {r['ci'][1]:+.4g}]"
        est = "-" if r["estimate"] is None else f"{r['estimate']:+.4g}"
        p = "-" if r["pvalue_adjusted"] is None else f"{r['pvalue_adjusted']:.3g}"
        rows.append(
            f"<tr><td>{esc(r['effect'])}</td><td>{esc(est)}</td><td>{esc(ci)}</td>"
            f"<td>{esc(p)}</td><td>{esc(r['decision'])}</td></tr>"
        )
    body = (
        f"<p><strong>{esc(a.headline)}</strong></p>"
        '<table data-table="effects"><tr><th>effect</th><th>estimate</th>'
        f"<th>{a.level:.0%} CI</th><th>p (Holm)</th><th>decision</th></tr>"
        + "".join(rows)
        + "</table>"
        + half_normal(a)
        + findings_list([f.to_dict() for f in a.findings])
    )
    return Section(title, body, id="design-analysis")


def verdict_section(v: Any, *, title: str = "Design verdict", **_: Any) -> Section:
    """The verdict's first line and reasons, the deviations, then the analysis (effects and
    the half-normal plot)."""
    try:
        analysis = v.analysis
    except AttributeError:  # a verdict read back from the ledger: the analysis its record keeps
        from labcoat.engines import load_result

        kept = v.to_dict()
        analysis = load_result(
            {k: kept[k] for k in ("metric", "effects", "df", "noise", "level", "alpha")}
            | {"kind": "design.analysis", "version": 1, "findings": []}
            | {"headline": kept["headline"], "runs": kept["n"]["runs"]}
        )
    reasons = "".join(f"<li>{esc(r)}</li>" for r in v.reasons)
    deviations = "".join(f"<li>{esc(d['message'])}</li>" for d in v.deviations)
    body = (
        f"<p><strong>{esc(v.headline)}</strong></p><ul>{reasons}</ul>"
        + (
            f'<h3>deviations from the plan</h3><ul data-list="deviations">{deviations}</ul>'
            if deviations
            else ""
        )  # fmt: skip
        + analysis_section(analysis).body
        + findings_list([f.to_dict() for f in v.findings if f not in analysis.findings])
    )
    return Section(title, body, id="design-verdict")
