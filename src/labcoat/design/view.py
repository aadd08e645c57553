"""Terminal views of a design and its analysis (imported only to draw them)."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text


def design_view(d: Any) -> Group:
    from labcoat.view import findings_grid

    head = Text(d.describe(), style="bold")
    runs = Table(title="runs (first seed)", title_justify="left")
    for f in d.factors:
        runs.add_column(f)
    for row in d.runs[: d.runs_per_seed]:
        runs.add_row(*(str(row[f]) for f in d.factors))
    effects = Table(title="planned effects", title_justify="left")
    effects.add_column("effect")
    effects.add_column("aliased with")
    effects.add_column("power", justify="right")
    for effect in d.effects:
        name = ":".join(effect)
        power = d.power.get(name)
        aliases = d.aliases.get(name, [])
        effects.add_row(name, ", ".join(aliases) or "-", "-" if power is None else f"{power:.2f}")
    parts: list[Any] = [head, runs, effects]
    parts += [Text(s) for s in d.statements[:8]]
    if d.ofat:
        o = d.ofat
        parts.append(
            Text(
                f"one factor at a time needs {o['runs']} runs ({o['seeds_per_arm']} seeds per "
                f"arm) for the same power {o['power']:.2f}: this design uses {o['ratio']:.0%}"
            )
        )
    parts.append(findings_grid(d.findings))
    return Group(*parts)


def analysis_view(a: Any) -> Group:
    from labcoat.view import findings_grid

    table = Table(title=f"effects on {a.metric} (high - low)", title_justify="left")
    for col, justify in (
        ("effect", "left"),
        ("estimate", "right"),
        (f"{a.level:.0%} CI", "right"),
        ("p (Holm)", "right"),
        ("decision", "left"),
    ):
        table.add_column(col, justify=justify)
    for r in a.effects:
        est = "-" if r["estimate"] is None else f"{r['estimate']:+.4g}"
        ci = "-" if r["ci"] is None else f"[{r['ci'][0]:+.4g}, {r['ci'][1]:+.4g}]"
        p = "-" if r["pvalue_adjusted"] is None else f"{r['pvalue_adjusted']:.3g}"
        table.add_row(r["effect"], est, ci, p, r["decision"])
    return Group(Text(a.headline, style="bold"), table, findings_grid(a.findings))


def verdict_view(v: Any) -> Group:
    from labcoat.view import findings_grid

    parts: list[Any] = [Text(v.headline, style="bold")]
    parts += [Text(f"  {r}") for r in v.reasons]
    parts.append(analysis_view(v.analysis).renderables[1])
    parts += [Text(f"deviation: {d['message']}") for d in v.deviations[:10]]
    if len(v.deviations) > 10:
        parts.append(Text(f"... and {len(v.deviations) - 10} more deviation(s)"))
    parts.append(findings_grid(v.findings))
    return Group(*parts)
