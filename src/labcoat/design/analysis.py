"""Estimate every planned effect of a two-level design from its runs, with intervals that hold
at few runs, and attribute an effect only where the runs can tell it apart.

The model is ordinary least squares (statsmodels) on the effects' ±1 contrasts, with seed
blocks (fixed effects) when every seed ran two runs or more: each effect (high − low) gets a t
interval on the residual degrees of freedom, and its p-value is adjusted across the planned
effects (Holm, as :func:`labcoat.stats.multiple.holm` computes it everywhere in labcoat), so
the chance of calling any null effect real stays at ``alpha``. The intervals are per effect (as
narrow as the evidence allows); the decisions are family-wise. What the runs cannot tell apart
is read off the runs as given (a lost run changes the aliasing): effects that share a contrast
are estimated once and reported as their alias set, never as one effect.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np

from labcoat.design import effects as fx
from labcoat.errors import InputError
from labcoat.findings import Finding
from labcoat.interval import ConfidenceInterval
from labcoat.result import Result


@dataclass(frozen=True, eq=False)
class DesignAnalysis(Result):
    """Each planned effect's estimate, interval, adjusted p-value and alias set."""

    engine: ClassVar[str] = "design"
    KIND: ClassVar[str] = "design.analysis"
    view: ClassVar[str] = "labcoat.design.view:analysis_view"
    section: ClassVar[str] = "labcoat.report.sections.design:analysis_section"
    title: ClassVar[str] = "Design analysis"

    metric: str
    factors: list[str]
    effects: list[dict[str, Any]]
    n_runs: int
    n_parameters: int
    df: int
    noise: float | None
    level: float
    alpha: float
    design: Any = None
    missing_runs: list[dict[str, Any]] = field(default_factory=list)
    extra_runs: list[dict[str, Any]] = field(default_factory=list)
    #: the design that would separate effects the runs moved together, in words
    separating: str = ""
    findings: list[Finding] = field(default_factory=list)

    @property
    def headline(self) -> str:
        """The first line: what can be attributed, and what cannot."""
        merged = [r for r in self.effects if len(r["members"]) > 1]
        if self.df < 1:
            return (
                f"no interval: {self.n_runs} runs fit {self.n_parameters} parameters, none left "
                "for the noise"
            )
        real = [r["effect"] for r in self.effects if r["decision"] == "effect"]
        text = (
            f"{len(real)} of {len(self.effects)} planned effects detected "
            f"(Holm, alpha {self.alpha:g})" + (f": {', '.join(real)}" if real else "")
        )
        if merged and len(merged) == len(self.effects):
            return (
                "no single intervention's effect can be attributed: "
                + "; ".join(r["effect"] for r in merged)
                + f" moved together. The bundle: {text}"
            )
        if merged:
            text += "; not attributable alone: " + "; ".join(r["effect"] for r in merged)
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "headline": self.headline,
            "metric": self.metric,
            "factors": self.factors,
            "effects": [
                {k: v for k, v in r.items() if k != "members"} | {"members": r["members"]}
                for r in self.effects
            ],
            "runs": self.n_runs,
            "df": self.df,
            "noise": self.noise,
            "level": self.level,
            "alpha": self.alpha,
            "missing_runs": self.missing_runs,
            "extra_runs": self.extra_runs,
            "separating": self.separating,
            "findings": [f.to_dict() for f in self.findings],
        }


def result_rows(results: Any) -> list[Mapping[str, Any]]:
    """The results as rows: a list of mappings, a pandas DataFrame, or a results file."""
    if hasattr(results, "to_dict") and hasattr(results, "columns"):
        return list(results.to_dict("records"))
    if isinstance(results, (str,)) or hasattr(results, "__fspath__"):
        from labcoat.stats.readers import read_table

        table = read_table(results)
        names = table.names
        return [{n: table.columns[n][i] for n in names} for i in range(len(table))]
    if isinstance(results, Sequence) and all(isinstance(r, Mapping) for r in results):
        return list(results)
    raise InputError(
        "`results` must be a list of rows (mappings), a DataFrame or a results file (CSV, "
        f"JSONL); got {type(results).__name__}"
    )


def same_level(value: Any, level: Any) -> bool:
    if isinstance(level, bool) or isinstance(value, bool):
        return str(value).lower() == str(level).lower()
    try:
        return math.isclose(float(value), float(level), rel_tol=1e-9)
    except (TypeError, ValueError):
        return str(value) == str(level)


