"""The design review a plan gets when it is registered, as findings.

Before any result exists, labcoat checks what the plan can still fix: the minimum detectable
effect at the planned number of items against the margin (with a pilot's variance or a stated
one), seeds confounded with arms, arms on different item sets, a comparison with no baseline or
negative control, several interventions changed at once, and a family with no correction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from labcoat.findings import Finding, failed, passed, run_check, warned
from labcoat.result import Result
from labcoat.verdicts.plan import SHARE_METRICS, Plan, coerce_plan
from labcoat.verdicts.registry import REGISTRY
from labcoat.verdicts.verdict import points as _points

if TYPE_CHECKING:
    from labcoat.stats.power import DesignEffect


@dataclass(frozen=True)
class Design:
    """A plan and what a pilot run says about it (variance components, the clusters' ICC or
    why the pilot cannot estimate it, item ids per arm)."""

    plan: Plan
    omega2: float | None = None
    sigma2_a: float = 0.0
    sigma2_b: float = 0.0
    clusters: DesignEffect | None = None
    clusters_unknown: str | None = None
    pilot_ids_a: frozenset[str] | None = None
    pilot_ids_b: frozenset[str] | None = None
    #: per paired pilot item, a digest of both arms' scores (sealed: see ``design.pilot``)
    pilot_rows: dict[str, str] | None = None
    #: hypotheses registered in the plan's family, this one included (0: unknown)
    family_members: int = 0

    @property
    def family_size(self) -> int:
        """The family the review plans α over: never fewer than its registered members."""
        return max(self.plan.family_size, self.family_members)

    @property
    def variance_source(self) -> str | None:
        if self.omega2 is not None:
            return "the pilot"
        return "the plan" if self.plan.variance is not None else None

    @property
    def variance(self) -> float | None:
        """Variance of one item-level difference at the plan's seeds."""
        plan = self.plan
        if self.omega2 is None:
            return plan.variance
        return self.omega2 + (self.sigma2_a + self.sigma2_b) / plan.seeds


def _is_proportion(plan: Plan) -> bool:
    return plan.metric.lower() in SHARE_METRICS or plan.resolved_test() == "mcnemar"


def _power_options(plan: Plan, family_size: int | None = None) -> dict[str, Any]:
    size = plan.family_size if family_size is None else family_size
    family = size if plan.correction != "none" else 1
    return dict(
        alpha=plan.alpha / family,  # Bonferroni for planning: never above Holm's first step
        power=plan.power,
        alternative="two-sided" if plan.sides == "two-sided" else "one-sided",
    )


def _no_power_inputs(d: Design) -> str | None:
    if d.variance_source is None and not _is_proportion(d.plan):
        return (
            "no variance: register with a pilot (pilot_a/pilot_b) or state `variance` (only a "
            "proportion's is bounded without one)"
        )
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
    outcome = _power(d)
    note = _family_note(d)
    if not note:
        return outcome
    return replace(
        outcome,
        message=outcome.message + note,
        evidence={**outcome.evidence, "family_size": d.family_size},
    )


def _family_note(d: Design) -> str:
    """What the planning α rests on when the ledger holds more of the family than declared."""
    plan = d.plan
    if d.family_size == plan.family_size or plan.correction == "none":
        return ""
    return (
        f"; α = {plan.alpha:g}/{d.family_size} over the {d.family_members} hypotheses "
        f"registered in family {plan.family!r} (declared family_size {plan.family_size})"
    )


