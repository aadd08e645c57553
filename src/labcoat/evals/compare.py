"""Two models on the same planned subset: a paired difference, or "inconclusive" with the
number of items that would tell them apart.

Pairing removes the items' shared difficulty from the comparison (both models meet the same
draws), so the difference's interval is much narrower than the two scores' intervals side by
side. The subset never ranks inside its noise: when the interval includes 0 the answer is
``"inconclusive"`` together with ``items_needed``, the planned-design subset size at which the
observed difference would be resolved (the full benchmark when it is too small to resolve).

On a model-based plan (``method="model"``) the comparison is the design-based one: the paired
stratified difference with the design's own calibrated interval, which holds by design for any
two models; the item model's prediction is not used to rank.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from labcoat.errors import InputError
from labcoat.evals import _design as D
from labcoat.evals.checks import MIN_DF, MIN_ITEMS
from labcoat.evals.estimate import as_results, hoeffding_halfwidth, planned_scores
from labcoat.evals.plan import SubsetPlan, as_plan
from labcoat.findings import Finding
from labcoat.interval import ConfidenceInterval
from labcoat.result import Result


def items_needed(diff: float, se: float, n: int, n_total: int, q: float) -> int:
    """The subset size at which ``q * se(n')`` falls below ``|diff|``, with the per-item
    variance implied by ``se`` at ``n`` items (finite-population corrected); ``n_total`` when
    even nearly all items would not resolve it (the full benchmark then decides exactly)."""
    fpc = 1.0 - n / n_total
    if se <= 0 or fpc <= 0:
        return n
    s2 = se**2 * n / fpc  # per-item variance under this design
    target = (abs(diff) / q) ** 2
    if target <= 0:
        return n_total
    need = 1.0 / (target / s2 + 1.0 / n_total)
    return int(min(n_total, max(n, math.ceil(need))))


@dataclass(frozen=True, eq=False)
class Comparison(Result):
    """``a - b`` on the same planned items, with a decision only when the interval allows."""

    KIND = "evals.compare"

    engine: ClassVar[str] = "evals"
    view: ClassVar[str] = "labcoat.evals.view:compare_view"
    section: ClassVar[str] = "labcoat.report.sections.evals:evals_section"
    title: ClassVar[str] = "Eval comparison"

    diff: float
    se: float
    df: int
    level: float
    n: int
    n_total: int
    score_a: float
    score_b: float
    name_a: str = "A"
    name_b: str = "B"
    inflation: float = 1.0
    refused: bool = False
    reason: str = ""
    fallback_halfwidth: float = math.nan
    method: str = ""

    @property
    def scores_basis(self) -> str:
        """What ``score_a``/``score_b`` are: the design-based estimates on the shared items (a
        model-based plan's :func:`~labcoat.evals.estimate` mixes in the item model, so its
        score differs; the comparison ranks on the design, which holds for any two models)."""
        if self.method == "model":
            return "design-based (estimate's is model-based)"
        return "design-based"

    @property
    def ci(self) -> ConfidenceInterval:
        return self.confidence_interval(self.level)

    def confidence_interval(self, level: float = 0.95) -> ConfidenceInterval:
        if self.refused:
            half = self.fallback_halfwidth
        else:
            half = self.inflation * D.t_quantile(level, self.df) * self.se
        return ConfidenceInterval(self.diff - half, self.diff + half)

    @property
    def decision(self) -> str:
        """``"A better"``, ``"B better"`` or ``"inconclusive"``, the same words whatever the
        models are called (:attr:`winner` names the better one)."""
        ci = self.ci
        if self.refused or ci.contains(0.0):
            return "inconclusive"
        return "A better" if ci.low > 0 else "B better"

    @property
    def winner(self) -> str | None:
        """The better model's name, once decided."""
        d = self.decision
        return None if d == "inconclusive" else (self.name_a if d == "A better" else self.name_b)

    @property
    def verdict_line(self) -> str:
        """The decision in words, naming the winner: ``"A better (gpt-x)"``."""
        return self.decision if self.winner is None else f"{self.decision} ({self.winner})"

    @property
    def items_needed(self) -> int | None:
        """Items of this design that would resolve the observed difference (None once
        decided)."""
        if self.decision != "inconclusive":
            return None
        q = self.inflation * D.t_quantile(self.level, max(self.df, MIN_DF))
        return items_needed(self.diff, self.se, self.n, self.n_total, q)

    @property
    def findings(self) -> list[Finding]:
        from labcoat.evals.checks import findings_for

        return findings_for(self, ("evals.compare.decision",))

    def to_dict(self) -> dict[str, Any]:
        ci = self.ci
        return {
            "a": self.name_a,
            "b": self.name_b,
            "score_a": self.score_a,
            "score_b": self.score_b,
            "diff": self.diff,
            "ci": [ci.low, ci.high],
            "level": self.level,
            "se": self.se,
            "df": self.df,
            "n": self.n,
            "n_total": self.n_total,
            "decision": self.decision,
            "winner": self.winner,
            "items_needed": self.items_needed,
            "scores_basis": self.scores_basis,
            "refused": self.refused,
            "reason": self.reason,
            "findings": [f.to_dict() for f in self.findings],
        }


def compare(
    a: Any,
    b: Any,
    plan: SubsetPlan | str | Path,
    *,
    level: float | None = None,
    allow_missing: bool = False,
) -> Comparison:
    """Compare two models' results on the plan's items, paired item by item.

    ``a``/``b``: anything :func:`~labcoat.evals.estimate` takes as results. Both must score the
    same planned items (with ``allow_missing``, the items both have).
    """
    from labcoat._validation import Interval

    plan = as_plan(plan)
    level = plan.level if level is None else level
    Interval(float, 0.0, 1.0, low_open=True, high_open=True).check(level, "level")
    ra, rb = as_results(a, name="a"), as_results(b, name="b")
    idx_a, ya, _ = planned_scores(plan, ra, allow_missing=allow_missing)
    idx_b, yb, _ = planned_scores(plan, rb, allow_missing=allow_missing)
    common = np.intersect1d(idx_a, idx_b)
    if common.size < 2:
        raise InputError(
            f"{ra.source} and {rb.source} share {common.size} scored planned items; a paired "
            "comparison needs the same items on both sides."
        )
    shared_items = set(common.tolist())
    order = [i for i in idx_a.tolist() if i in shared_items]
    pos_a = {i: k for k, i in enumerate(idx_a.tolist())}
    pos_b = {i: k for k, i in enumerate(idx_b.tolist())}
    idx = np.array(order, dtype=int)
    ya = ya[[pos_a[i] for i in order]]
    yb = yb[[pos_b[i] for i in order]]
    design = plan.design
    # a model-based plan ranks on the design-based paired difference (valid by design)
    model = None if plan.method == "model" else plan.item_model
    diff, se, df, _ = design.estimate(ya, idx, model, paired_with=yb)
    sa = design.estimate(ya, idx, model)[0]
    sb = design.estimate(yb, idx, model)[0]
    refused, reason = False, ""
    if idx.size < MIN_ITEMS or df < MIN_DF:
        refused = True
        reason = (
            f"{idx.size} shared items are too few to rank two models (needs {MIN_ITEMS}); "
            "inconclusive by refusal"
        )
    name_a, name_b = ra.model, rb.model
    if name_a == name_b:
        name_a, name_b = f"{name_a} (A)", f"{name_b} (B)"
    return Comparison(
        diff=float(diff[0]),
        se=float(se[0]),
        df=int(df),
        level=float(level),
        n=int(idx.size),
        n_total=plan.n_items,
        score_a=float(sa[0]),
        score_b=float(sb[0]),
        name_a=name_a,
        name_b=name_b,
        inflation=plan.design_inflation,
        refused=refused,
        reason=reason,
        fallback_halfwidth=hoeffding_halfwidth(plan, idx, level, span=2.0),
        method=plan.method,
    )


__all__ = ["Comparison", "compare", "items_needed"]