def _code(rows, factors: Mapping[str, tuple[Any, Any]], source: str) -> np.ndarray:
    coded = np.empty((len(rows), len(factors)), dtype=int)
    for i, row in enumerate(rows):
        for j, (f, (low, high)) in enumerate(factors.items()):
            if f not in row:
                raise InputError(f"{source}: row {i + 1} has no column {f!r} (a factor)")
            v = row[f]
            if same_level(v, low):
                coded[i, j] = -1
            elif same_level(v, high):
                coded[i, j] = 1
            else:
                raise InputError(
                    f"{source}: row {i + 1}: {f} = {v!r} is neither declared level "
                    f"({low!r} low, {high!r} high)"
                )
    return coded


def _metric(rows, metric: str, source: str) -> np.ndarray:
    out = np.empty(len(rows))
    for i, row in enumerate(rows):
        if metric not in row:
            raise InputError(f"{source}: row {i + 1} has no column {metric!r} (the metric)")
        try:
            out[i] = float(row[metric])
        except (TypeError, ValueError):
            raise InputError(
                f"{source}: row {i + 1}: {metric} = {row[metric]!r} is not a number"
            ) from None
        if not np.isfinite(out[i]):
            raise InputError(f"{source}: row {i + 1}: {metric} is not finite ({out[i]})")
    return out


def _estimable(coded, names, planned):
    """Planned effects grouped by contrast: each group is estimated once. Returns the groups
    (lists of effects, the first the group's leader) and, per group, the unplanned effects up
    to three factors that share its contrast."""
    cols = fx.contrasts(coded, names, planned).astype(float)
    dead = fx.constant(cols)
    corr = fx.correlations(cols)
    groups: list[list[fx.Effect]] = []
    leaders: list[int] = []
    for i, e in enumerate(planned):
        if dead[i]:
            continue
        for g, j in enumerate(leaders):
            if corr[i, j] > fx.ALIASED:
                groups[g].append(e)
                break
        else:
            groups.append([e])
            leaders.append(i)
    full, _ = fx.alias_sets(coded, names, min(3, len(names)))
    outside = [
        [a for a in full.get(g[0], []) if a not in planned and a != ()] if g else [] for g in groups
    ]
    constant = [e for i, e in enumerate(planned) if dead[i]]
    return groups, outside, constant


