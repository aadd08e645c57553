"""The full-benchmark score from a planned subset's results, with an interval that holds.

The estimate is the plan's design-based estimator (the stratified mean, or the difference
estimator around the history's item model for ``method="irt"``); its interval is Student's t
on the design-based standard error, widened by the plan's leave-models-out calibration. For a
model-based plan (``method="model"``) the estimate is the plan's calibrated mix of the
stratified mean and the item model's prediction, and its interval is the design-based one
scaled by the factor that covered history models held out; a model outside the history's range
gets the design-based estimate and interval instead (``evals.estimate.extrapolation``). With
too few items for the variance to be estimated, :func:`estimate` refuses: the result's
interval check fails and its interval is the distribution-free Hoeffding bound of the design,
which holds at any size but is wide.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Mapping

import numpy as np

from labcoat._validation import deprecated_alias
from labcoat.errors import InputError
from labcoat.evals import _design as D
from labcoat.evals.checks import MIN_DF, MIN_ITEMS
from labcoat.evals.history import Results
from labcoat.evals.irt import crossfit
from labcoat.evals.plan import SubsetPlan, as_plan
from labcoat.findings import Finding
from labcoat.interval import ConfidenceInterval
from labcoat.result import Result

#: power at which :attr:`Estimate.detectable` is quoted
POWER = 0.8


def as_results(results: Any, *, name: str = "results") -> Results:
    """``results`` as :class:`Results`: one already, a file path, a mapping id -> score, or a
    pair ``(ids, scores)``."""
    if isinstance(results, Results):
        return results
    if isinstance(results, (str, Path)):
        from labcoat.evals.history import read_results

        return read_results(results)
    if isinstance(results, Mapping):
        ids = np.array([str(k) for k in results], dtype=object)
        values = np.array(list(results.values()), dtype=float)
    elif isinstance(results, tuple) and len(results) == 2:
        ids = np.array([str(k) for k in results[0]], dtype=object)
        values = np.asarray(results[1], dtype=float)
    else:
        raise InputError(
            f"`{name}` must be a results file, a mapping item id -> score or a pair (ids, "
            f"scores); got {type(results).__name__}."
        )
    if ids.size != values.size:
        raise InputError(f"`{name}`: {ids.size} ids for {values.size} scores.")
    if values.size and (not np.isfinite(values).all() or values.min() < 0.0 or values.max() > 1.0):
        raise InputError(f"`{name}`: scores must be finite numbers in [0, 1].")
    return Results(ids, values, name, name)


def planned_scores(
    plan: SubsetPlan, results: Results, *, allow_missing: bool = False, name: str = "results"
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The results' scores on the plan's items: ``(drawn item indices, scores, missing ids)``.

    Ids the benchmark does not have mean the results are of something else (exit 2); planned
    items without a result are an error unless ``allow_missing``.
    """
    index = plan.index()
    lookup = results.lookup()
    unknown = [k for k in lookup if k not in index]
    if unknown:
        raise InputError(
            f"{results.source}: {len(unknown)} of {len(lookup)} item ids are not in the plan's "
            f"benchmark (e.g. {unknown[0]!r}; the plan's ids look like {plan.subset[0]!r}); the "
            "results must use the ids of the history the plan was made from."
        )
    subset = plan.subset
    missing = [k for k in subset if k not in lookup]
    if missing and not allow_missing:
        raise InputError(
            f"{results.source}: {len(missing)} of the {len(subset)} planned items have no result "
            f"(e.g. {missing[0]!r}); evaluate every planned item (`labcoat evals plan` lists "
            "them), or pass allow_missing=True (--allow-missing) to estimate from the rest."
        )
    have = [i for i, k in zip(plan.chosen.tolist(), subset) if k in lookup]
    if len(have) < 2:
        raise InputError(
            f"{results.source}: only {len(have)} planned item(s) have a result; an estimate "
            "needs at least 2."
        )
    idx = np.array(have, dtype=int)
    scores = np.array([lookup[str(plan.items[i])] for i in idx], dtype=float)
    return idx, scores, missing


def hoeffding_halfwidth(
    plan: SubsetPlan, idx: np.ndarray, level: float, span: float = 1.0
) -> float:
    """Distribution-free half-width of the design's estimate: each drawn item moves it by at
    most its weight ``W_h / n_h`` times the range of a score (Hoeffding's inequality)."""
    sizes = plan.design.sizes.astype(float)
    ss = plan.design.strata[idx]
    n_h = np.bincount(ss, minlength=sizes.size).astype(float)
    w = (sizes[ss] / sizes.sum()) / n_h[ss]
    return float(span * math.sqrt(math.log(2.0 / (1.0 - level)) / 2.0 * float((w**2).sum())))


