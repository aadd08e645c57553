"""Rich views of :mod:`labcoat.stats` results, in Miller's reporting format: ``score (SE)``,
number of questions and clusters; for comparisons the difference, its SE, the interval and the
correlation. Result objects stay free of formatting; the CLI renders them here."""

from __future__ import annotations

from typing import Iterable

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from labcoat.stats._results import BootstrapResult
from labcoat.stats.compare import CompareResult
from labcoat.stats.mean import MeanResult
from labcoat.stats.power import PowerResult
from labcoat.stats.proportions import METHODS, McNemarResult, ProportionResult
from labcoat.stats.seeds import SeedsSummary
from labcoat.stats.sequential import ConfidenceSequence


def _num(x: float | None, digits: int = 4) -> str:
    return "–" if x is None else f"{x:.{digits}g}"


def _ci(low: float, high: float, digits: int = 4) -> str:
    return f"[{low:.{digits}g}, {high:.{digits}g}]"


def _level(confidence: float) -> str:
    return f"{100 * confidence:g}% CI"


def _with_warnings(table: Table, warnings: Iterable[str]) -> RenderableType:
    notes = [Text(f"! {w}", style="yellow") for w in warnings]
    return Group(table, *notes) if notes else table


def mean_view(result: MeanResult, label: str = "score") -> RenderableType:
    table = Table(title="mean score", title_justify="left")
    for col in ("", "score (SE)", _level(result.confidence), "n", "clusters", "K"):
        table.add_column(col, justify="right" if col else "left")
    ci = result.ci
    table.add_row(
        label,
        f"{result.mean:.4g} ({result.se:.2g})",
        _ci(ci.low, ci.high),
        str(result.n),
        "–" if result.n_clusters is None else str(result.n_clusters),
        f"{result.k:g}",
    )
    if result.n_clusters is not None and result.se_clt > 0:
        ratio = result.se / result.se_clt
        note = Text(f"clustered SE is {ratio:.2f}x the naive CLT SE ({result.se_clt:.2g})", style="dim")
        return Group(_with_warnings(table, result.warnings), note)
    return _with_warnings(table, result.warnings)


def compare_view(result: CompareResult, labels: tuple[str, str] = ("A", "B"), mcnemar: McNemarResult | None = None) -> RenderableType:
    kind = "paired" if result.paired else "unpaired"
    table = Table(title=f"{labels[0]} − {labels[1]} ({kind})", title_justify="left")
    for col in ("diff (SE)", _level(result.confidence), "z", "p", "corr", "n", "clusters"):
        table.add_column(col, justify="right")
    ci = result.ci
    table.add_row(
        f"{result.diff:+.3g} ({result.se:.2g})",
        _ci(ci.low, ci.high, digits=3),
        f"{result.z:.3g}",
        f"{result.p_value:.3g}",
        _num(result.correlation, 3),
        str(result.n),
        "–" if result.n_clusters is None else str(result.n_clusters),
    )
    parts: list[RenderableType] = [table, Text(f"means: {labels[0]} {result.mean_a:.4g}, {labels[1]} {result.mean_b:.4g}", style="dim")]
    if mcnemar is not None:
        kind = "exact" if mcnemar.exact else "chi-square, continuity-corrected"
        parts.append(
            Text(
                f"McNemar ({kind}): only {labels[0]} right {mcnemar.only_a}, only {labels[1]} right "
                f"{mcnemar.only_b}, p = {mcnemar.pvalue:.3g}",
                style="dim",
            )
        )
    parts.extend(Text(f"! {w}", style="yellow") for w in result.warnings)
    return Group(*parts)


def power_view(result: PowerResult, solved: str) -> RenderableType:
    table = Table(title="power analysis (Miller Eq 9/10)", title_justify="left")
    for col in ("n", "MDE", "ω²", "σ²_A/K_A", "σ²_B/K_B", "α", "power"):
        table.add_column(col, justify="right")
    n = f"[bold]{result.n:.1f}[/bold]" if solved == "n" else f"{result.n:g}"
    mde = f"[bold]{result.mde:.4g}[/bold]" if solved == "mde" else f"{result.mde:g}"
    table.add_row(
        n,
        mde,
        f"{result.omega2:.4g}",
        f"{result.sigma2_a / result.k_a:.4g}",
        f"{result.sigma2_b / result.k_b:.4g}",
        f"{result.alpha:g}",
        f"{result.power:g}",
    )
    return table


def bootstrap_view(result: BootstrapResult) -> RenderableType:
    table = Table(title=f"bootstrap: {result.metric}", title_justify="left")
    for col in ("estimate (SE)", _level(result.confidence), "n", "resamples"):
        table.add_column(col, justify="right")
    ci = result.ci
    table.add_row(
        f"{result.statistic:.4g} ({result.standard_error:.2g})",
        _ci(ci.low, ci.high),
        str(result.n),
        str(result.bootstrap_distribution.size),
    )
    return table


def seeds_view(summaries: dict[str, SeedsSummary], improvements: dict[tuple[str, str], BootstrapResult]) -> RenderableType:
    first = next(iter(summaries.values()))
    confidence = next(iter(first.aggregates.values())).confidence
    table = Table(title=f"runs x tasks ({_level(confidence)}, stratified bootstrap)", title_justify="left")
    table.add_column("method")
    for name in first.aggregates:
        table.add_column(name.replace("_", " "), justify="right")
    table.add_column("runs x tasks", justify="right")
    for method, summary in summaries.items():
        cells = [f"{r.statistic:.3g} {_ci(*r.ci, digits=3)}" for r in summary.aggregates.values()]
        table.add_row(method, *cells, f"{summary.n_runs} x {summary.n_tasks}")
    parts: list[RenderableType] = [table]
    for (x, y), r in improvements.items():
        parts.append(Text(f"P({x} > {y}) = {r.statistic:.3f} {_ci(*r.ci, digits=3)}"))
    return Group(*parts)


def sequential_view(cs: ConfidenceSequence, n_total: int, stopped: bool, reason: str) -> RenderableType:
    table = Table(title=f"anytime-valid confidence sequence ({_level(cs.confidence)})", title_justify="left")
    for col in ("mean", "interval", "items used", "of", "stopped"):
        table.add_column(col, justify="right")
    ci = cs.interval
    table.add_row(f"{cs.mean:.4g}", _ci(ci.low, ci.high), str(cs.n), str(n_total), "yes" if stopped else "no")
    return Group(table, Text(reason, style="dim"))


def intervals_view(result: ProportionResult) -> RenderableType:
    table = Table(
        title=f"{result.successes}/{result.n} = {result.proportion:.4g} ({_level(result.confidence)})",
        title_justify="left",
    )
    for col in ("method", "low", "high", "width"):
        table.add_column(col, justify="left" if col == "method" else "right")
    for method in METHODS:
        ci = result.confidence_interval(result.confidence, method)
        name = "normal (CLT)" if method == "normal" else method
        table.add_row(name, f"{ci.low:.4g}", f"{ci.high:.4g}", f"{ci.width:.4g}")
    return table
