"""Eval statistics: a forest plot of means or paired differences with their intervals, a
leaderboard's rank intervals and indistinguishable groups, a release gate's decision, and a
power curve (the smallest detectable difference against the number of questions)."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from labcoat.report import charts
from labcoat.report.page import Section, esc


def _num(v: Any, digits: int = 4) -> str:
    return f"{v:.{digits}g}" if isinstance(v, (int, float)) and not isinstance(v, bool) else esc(v)


def _ci(ci: Any) -> str:
    return f"[{_num(ci[0])}, {_num(ci[1])}]" if ci else ""


def _warnings(d: Mapping[str, Any]) -> str:
    return "".join(f'<p class="warn">! {esc(w)}</p>' for w in d.get("warnings") or [])


def power_curve(mde: float, n: int, name: str = "power") -> str:
    """MDE against n, from the comparison's own standard error per question (MDE ∝ 1/√n)."""
    if not (mde and n and np.isfinite(mde)):
        return ""
    grid = np.unique(np.geomspace(max(2, n / 8), n * 8, 60).astype(int))
    curve = mde * np.sqrt(n / grid)
    return charts.line_chart(
        name,
        {"minimum detectable difference": (grid, curve)},
        title="Power: what more questions would detect",
        xlabel="questions (n)",
        ylabel="MDE (80% power)",
        alerts=[(n, "now")],
        caption=f"At n = {n} a true difference of {mde:.3g} is detected 80% of the time (red line: "
        "now).",
    )


def _compare(d: Mapping[str, Any], name: str) -> str:
    rows = [(f"{d.get('name') or name}: difference", d["diff"], *d["ci"])]
    chart = charts.forest(
        f"stats-{name}",
        rows,
        reference=0.0,
        title="Paired difference with its interval"
        if d.get("paired")
        else "Difference with its interval",
        xlabel="difference",
    )
    fields = [
        ("mean a", d.get("mean_a")),
        ("mean b", d.get("mean_b")),
        ("difference", d.get("diff")),
        (f"{d.get('level', 0.95):.0%} interval", _ci(d.get("ci"))),
        ("p-value", d.get("pvalue")),
        ("questions", d.get("n")),
        ("clusters", d.get("n_clusters")),
        ("MDE", d.get("mde")),
        ("effect size (d)", d.get("effect_size")),
        ("formula", d.get("formula")),
    ]
    table = "".join(f"<tr><td>{k}</td><td>{_num(v)}</td></tr>" for k, v in fields if v is not None)
    return (
        chart
        + f'<div class="scroll"><table class="evidence">{table}</table></div>'
        + power_curve(d.get("mde"), d.get("n"), f"power-{name}")
    )


def _leaderboard(d: Mapping[str, Any], name: str) -> str:
    models = d["models"]
    chart = charts.forest(
        f"leaderboard-{name}",
        [(m["name"], m["mean"], *m["ci"]) for m in models],
        title="Models, best first, with their intervals",
        xlabel="mean score",
    )
    rows = "".join(
        f"<tr><td>{m['rank']}</td><td>{esc(m['name'])}</td><td>{_num(m['mean'])}</td><td>"
        f"{_ci(m['ci'])}</td><td>{m['rank_ci'][0]}–{m['rank_ci'][1]}</td></tr>"
        for m in models
    )
    table = (
        '<div class="scroll"><table '
        'data-table="leaderboard"><tr><th>rank</th><th>model</th><th>mean</th>'
        f"<th>interval</th><th>rank interval (Holm)</th></tr>{rows}</table></div>"
    )
    groups = "".join(f"<li>{esc(', '.join(g))}</li>" for g in d.get("groups", []))
    pairs = "".join(
        f"<tr><td>{esc(p['a'])} − {esc(p['b'])}</td><td>{_num(p['diff'])}</td><td>{_ci(p['ci'])}"
        f"</td><td>{_num(p.get('pvalue_holm'))}</td></tr>"
        for p in d.get("pairs", [])
    )
    return (
        chart + table + f"<h3>Groups that cannot be told apart</h3><ul>{groups}</ul>"
        "<h3>Pairs (Holm-corrected)</h3><div "
        'class="scroll"><table><tr><th>pair</th><th>difference</th>'
        f"<th>interval</th><th>p (Holm)</th></tr>{pairs}</table></div>"
    )


def _gate(d: Mapping[str, Any], name: str) -> str:
    css = {"ALLOW": "pass", "REJECT": "fail"}.get(d["decision"], "warn")
    more = f"; about {d['more_items']} more questions would decide" if d.get("more_items") else ""
    head = (
        f'<div class="verdict {css}" data-decision="{esc(d["decision"])}">'
        f"{esc(d['decision'])}: new − old = "
        f"{_num(d['diff'])} {_ci(d['ci'])}, margin {_num(d['margin'])}{more}</div>"
    )
    chart = charts.forest(
        f"gate-{name}",
        [("new − old", d["diff"], *d["ci"])],
        reference=-d["margin"],
        title="Difference against the non-inferiority margin (dashed)",
        xlabel="difference",
    )
    return head + chart


def _mean(d: Mapping[str, Any], name: str) -> str:
    chart = charts.forest(
        f"mean-{name}",
        [(name, d["mean"], *d["ci"])],
        title="Mean with its interval",
        xlabel="mean score",
    )
    return (
        chart + f'<p class="meta">n = {d.get("n")}, SE {_num(d.get("se"))}, '
        f"{esc(d.get('formula', ''))}</p>"
    )


def _numbers(d: Mapping[str, Any], name: str) -> str:
    """The result's numbers as a table: for a result with no chart of its own."""
    rows = "".join(
        f"<tr><td>{esc(k)}</td><td>{_num(v) if not isinstance(v, list) else _short(v)}</td></tr>"
        for k, v in d.items()
        if k not in ("kind", "version", "warnings", "findings") and not isinstance(v, dict)
    )
    return f'<div class="scroll"><table class="evidence">{rows}</table></div>'


def _short(values: list) -> str:
    shown = ", ".join(_num(v) for v in values[:8])
    return esc(f"[{shown}{', …' if len(values) > 8 else ''}]")


#: result kind -> what draws it; any other kind is drawn as a table of its numbers
DRAW = {
    "stats.leaderboard": _leaderboard,
    "stats.gate": _gate,
    "stats.compare": _compare,
    "stats.compare.exclude": _compare,
    "stats.mean": _mean,
}


def stats_section(
    result: Any, *, title: str = "Stats", name: str | None = None, id: str = "stats"
) -> Section:
    """A stats result or its ``to_dict()``, drawn by its ``kind``; ``name`` (default: ``id``)
    keeps its charts apart from the others on the page."""
    d = result.to_dict() if hasattr(result, "to_dict") else dict(result)
    name = id if name is None else name
    body = DRAW.get(d.get("kind"), _numbers)(d, name)
    return Section(title, _warnings(d) + body, id=id)
