"""Rich views of :mod:`labcoat.stats` results, in Miller's reporting format: ``score (SE)``,
number of questions and clusters; for comparisons the difference, its SE, the interval and the
correlation. Result objects stay free of formatting; the CLI renders them here.

No number is ever cut: a one-row table that does not fit the terminal is drawn as one
``name  value`` line per column instead (:class:`OneRow`), and every column folds a long value
onto a second line rather than ending it in "…" (:func:`_uncut`)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:  # the results name their views; the views only read them
    from labcoat.stats._results import BootstrapResult
    from labcoat.stats.compare import CompareResult, ExclusionResult
    from labcoat.stats.effects import PermutationResult
    from labcoat.stats.gate import GateResult
    from labcoat.stats.leaderboard import LeaderboardResult
    from labcoat.stats.mean import MeanResult
    from labcoat.stats.multiple import AdjustedPValues
    from labcoat.stats.power import PowerResult
    from labcoat.stats.proportions import McNemarResult, ProportionResult
    from labcoat.stats.seeds import MethodsSummary
    from labcoat.stats.sequential import SequentialResult


def _num(x: float | None, digits: int = 4) -> str:
    return "–" if x is None else f"{x:.{digits}g}"


def _ci(low: float, high: float, digits: int = 4) -> str:
    return f"[{low:.{digits}g}, {high:.{digits}g}]"


def _level(level: float) -> str:
    return f"{100 * level:g}% CI"


def _with_warnings(table: Table, warnings: Iterable[str]) -> RenderableType:
    notes = [Text(f"! {w}", style="yellow") for w in warnings]
    return Group(table, *notes) if notes else table


def _uncut(table: Table) -> Table:
    """Long values fold onto a second line instead of ending in "…"."""
    for column in table.columns:
        column.overflow = "fold"
    return table


class OneRow:
    """A one-row table; where it is wider than the terminal, the same cells as one
    ``header  value`` line each, so the numbers people read first are never cut."""

    def __init__(self, table: Table):
        self.table = _uncut(table)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        natural = options.update(width=10_000, max_width=10_000)  # its width if uncramped
        width = Measurement.get(console, natural, self.table).maximum
        if width <= options.max_width or not self.table.rows:
            yield self.table
            return
        if self.table.title:  # on its own line: the narrow table would wrap it
            yield Text(str(self.table.title))
        tall = Table(show_header=False)
        tall.add_column(style="bold")
        tall.add_column(justify="right", overflow="fold")
        for column in self.table.columns:
            cells = list(column.cells)
            tall.add_row(str(column.header) or "", cells[0] if cells else "")
        yield tall
        if self.table.caption:
            yield Text(str(self.table.caption))


def _interval_name(df: float | None, method: str = "") -> str:
    if method == "wilson":
        return "Wilson"
    return "z" if df is None else f"t({df:.4g})"


def mean_view(result: MeanResult, label: str = "score") -> RenderableType:
    table = Table(title="mean score", title_justify="left")
    for col in ("", "score (SE)", _level(result.level), "interval", "n", "clusters", "K"):
        table.add_column(col, justify="right" if col else "left")
    ci = result.ci
    table.add_row(
        label,
        f"{result.mean:.4g} ({result.se:.2g})",
        _ci(ci.low, ci.high),
        _interval_name(result.df, result.interval),
        str(result.n),
        "–" if result.n_clusters is None else str(result.n_clusters),
        f"{result.k:g}",
    )
    parts: list[RenderableType] = [OneRow(table)]
    if result.n_clusters is not None and result.se_clt > 0:
        ratio = result.se / result.se_clt
        parts.append(
            Text(
                f"clustered SE ({result.formula}) is {ratio:.2f}x the naive CLT SE "
                f"({result.se_clt:.2g})",
                style="dim",
            )
        )
    return _with_warnings(Group(*parts), result.notes)


def compare_view(
    result: CompareResult,
    labels: tuple[str, str] = ("A", "B"),
    mcnemar: McNemarResult | None = None,
    permutation: PermutationResult | None = None,
) -> RenderableType:
    kind = "paired" if result.paired else "unpaired"
    table = Table(title=f"{labels[0]} − {labels[1]} ({kind})", title_justify="left")
    stat = "z" if result.df is None else "t"
    for col in (
        "diff (SE)",
        _level(result.level),
        stat,
        "p",
        "MDE",
        "d",
        "corr",
        "n",
        "clusters",
    ):
        table.add_column(col, justify="right")
    ci = result.ci
    table.add_row(
        f"{result.diff:+.3g} ({result.se:.2g})",
        _ci(ci.low, ci.high, digits=3),
        f"{result.statistic:.3g}",
        f"{result.pvalue:.3g}",
        f"{result.mde:.3g}",
        f"{result.effect_size:.3g}",
        _num(result.correlation, 3),
        str(result.n),
        "–" if result.n_clusters is None else str(result.n_clusters),
    )
    parts: list[RenderableType] = [
        OneRow(table),
        Text(
            f"means: {labels[0]} {result.mean_a:.4g}, {labels[1]} {result.mean_b:.4g}; "
            f"{_how_se(result)}; MDE at 80% power; d: Cohen's "
            f"{'d_z' if result.paired else 'd'}",
            style="dim",
        ),
    ]
    if mcnemar is not None:
        kind = "exact" if mcnemar.exact else "chi-square, continuity-corrected"
        parts.append(
            Text(
                f"McNemar ({kind}): only {labels[0]} right {mcnemar.only_a}, only {labels[1]} "
                "right "
                f"{mcnemar.only_b}, p = {mcnemar.pvalue:.3g}",
                style="dim",
            )
        )
    if permutation is not None:
        how = "exact" if permutation.exact else f"{permutation.null_distribution.size} sign flips"
        parts.append(
            Text(
                f"paired permutation test ({how}, {permutation.n_units} units): p = "
                f"{permutation.pvalue:.3g}",
                style="dim",
            )
        )
    parts.extend(Text(f"! {w}", style="yellow") for w in result.notes)
    return Group(*parts)


def _how_se(result: CompareResult) -> str:
    """What the SE and the interval were computed from, in words (no formula code where no
    clusters were given: a CR1 over one question per cluster is the plain SE)."""
    test = "z" if result.df is None else f"t, df {result.df:.4g}"
    if result.n_clusters is None:
        unit = "paired differences" if result.paired else "questions"
        return f"SE over {result.n} independent {unit} ({test})"
    what = "CR1 cluster-robust" if result.formula == "cr1" else f"{result.formula} clustered"
    return f"{what} SE over {result.n_clusters} clusters ({test})"


def exclusion_view(result: ExclusionResult, labels: tuple[str, str] = ("A", "B")) -> RenderableType:
    head = compare_view(result.kept, labels)
    before = result.full
    verdict = "CHANGES" if result.decision_changed else "does not change"
    note = Text(
        f"without {result.n_excluded_a} flagged question(s) in {labels[0]} and "
        f"{result.n_excluded_b} in "
        f"{labels[1]} ({result.n_ids} ids listed): the decision {verdict} "
        f"({result.decision(before)} → {result.decision(result.kept)}); with them: "
        f"{before.diff:+.3g} {_ci(*before.ci, digits=3)}, p = {before.pvalue:.3g}",
        style="bold" if result.decision_changed else "",
    )
    return Group(head, note)


def power_view(result: PowerResult) -> RenderableType:
    table = Table(
        title=f"power analysis (Miller Eq 9/10, {result.alternative})", title_justify="left"
    )
    for col in ("n", "MDE", "power", "ω²", "σ²_A/K_A", "σ²_B/K_B", "design effect", "α"):
        table.add_column(col, justify="right")
    bold = {result.solved: True}
    n = f"{result.n}" + (f" ({result.n_exact:.1f})" if result.solved == "n" else "")
    cells = {
        "n": n,
        "mde": f"{result.mde:.4g}",
        "power": f"{result.power:.3g}",
    }
    cells = {k: f"[bold]{v}[/bold]" if k in bold else v for k, v in cells.items()}
    table.add_row(
        cells["n"],
        cells["mde"],
        cells["power"],
        f"{result.omega2:.4g}",
        f"{result.sigma2_a / result.k_a:.4g}",
        f"{result.sigma2_b / result.k_b:.4g}",
        f"{result.design_effect:.3g}",
        f"{result.alpha:g}",
    )
    if result.clustering is not None:
        table.caption = _projection_caption(result)
        table.caption_justify = "left"
    return OneRow(table)


def _projection_caption(result: PowerResult) -> str:
    """Where the design effect came from, and the answer at the ICC's upper bound."""
    c = result.clustering
    p = c.pilot
    upper = c.upper
    if upper is None:
        at_bound = "no number of questions in these clusters reaches the MDE"
    elif result.solved == "n":
        at_bound = f"n = {math.ceil(upper)}"
    else:
        at_bound = f"{'MDE' if result.solved == 'mde' else 'power'} {upper:.4g}"
    return (
        f"t({result.df:g}); ICC {p.icc:.3g} from the pilot's {p.n_clusters} clusters, projected "
        f"to {result.n_exact / p.n_clusters:,.0f} questions a cluster (the pilot's own design "
        f"effect is {p.design_effect:.3g} at {p.cluster_size:,.0f}); at the ICC's "
        f"{p.level:.0%} upper bound {p.icc_upper:.3g}: {at_bound} (design effect "
        f"{c.design_effect_upper:.3g})"
    )