@dataclass(frozen=True, eq=False)
class Estimate(Result):
    """A model's estimated full-benchmark score from a planned subset."""

    KIND = "evals.estimate"

    engine: ClassVar[str] = "evals"
    view: ClassVar[str] = "labcoat.evals.view:estimate_view"
    section: ClassVar[str] = "labcoat.report.sections.evals:evals_section"
    title: ClassVar[str] = "Eval estimate"

    mean: float
    se: float
    df: int
    level: float
    n: int
    n_total: int
    method: str
    model: str = ""
    inflation: float = 1.0
    missing: tuple[str, ...] = ()
    refused: bool = False
    reason: str = ""
    fallback_halfwidth: float = math.nan
    model_residual: tuple[float, float] | None = None
    history_range: tuple[float, float] = (math.nan, math.nan)
    design_score: float = math.nan
    model_score: float = math.nan
    weight: float = 1.0
    extrapolated: bool = False

    #: ``score`` was this field's name; ``mean`` is what every other result calls it
    score = deprecated_alias("score", "mean")

    @property
    def n_missing(self) -> int:
        return len(self.missing)

    @property
    def ci(self) -> ConfidenceInterval:
        return self.confidence_interval(self.level)

    def confidence_interval(self, level: float = 0.95) -> ConfidenceInterval:
        """The interval at ``level``: t on the calibrated design-based se, or, when the estimate
        refused, the distribution-free bound (computed at the estimate's own level)."""
        if self.refused:
            half = self.fallback_halfwidth
        else:
            half = self.inflation * D.t_quantile(level, self.df) * self.se
        return ConfidenceInterval(max(0.0, self.mean - half), min(1.0, self.mean + half))

    @property
    def n_effective(self) -> float:
        """How many randomly drawn items would give the same precision."""
        p = min(max(self.mean, 1e-3), 1 - 1e-3)
        var = (self.inflation * self.se) ** 2
        if var <= 0:
            return float(self.n_total)
        return float(min(self.n_total, 1.0 / (var / (p * (1 - p)) + 1.0 / self.n_total)))

    @property
    def detectable(self) -> float:
        """The smallest difference to another model's score (estimated on the same plan) that
        this subset detects with 80 % power at its level."""
        from scipy.special import ndtri

        z = D.t_quantile(self.level, self.df) + float(ndtri(POWER))
        return float(z * self.inflation * self.se * math.sqrt(2.0))

    @property
    def stronger_than_history(self) -> bool:
        return bool(self.mean > self.history_range[1])

    @property
    def findings(self) -> list[Finding]:
        from labcoat.evals.checks import findings_for

        return findings_for(
            self,
            (
                "evals.estimate.items",
                "evals.estimate.interval",
                "evals.estimate.model_fit",
                "evals.estimate.extrapolation",
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        ci = self.ci
        return {
            "model": self.model,
            "mean": self.mean,
            "score": self.mean,  # the old key, one release (docs/deprecations.md)
            "ci": [ci.low, ci.high],
            "level": self.level,
            "se": self.se,
            "df": self.df,
            "n": self.n,
            "n_total": self.n_total,
            "n_effective": self.n_effective,
            "detectable": self.detectable,
            "method": self.method,
            "inflation": self.inflation,
            "missing": list(self.missing),
            "refused": self.refused,
            "reason": self.reason,
            "stronger_than_history": self.stronger_than_history,
            "design_score": self.design_score,
            "model_score": self.model_score,
            "weight": self.weight,
            "extrapolated": self.extrapolated,
            "findings": [f.to_dict() for f in self.findings],
        }


def estimate(
    results: Any,
    plan: SubsetPlan | str | Path,
    *,
    level: float | None = None,
    allow_missing: bool = False,
) -> Estimate:
    """Estimate the full-benchmark score from ``results`` on the plan's items.

    ``results``: a results file (anything :func:`~labcoat.evals.read_results` reads), a
    :class:`~labcoat.evals.history.Results`, a mapping item id -> score, or ``(ids, scores)``.
    ``level``: the interval's level (default: the plan's). ``allow_missing``: estimate from the
    planned items that have a result (with a warning) instead of refusing with exit 2.
    """
    from labcoat._validation import Interval

    plan = as_plan(plan)
    res = as_results(results)
    level = plan.level if level is None else level
    Interval(float, 0.0, 1.0, low_open=True, high_open=True).check(level, "level")
    idx, y, missing = planned_scores(plan, res, allow_missing=allow_missing)
    extra: dict[str, Any] = {}
    inflation = plan.inflation
    if plan.method == "model":
        est, se, df, infl, outside, s, m = plan.combined(y, idx)
        inflation = float(infl[0])
        # the item model's cross-fitted residual on the drawn items: how far off it is here
        pred, _ = crossfit(plan.item_model, y[:, None], idx, plan.design.strata[idx])
        r = y - pred[:, 0]
        residual = (np.array([r.mean()]), np.array([r.std(ddof=1) / math.sqrt(r.size)]))
        extra = {
            "design_score": float(s[0]),
            "model_score": float(m[0]),
            "weight": 1.0 if outside[0] else plan.weight,
            "extrapolated": bool(outside[0]),
        }
    else:
        est, se, df, residual = plan.design.estimate(y, idx, plan.item_model)
    score = float(np.clip(est[0], 0.0, 1.0))
    refused, reason = False, ""
    if idx.size < MIN_ITEMS or df < MIN_DF:
        refused = True
        reason = (
            f"{idx.size} scored items ({df} degrees of freedom) are too few for a design-based "
            f"interval that holds (needs {MIN_ITEMS} items and {MIN_DF} df); the interval shown "
            "is the distribution-free bound"
        )
    return Estimate(
        mean=score,
        se=float(se[0]),
        df=int(df),
        level=float(level),
        n=int(idx.size),
        n_total=plan.n_items,
        method=plan.method,
        model=res.model,
        inflation=inflation,
        missing=tuple(missing),
        refused=refused,
        reason=reason,
        fallback_halfwidth=hoeffding_halfwidth(plan, idx, level),
        model_residual=None if residual is None else (float(residual[0][0]), float(residual[1][0])),
        history_range=plan.history_range,
        **extra,
    )


__all__ = ["Estimate", "as_results", "estimate", "planned_scores"]