def _power(d: Design):
    if d.variance_source is None:
        return _bounded_power(d)
    if d.clusters is not None and d.plan.design_effect == 1.0:
        return _clustered_power(d)
    from labcoat.stats.power import minimum_detectable_effect, sample_size

    plan = d.plan
    deff = plan.design_effect
    inputs = dict(omega2=d.variance, design_effect=deff, **_power_options(plan, d.family_size))
    mde = minimum_detectable_effect(plan.items, **inputs).mde
    target, what = plan.target, _what(plan)
    evidence = dict(
        mde=mde,
        target=target,
        items=plan.items,
        variance_from=d.variance_source,
        design_effect=deff,
    )
    if plan.cluster is not None and d.clusters_unknown:
        evidence["clusters_unknown"] = d.clusters_unknown
    if mde > target:
        needed = sample_size(target, **inputs).n
        return failed(
            f"underpowered: MDE {_points(mde)} > {what} {_points(target)}; n ≥ {needed:,} items "
            "needed" + _unknown_clusters(d),
            needed=needed,
            **evidence,
        )
    if plan.cluster is not None and deff == 1.0:
        return warned(
            f"MDE {_points(mde)} ≤ {what} {_points(target)} at {plan.items:,} items only if "
            f"the clusters by {plan.cluster!r} cost nothing" + _unknown_clusters(d),
            **evidence,
        )
    return passed(
        f"MDE {_points(mde)} ≤ {what} {_points(target)} at {plan.items:,} items", **evidence
    )


def _what(plan: Plan) -> str:
    return "margin" if plan.margin > 0 else "effect"


def _unknown_clusters(d: Design) -> str:
    """What the design effect rests on when a clustered plan's pilot cannot estimate it."""
    plan = d.plan
    if plan.cluster is None or plan.design_effect > 1.0:
        return ""
    why = d.clusters_unknown or "no pilot with the cluster column was given"
    return (
        f"; the design effect of the clusters by {plan.cluster!r} is unknown ({why}), so this "
        "assumes none: register with a pilot that has several items in each of several "
        "clusters, or state `design_effect`"
    )


def _clustered_power(d: Design):
    """The MDE at the planned items with the pilot's ICC projected to the planned cluster
    sizes, at the estimate and at its upper confidence bound."""
    from labcoat.stats.power import clustered_floor, clustered_mde, clustered_sample_size

    plan, c, var = d.plan, d.clusters, d.variance
    options = _power_options(plan, d.family_size)
    target, what = plan.target, _what(plan)
    mde = clustered_mde(plan.items, var, c, **options)
    mde_upper = clustered_mde(plan.items, var, c, upper=True, **options)
    size = plan.items / c.n_clusters
    where = f"{plan.items:,} items in the pilot's {c.n_clusters} clusters (~{size:,.0f} a cluster)"
    bound = f"the ICC's {c.level:.0%} upper bound {c.icc_upper:.3g}"
    evidence = dict(
        mde=mde,
        mde_upper=mde_upper,
        target=target,
        items=plan.items,
        variance_from=d.variance_source,
        icc=c.icc,
        icc_upper=c.icc_upper,
        level=c.level,
        clusters=c.n_clusters,
        cluster_size=size,
        design_effect=c.at(plan.items),
        design_effect_upper=c.at(plan.items, upper=True),
        pilot_design_effect=c.design_effect,
        pilot_cluster_size=c.cluster_size,
    )

    def needs(upper: bool) -> str:
        n = clustered_sample_size(target, var, c, upper=upper, **options)
        if math.isfinite(n):
            return f"n ≥ {math.ceil(n):,} items needed"
        floor = clustered_floor(var, c, upper=upper, **options)
        return (
            f"no number of items in {c.n_clusters} clusters reaches it (the clusters alone "
            f"leave an MDE of {_points(floor)}): sample more clusters"
        )

    if mde > target:
        return failed(
            f"underpowered: MDE {_points(mde)} > {what} {_points(target)} at {where}: design "
            f"effect {c.at(plan.items):.3g} there (ICC {c.icc:.3g}; the pilot's own is "
            f"{c.design_effect:.3g} at ~{c.cluster_size:,.0f} a cluster); {needs(False)}",
            **evidence,
        )
    if mde_upper > target:
        return warned(
            f"the pilot cannot show the design is powered: at {bound} the MDE at {where} is "
            f"{_points(mde_upper)} > {what} {_points(target)} (design effect "
            f"{c.at(plan.items, upper=True):.3g}; {_points(mde)} at the estimate ICC "
            f"{c.icc:.3g}); at the bound {needs(True)}, or a larger pilot narrows it",
            **evidence,
        )
    return passed(
        f"MDE {_points(mde)} ({_points(mde_upper)} at {bound}) ≤ {what} {_points(target)} at "
        f"{where}",
        **evidence,
    )