def leaderboard_view(result: LeaderboardResult) -> RenderableType:
    table = Table(
        title=f"leaderboard on {result.n} shared questions ({_level(result.level)})",
        title_justify="left",
    )
    rank_col = f"rank CI (Holm, α = {result.alpha:g})"  # from the pairs below: they agree
    for col in ("rank", "model", "mean (SE)", _level(result.level), rank_col):
        table.add_column(col, justify="left" if col == "model" else "right")
    for m in result.models:
        table.add_row(
            str(m.rank),
            m.name,
            f"{m.mean:.4g} ({m.se:.2g})",
            _ci(*m.ci),
            f"{m.rank_ci[0]}–{m.rank_ci[1]}",
        )
    pairs = Table(title=f"pairs (Holm-adjusted over {len(result.pairs)})", title_justify="left")
    for col in ("a − b", "diff", _level(result.level), "p", "p (Holm)"):
        pairs.add_column(col, justify="left" if col == "a − b" else "right")
    for p in result.pairs:
        pairs.add_row(
            f"{p.a} − {p.b}",
            f"{p.diff:+.3g}",
            _ci(*p.ci, digits=3),
            f"{p.pvalue:.3g}",
            f"{p.pvalue_holm:.3g}",
        )
    groups = "; ".join("{" + ", ".join(g) + "}" for g in result.groups)
    parts: list[RenderableType] = [
        _uncut(table),
        _uncut(pairs),
        Text(f"cannot be told apart at α = {result.alpha:g}: {groups}", style="dim"),
    ]
    parts.extend(Text(f"! {w}", style="yellow") for w in result.notes)
    return Group(*parts)


