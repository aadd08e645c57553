"""The design review a plan gets when it is registered, as findings.

Before any result exists, labcoat checks what the plan can still fix: the minimum detectable
effect at the planned number of items against the margin (with a pilot's variance or a stated
one), seeds confounded with arms, arms on different item sets, a comparison with no baseline or
negative control, several interventions changed at once, and a family with no correction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from labcoat.findings import Finding, failed, passed, run_check, warned
from labcoat.result import Result
from labcoat.verdicts.plan import Plan, coerce_plan
from labcoat.verdicts.registry import REGISTRY


@dataclass(frozen=True)
class Design:
    """A plan and what a pilot run says about it (variance components, item ids per arm)."""

    plan: Plan
    omega2: float | None = None
    sigma2_a: float = 0.0
    sigma2_b: float = 0.0
    design_effect: float | None = None
    pilot_ids_a: frozenset[str] | None = None
    pilot_ids_b: frozenset[str] | None = None

    @property
    def variance_source(self) -> str | None:
        if self.omega2 is not None:
            return "the pilot"
        return "the plan" if self.plan.variance is not None else None


def _power_inputs(d: Design) -> dict[str, Any]:
    plan = d.plan
    omega2 = d.omega2 if d.omega2 is not None else plan.variance
    family = plan.family_size if plan.correction != "none" else 1
    return dict(
        omega2=omega2,
        sigma2_a=d.sigma2_a,
        sigma2_b=d.sigma2_b,
        k_a=plan.seeds,
        k_b=plan.seeds,
        alpha=plan.alpha / family,  # Bonferroni for planning: never above Holm's first step
        power=plan.power,
        alternative="two-sided" if plan.sides == "two-sided" else "one-sided",
        design_effect=d.design_effect or plan.design_effect,
    )


def _no_power_inputs(d: Design) -> str | None:
    if d.variance_source is None:
        return "no variance: register with a pilot (pilot_a/pilot_b) or state `variance`"
    if d.plan.target is None:
        return "no margin and no stated `effect`: nothing to power the design for"
    if d.plan.resolved_test() in ("bootstrap", "sequential"):
        return f"the MDE of a {d.plan.resolved_test()} test is not computed at registration"
    return None


@REGISTRY.check(
    "design.power",
    layer="design",
    falsifies="the planned number of items can detect an effect as small as the margin",
    predicts="the minimum detectable effect at the planned n is at most the margin",
    applies=_no_power_inputs,
)
def power_check(d: Design):
    from labcoat.stats.power import minimum_detectable_effect, sample_size

    plan = d.plan
    inputs = _power_inputs(d)
    mde = minimum_detectable_effect(plan.items, **inputs).mde
    target = plan.target
    what = "margin" if plan.margin > 0 else "effect"
    evidence = dict(mde=mde, target=target, items=plan.items, variance_from=d.variance_source)
    if mde > target:
        needed = sample_size(target, **inputs).n
        return failed(
            f"underpowered: MDE {_points(mde)} > {what} {_points(target)}; n ≥ {needed:,} items "
            "needed",
            needed=needed,
            **evidence,
        )
    return passed(
        f"MDE {_points(mde)} ≤ {what} {_points(target)} at {plan.items:,} items", **evidence
    )


def _points(x: float) -> str:
    return f"{x:.3g}" if x >= 1 else f"{x:.3g} ({100 * x:.1f} points)"


@REGISTRY.check(
    "design.seeds-confounded",
    layer="design",
    falsifies="a difference between the arms can be told apart from a difference between seeds",
    predicts="both arms run with the same seeds",
    applies=lambda d: (
        None
        if d.plan.seeds_a and d.plan.seeds_b
        else "the plan does not list the seeds of each arm (seeds_a, seeds_b)"
    ),
)
def seeds_check(d: Design):
    a, b = set(d.plan.seeds_a), set(d.plan.seeds_b)
    if not a & b:
        return failed(
            f"seeds confounded with arms: A runs seeds {', '.join(sorted(a))}, B "
            f"{', '.join(sorted(b))}; no seed is shared, so the arm effect is also a seed effect",
            seeds_a=sorted(a),
            seeds_b=sorted(b),
        )
    if a != b:
        return warned(
            f"the arms share only seeds {', '.join(sorted(a & b))}; run both arms on the same "
            "seeds",
            seeds_a=sorted(a),
            seeds_b=sorted(b),
        )
    return passed(f"both arms run seeds {', '.join(sorted(a))}")


@REGISTRY.check(
    "design.item-sets",
    layer="design",
    falsifies="the arms are evaluated on the same items",
    predicts="both arms name the same item set (and a pilot scores the same ids)",
    applies=lambda d: (
        None
        if (d.plan.dataset_a and d.plan.dataset_b) or d.pilot_ids_a is not None
        else "neither dataset_a/dataset_b nor a pilot says which items each arm sees"
    ),
)
def item_sets_check(d: Design):
    plan = d.plan
    if plan.dataset_a and plan.dataset_b and plan.dataset_a != plan.dataset_b:
        return failed(
            f"arms on different item sets: A on {plan.dataset_a!r}, B on {plan.dataset_b!r}; "
            "a paired comparison needs the same items",
            dataset_a=plan.dataset_a,
            dataset_b=plan.dataset_b,
        )
    if d.pilot_ids_a is not None and d.pilot_ids_b is not None and d.pilot_ids_a != d.pilot_ids_b:
        only_a, only_b = d.pilot_ids_a - d.pilot_ids_b, d.pilot_ids_b - d.pilot_ids_a
        return failed(
            f"arms on different item sets: the pilot has {len(only_a)} item(s) only in A and "
            f"{len(only_b)} only in B",
            only_a=sorted(only_a)[:20],
            only_b=sorted(only_b)[:20],
        )
    return passed("both arms see the same items")


@REGISTRY.check(
    "design.control",
    layer="design",
    severity="warn",
    falsifies="the comparison has a reference that says what no effect looks like",
    predicts="arm B is a baseline or a negative control",
)
def control_check(d: Design):
    if d.plan.control == "none":
        return warned(
            "no baseline or negative control: arm B is neither, so a difference has no reference"
        )
    return passed(f"arm B is a {d.plan.control}")


@REGISTRY.check(
    "design.interventions",
    layer="design",
    severity="warn",
    falsifies="a difference between the arms can be attributed to one change",
    predicts="the arms differ in one intervention",
    applies=lambda d: None if d.plan.changes else "the plan does not list what the arms change",
)
def interventions_check(d: Design):
    changes = d.plan.changes
    if len(changes) > 1:
        return warned(
            f"{len(changes)} interventions changed in one run ({', '.join(changes)}): no "
            "attribution possible; change one at a time or plan an ablation",
            changes=list(changes),
        )
    return passed(f"one intervention: {changes[0]}")


@REGISTRY.check(
    "design.family",
    layer="design",
    falsifies="the family-wise error rate of the family is controlled",
    predicts="a family of several hypotheses is corrected (Holm or BH)",
    applies=lambda d: None if d.plan.family else "not part of a family",
)
def family_check(d: Design):
    plan = d.plan
    if plan.family_size > 1 and plan.correction == "none":
        return failed(
            f"a family without a correction: {plan.family_size} hypotheses in {plan.family!r} "
            f"each at α = {plan.alpha:g} give up to "
            f"{1 - (1 - plan.alpha) ** plan.family_size:.0%} chance of a false positive",
            family_size=plan.family_size,
        )
    how = "no correction needed" if plan.family_size == 1 else f"{plan.correction} correction"
    return passed(f"family {plan.family!r} of {plan.family_size}: {how}")


@dataclass(frozen=True)
class ReviewResult(Result):
    """The design review of a plan: one finding per design check."""

    KIND = "verdicts.review"

    engine: ClassVar[str] = "verdicts"
    view: ClassVar[str | None] = "labcoat.verdicts.view:review_view"
    section: ClassVar[str | None] = "labcoat.report.sections.verdicts:review_section"
    title: ClassVar[str] = "Design review"

    plan: Plan
    checks: tuple[Finding, ...] = field(default=())

    @property
    def findings(self) -> list[Finding]:
        return list(self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "plan": self.plan.to_dict(),
            "findings": [f.to_dict() for f in self.checks],
        }


def review(
    plan: Any,
    *,
    pilot_a: Any = None,
    pilot_b: Any = None,
) -> ReviewResult:
    """Review ``plan``'s design; ``pilot_a``/``pilot_b`` (results files or tables of a pilot
    run of both arms) give the variance and the item sets."""
    plan = coerce_plan(plan)
    design = Design(plan)
    if (pilot_a is None) != (pilot_b is None):
        from labcoat.errors import InputError

        raise InputError("pilot: give both pilot_a and pilot_b (a pilot run of each arm), or none")
    if pilot_a is not None:
        design = _with_pilot(plan, pilot_a, pilot_b)
    return ReviewResult(plan, tuple(run_check(c, design) for c in REGISTRY.in_layer("design")))


def _with_pilot(plan: Plan, pilot_a: Any, pilot_b: Any) -> Design:
    from labcoat.errors import InputError
    from labcoat.stats.power import estimate_design_effect, variance_components
    from labcoat.verdicts.verdict import load_arm, paired_means

    a = load_arm(pilot_a, plan, plan.column, "pilot_a")
    b = load_arm(pilot_b, plan, plan.column, "pilot_b")
    pairs = paired_means(a, b)
    keep_a, keep_b = np.isin(a.ids, pairs.ids), np.isin(b.ids, pairs.ids)
    parts = variance_components(
        a.scores[keep_a], b.scores[keep_b], ids_a=a.ids[keep_a], ids_b=b.ids[keep_b]
    )
    deff = None
    if pairs.cluster is not None:
        try:
            deff = estimate_design_effect(pairs.a - pairs.b, pairs.cluster).design_effect
        except InputError:  # one cluster, or one item per cluster: no design effect to see
            deff = None
    return Design(
        plan,
        omega2=parts.omega2,
        sigma2_a=parts.sigma2_a,
        sigma2_b=parts.sigma2_b,
        design_effect=max(deff or 1.0, plan.design_effect),
        pilot_ids_a=frozenset(a.ids.tolist()),
        pilot_ids_b=frozenset(b.ids.tolist()),
    )


__all__ = ["Design", "ReviewResult", "review"]