def _bounded_power(d: Design):
    """Without a variance, a proportion's bounds still decide: the difference of two scores in
    [lo, hi] has variance at most (hi − lo)², and a true difference δ of 0/1 answers (K per
    item) has at least (δ (hi − lo) − δ²) / K."""
    from labcoat.stats.power import minimum_detectable_effect, sample_size

    plan = d.plan
    target, what = plan.target, _what(plan)
    lo, hi = plan.bounds
    width = hi - lo
    worst = width**2
    least = 0.0
    if plan.comparison == "superiority" and target < width:
        least = (target * width - target**2) / plan.seeds
    options = dict(design_effect=plan.design_effect, **_power_options(plan, d.family_size))
    mde_worst = minimum_detectable_effect(plan.items, worst, **options).mde
    n_worst = sample_size(target, worst, **options).n
    evidence = dict(
        mde_worst=mde_worst,
        variance_worst=worst,
        variance_least=least,
        target=target,
        items=plan.items,
        variance_from=f"the bounds [{lo:g}, {hi:g}]",
    )
    if mde_worst <= target:
        claim = (
            f"MDE ≤ {_points(mde_worst)} ≤ {what} {_points(target)} at {plan.items:,} items "
            f"at any variance a proportion in [{lo:g}, {hi:g}] can have"
        )
        unknown = _unknown_clusters(d)
        if unknown:
            return warned(claim + unknown, **evidence)
        return passed(claim, **evidence)
    if least > 0:
        mde_least = minimum_detectable_effect(plan.items, least, **options).mde
        if mde_least > target:
            n_least = sample_size(target, least, **options).n
            return failed(
                f"underpowered on its face: even at the least variance a true difference of "
                f"{_points(target)} in 0/1 answers can have ({least:.3g}), the MDE at "
                f"{plan.items:,} items is {_points(mde_least)} > {what} {_points(target)}; "
                f"n ≥ {n_least:,} items needed at best, {n_worst:,} at the worst case"
                + _unknown_clusters(d),
                mde=mde_least,
                needed=n_least,
                **evidence,
            )
    return warned(
        f"no variance to power the design with: at a proportion's worst case (variance "
        f"{worst:g}) the MDE at {plan.items:,} items is {_points(mde_worst)} > {what} "
        f"{_points(target)}; register with a pilot (pilot_a/pilot_b) or state `variance`, or "
        f"plan n ≥ {n_worst:,} items (enough at any variance)" + _unknown_clusters(d),
        needed=n_worst,
        **evidence,
    )


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
    "design.pilot",
    layer="design",
    falsifies="the pilot is a sample run before the results, not the results themselves",
    predicts="the pilot pairs fewer items than the planned run",
    applies=lambda d: None if d.pilot_rows is not None else "registered without a pilot",
)
def pilot_check(d: Design):
    n, planned = len(d.pilot_rows), d.plan.items
    # the pilot's rows are sealed with the plan: a verdict on data that contain them is checked
    # on the items outside the pilot (deviation.judged-on-pilot)
    evidence = dict(items=n, planned=planned, rows=d.pilot_rows)
    if n >= planned:
        return failed(
            f"the pilot pairs {n:,} items, as many as the {planned:,} planned: a pilot that is "
            "the run itself makes this a plan written after its results; register with a "
            "sample of the items (a verdict on these rows names judged-on-pilot)",
            **evidence,
        )
    return passed(
        f"a pilot of {n:,} paired items ({n / planned:.0%} of the {planned:,} planned), sealed "
        "with the plan: a verdict on data that contain its rows is checked on the items outside it",
        **evidence,
    )