def gate_view(result: GateResult) -> RenderableType:
    style = {"ALLOW": "green", "REJECT": "red", "INCONCLUSIVE": "yellow"}[result.decision]
    line = Text(f"{result.decision}", style=f"bold {style}")
    detail = Text(
        f"new − old = {result.diff:+.4g} {_ci(*result.ci)} "
        f"({_level(result.comparison.level)}), "
        f"margin −{result.margin:g}, n = {result.comparison.n}"
    )
    parts: list[RenderableType] = [line, detail]
    parts.extend(Text(f"! {w}", style="yellow") for w in result.notes)
    return Group(*parts)


def adjust_view(result: AdjustedPValues, labels: list[str] | None = None) -> RenderableType:
    table = Table()
    for col in ("", "p", "adjusted", "reject"):
        table.add_column(col, justify="left" if not col else "right")
    names = labels or [str(i + 1) for i in range(result.pvalues.size)]
    for name, p, q, r in zip(names, result.pvalues, result.adjusted, result.reject):
        table.add_row(name, f"{p:.4g}", f"{q:.4g}", "yes" if r else "no")
    # the title on its own line: a narrow table would wrap it
    return Group(Text(f"{result.description}, α = {result.alpha:g}"), _uncut(table))


def bootstrap_view(result: BootstrapResult) -> RenderableType:
    table = Table(title=f"bootstrap: {result.metric}", title_justify="left")
    for col in ("estimate (SE)", _level(result.level), "n", "resamples"):
        table.add_column(col, justify="right")
    ci = result.ci
    table.add_row(
        f"{result.statistic:.4g} ({result.se:.2g})",
        _ci(ci.low, ci.high),
        str(result.n),
        str(result.bootstrap_distribution.size),
    )
    return OneRow(table)


def seeds_view(result: MethodsSummary) -> RenderableType:
    summaries, improvements = result.summaries, result.improvements
    first = next(iter(summaries.values()))
    table = Table(
        title=f"runs x tasks ({_level(result.level)}, stratified bootstrap)",
        title_justify="left",
    )
    table.add_column("method")
    for name in first.aggregates:
        table.add_column(name.replace("_", " "), justify="right")
    table.add_column("runs x tasks", justify="right")
    for method, summary in summaries.items():
        cells = [f"{r.statistic:.3g} {_ci(*r.ci, digits=3)}" for r in summary.aggregates.values()]
        table.add_row(method, *cells, f"{summary.n_runs} x {summary.n_tasks}")
    parts: list[RenderableType] = [_uncut(table)]
    for (x, y), r in improvements.items():
        parts.append(Text(f"P({x} > {y}) = {r.statistic:.3f} {_ci(*r.ci, digits=3)}"))
    return Group(*parts)


def sequential_view(result: SequentialResult) -> RenderableType:
    table = Table(
        title=f"anytime-valid confidence sequence ({_level(result.level)})",
        title_justify="left",
    )
    for col in ("mean", "interval", "items used", "of", "stopped"):
        table.add_column(col, justify="right")
    ci = result.ci
    table.add_row(
        f"{result.mean:.4g}",
        _ci(ci.low, ci.high),
        str(result.n_used),
        str(result.n_total),
        "yes" if result.stopped else "no",
    )
    parts: list[RenderableType] = [OneRow(table), Text(result.reason, style="dim")]
    parts.extend(Text(f"! {w}", style="yellow") for w in result.notes)
    return Group(*parts)


def intervals_view(result: ProportionResult) -> RenderableType:
    table = Table(
        title=(f"{result.successes}/{result.n} = {result.proportion:.4g} ({_level(result.level)})"),
        title_justify="left",
    )
    for col in ("method", "low", "high", "width"):
        table.add_column(col, justify="left" if col == "method" else "right")
    for method in result.METHODS:
        ci = result.confidence_interval(result.level, method)
        name = "normal (CLT)" if method == "normal" else method
        table.add_row(name, f"{ci.low:.4g}", f"{ci.high:.4g}", f"{ci.width:.4g}")
    return _uncut(table)