def estimate(
    results: Any,
    *,
    design: Any = None,
    factors: Mapping[str, tuple[Any, Any]] | None = None,
    effects: Sequence[str] | None = None,
    metric: str = "metric",
    seed_column: str = "seed",
    level: float = 0.95,
    alpha: float | None = None,
) -> DesignAnalysis:
    """The planned effects of ``design`` (or of checked ``factors`` and ``effects``) estimated
    from ``results``, before the checks run and before the design that would separate merged
    effects is named (:func:`labcoat.design.analyse` does both)."""
    from labcoat._validation import PROBABILITY
    from labcoat.stats.multiple import holm

    level = PROBABILITY.check(level, "level")
    declared = design.factors if design is not None else factors
    names = list(declared)
    if design is not None and effects is None:
        planned = list(design.effects)
    elif effects is not None:
        planned = [fx.parse(e, names) for e in effects]
    else:
        planned = [(f,) for f in names]
    alpha = alpha if alpha is not None else (design.alpha if design is not None else 1 - level)
    alpha = PROBABILITY.check(alpha, "alpha")
    source = "results" if not isinstance(results, str) else results
    rows = result_rows(results)
    if len(rows) < 2:
        raise InputError(f"{source}: {len(rows)} run(s); a design needs at least two")
    coded = _code(rows, declared, source)
    y = _metric(rows, metric, source)
    seeds = [str(r.get(seed_column, "")) for r in rows]
    distinct = sorted(set(seeds))
    blocked = (
        len(distinct) > 1
        and all(s != "" for s in seeds)
        and (design is None or design.blocks == "seed")
        and _blockable(seeds)
    )
    groups, outside, constant = _estimable(coded, names, planned)
    X = [np.ones(len(rows))]
    X += [fx.contrasts(coded, names, [g[0]])[:, 0].astype(float) for g in groups]
    if blocked:
        for s in distinct[1:]:
            X.append(np.array([1.0 if v == s else 0.0 for v in seeds]))
    X = np.column_stack(X)
    if blocked and np.linalg.matrix_rank(X) < X.shape[1]:
        # the seeds line up with an effect (a seed ran only one level): blocks would take it
        X = X[:, : 1 + len(groups)]
    p = int(np.linalg.matrix_rank(X))
    df = len(rows) - p
    estimates, ses, pvals, cis = [], [], [], []
    noise = None
    if df >= 1:
        import statsmodels.api as sm

        fit = sm.OLS(y, X).fit()
        noise = float(np.sqrt(fit.scale))
        ci = fit.conf_int(alpha=1 - level)
        for g in range(len(groups)):
            estimates.append(2 * float(fit.params[1 + g]))
            ses.append(2 * float(fit.bse[1 + g]))
            pvals.append(float(fit.pvalues[1 + g]))
            cis.append(ConfidenceInterval(2 * float(ci[1 + g, 0]), 2 * float(ci[1 + g, 1])))
        adjusted = list(holm(np.asarray(pvals))) if pvals else []
    else:
        beta = np.linalg.lstsq(X, y, rcond=None)[0]
        estimates = [2 * float(beta[1 + g]) for g in range(len(groups))]
        adjusted = [None] * len(groups)
    rows_out = []
    for g, members in enumerate(groups):
        label = " = ".join(fx.name(e) for e in [*members, *outside[g]])
        # effects no larger than the planned one that share its contrast make it ambiguous;
        # a larger one (a main effect aliased with a 3-way interaction) is the usual assumption
        order = min(len(e) for e in members)
        members = [*members, *(a for a in outside[g] if len(a) <= order)]
        tested = df >= 1
        rows_out.append(
            {
                "effect": label,
                "estimate": estimates[g],
                "se": ses[g] if tested else None,
                "ci": list(cis[g]) if tested else None,
                "pvalue": pvals[g] if tested else None,
                "pvalue_adjusted": float(adjusted[g]) if tested else None,
                "aliases": [fx.name(e) for e in [*groups[g][1:], *outside[g]]],
                "members": [fx.name(e) for e in members],
                "decision": (
                    "no test" if not tested else "effect" if adjusted[g] < alpha else "no evidence"
                ),
            }
        )
    for e in constant:
        rows_out.append(
            {
                "effect": f"{fx.name(e)} = intercept",
                "estimate": None,
                "se": None,
                "ci": None,
                "pvalue": None,
                "pvalue_adjusted": None,
                "aliases": ["intercept"],
                "members": [fx.name(e)],
                "decision": "not estimable",
            }
        )
    missing, extra = _compare_runs(design, rows, seed_column) if design is not None else ([], [])
    return DesignAnalysis(
        metric=metric,
        factors=names,
        effects=rows_out,
        n_runs=len(rows),
        n_parameters=p,
        df=df,
        noise=noise,
        level=level,
        alpha=alpha,
        design=design,
        missing_runs=missing,
        extra_runs=extra,
    )


def _blockable(seeds: list[str]) -> bool:
    """Whether every seed ran at least two runs, so a seed block can be estimated. When every
    seed ran the whole table the blocks are orthogonal to the effects and cost degrees of
    freedom, not precision; when some runs are missing they are still fixed effects of an
    unbiased fit, and keep a seed's shift out of the noise."""
    counts: dict[str, int] = {}
    for s in seeds:
        counts[s] = counts.get(s, 0) + 1
    return min(counts.values()) >= 2


def _compare_runs(design, rows, seed_column: str):
    def key(run):
        return (*(str(run.get(f)) for f in design.factors), str(run.get(seed_column)))

    planned = {}
    for run in design.runs:
        planned[key({**run, seed_column: run["seed"]})] = run
    seen = {}
    for row in rows:
        coded = {
            f: design.factors[f][0]
            if same_level(row[f], design.factors[f][0])
            else design.factors[f][1]
            for f in design.factors
        }
        seen[key({**coded, seed_column: row.get(seed_column)})] = row
    missing = [planned[k] for k in planned if k not in seen]
    extra = [{k2: v for k2, v in seen[k].items()} for k in seen if k not in planned]
    return missing, extra


__all__ = ["DesignAnalysis", "estimate"]