@REGISTRY.check(
    "design.family",
    layer="design",
    falsifies="the family-wise error rate of the family is controlled",
    predicts="a family of several hypotheses is corrected (Holm or BH)",
    applies=lambda d: None if d.plan.family else "not part of a family",
)
def family_check(d: Design):
    plan, size = d.plan, d.family_size
    if size > 1 and plan.correction == "none":
        return failed(
            f"a family without a correction: {size} hypotheses in {plan.family!r} "
            f"each at α = {plan.alpha:g} give up to "
            f"{1 - (1 - plan.alpha) ** size:.0%} chance of a false positive",
            family_size=size,
        )
    if size > plan.family_size:
        return warned(
            f"family {plan.family!r} holds {d.family_members} registered hypotheses, this one "
            f"included, but the plan declares family_size {plan.family_size}: the review plans "
            f"α over {size} and the verdict adjusts over them; declare family_size = {size} "
            "(or more, for the members still to come)",
            family_size=size,
            declared=plan.family_size,
        )
    how = "no correction needed" if size == 1 else f"{plan.correction} correction"
    return passed(f"family {plan.family!r} of {size}: {how}")


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
    family_members: int = 0,
) -> ReviewResult:
    """Review ``plan``'s design; ``pilot_a``/``pilot_b`` (results files or tables of a pilot
    run of both arms) give the variance and the item sets (and the pilot's rows, sealed with
    the plan). ``family_members``: the hypotheses a ledger holds in the plan's family, this one
    included; the review plans α over at least that many."""
    plan = coerce_plan(plan)
    design = Design(plan)
    if (pilot_a is None) != (pilot_b is None):
        from labcoat.errors import InputError

        raise InputError("pilot: give both pilot_a and pilot_b (a pilot run of each arm), or none")
    if pilot_a is not None:
        design = _with_pilot(plan, pilot_a, pilot_b)
    design = replace(design, family_members=family_members if plan.family else 0)
    return ReviewResult(plan, tuple(run_check(c, design) for c in REGISTRY.in_layer("design")))


def _with_pilot(plan: Plan, pilot_a: Any, pilot_b: Any) -> Design:
    from labcoat.errors import InputError
    from labcoat.stats.power import estimate_design_effect, variance_components
    from labcoat.verdicts.verdict import item_rows, load_arm, paired_means

    a = load_arm(pilot_a, plan, plan.column, "pilot_a")
    b = load_arm(pilot_b, plan, plan.column, "pilot_b")
    pairs = paired_means(a, b)
    shared = set(pairs.ids.tolist())  # a set: np.isin on object ids is quadratic
    keep_a, keep_b = (np.array([i in shared for i in x.ids.tolist()], bool) for x in (a, b))
    parts = variance_components(
        a.scores[keep_a], b.scores[keep_b], ids_a=a.ids[keep_a], ids_b=b.ids[keep_b]
    )
    clusters, unknown = None, None
    if pairs.cluster is not None:
        groups = len(set(pairs.cluster.tolist()))
        if groups < 2:
            unknown = f"the pilot's {pairs.ids.size} items are all in one cluster"
        elif groups == pairs.ids.size:
            unknown = f"each of the pilot's {groups} clusters holds one item"
        else:
            try:
                clusters = estimate_design_effect(pairs.a - pairs.b, pairs.cluster)
            except InputError as exc:  # pragma: no cover - the two cases above are the ones
                unknown = str(exc)
    return Design(
        plan,
        omega2=parts.omega2,
        sigma2_a=parts.sigma2_a,
        sigma2_b=parts.sigma2_b,
        clusters=clusters,
        clusters_unknown=unknown,
        pilot_ids_a=frozenset(a.ids.tolist()),
        pilot_ids_b=frozenset(b.ids.tolist()),
        pilot_rows=item_rows(pairs),
    )


__all__ = ["Design", "ReviewResult", "review"]
