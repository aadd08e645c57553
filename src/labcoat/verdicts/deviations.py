"""Deviations: how the analysis that produced a verdict departs from its plan, found in the data.

Nothing here is confessed: every deviation is read from what the verdict saw (the columns it
scored, the items and seeds in the files, their fingerprints and times) and from the ledger
(earlier verdicts on the same hypothesis, the plan's revisions). An :class:`Observation` holds
those facts; each check is declared once in the engine's registry and run by
:func:`labcoat.findings.run_check`, and a failed one carries ``kind``, ``planned`` and
``observed`` in its evidence, which is what a verdict's ``deviations`` lists.

The plan the data is held to is the one *registered*: the revision in force when results
first existed (the earliest earlier verdict, or the results files' own time), so revising a
plan after seeing the results does not launder the change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from labcoat.findings import Finding, failed, passed, run_check, skipped, warned
from labcoat.verdicts.plan import Plan
from labcoat.verdicts.registry import REGISTRY


@dataclass(frozen=True)
class PriorVerdict:
    """An earlier verdict on the same hypothesis, as the ledger holds it."""

    recorded_at: str
    fingerprints: dict[str, str]
    n_paired: int


@dataclass(frozen=True)
class PlanRevision:
    """One sealed revision of a hypothesis' plan."""

    revision: int
    recorded_at: str
    plan: Plan


@dataclass(frozen=True)
class Observation:
    """What a verdict saw, and what the ledger knew when it was asked for."""

    plan: Plan
    column: str
    metric: str
    n_a: int
    n_b: int
    n_paired: int
    #: ids present in one arm only, not excluded by the plan
    only_a: Sequence[str] = ()
    only_b: Sequence[str] = ()
    #: seeds seen per arm (labels with a seed column, else answers per item as text)
    seeds_a: Sequence[str] | None = None
    seeds_b: Sequence[str] | None = None
    #: the seeds are labels from a seed column (else answers counted per item)
    seeds_named: bool = True
    fingerprints: dict[str, str] = field(default_factory=dict)
    #: when the results were produced (the files' modification times, ISO UTC), if known
    produced_at: str | None = None
    previous: Sequence[PriorVerdict] = ()
    revisions: Sequence[PlanRevision] = ()
    #: hypotheses registered in the plan's family so far, this one included (0: unknown)
    family_members: int = 0

    @property
    def results_first(self) -> str | None:
        """When results on this hypothesis first existed: the earliest verdict or file time."""
        times = [p.recorded_at for p in self.previous]
        if self.produced_at:
            times.append(self.produced_at)
        return min(times) if times else None

    @property
    def registered(self) -> Plan:
        """The plan in force when results first existed (the current plan if none did)."""
        first = self.results_first
        if first is None or not self.revisions:
            return self.plan
        before = [r for r in self.revisions if r.recorded_at <= first]
        return before[-1].plan if before else self.revisions[0].plan


def _deviation(kind: str, planned: Any, observed: Any, message: str):
    return failed(message, kind=kind, planned=planned, observed=observed)


_FALSIFIES = "the analysis that produced the verdict is the one registered before the results"


@REGISTRY.check(
    "deviation.metric",
    layer="deviation",
    falsifies=_FALSIFIES + " (the same metric)",
    predicts="the verdict scores the metric the plan named",
)
def metric_check(o: Observation):
    planned = o.registered.metric
    if o.metric != planned:
        return _deviation(
            "metric", planned, o.metric, f"metric {o.metric!r} instead of the planned {planned!r}"
        )
    return passed(f"metric {planned!r} as planned")


@REGISTRY.check(
    "deviation.column",
    layer="deviation",
    falsifies=_FALSIFIES + " (the same column)",
    predicts="the verdict reads the score column the plan named",
)
def column_check(o: Observation):
    planned = o.registered.column
    if o.column != planned:
        return _deviation(
            "column", planned, o.column, f"column {o.column!r} instead of the planned {planned!r}"
        )
    return passed(f"column {planned!r} as planned")


@REGISTRY.check(
    "deviation.items",
    layer="deviation",
    falsifies=_FALSIFIES + " (the planned number of items)",
    predicts="both arms score exactly the planned number of items",
)
def items_check(o: Observation):
    planned = o.registered.items
    if o.registered.stopping == "sequential" and o.n_paired <= planned:
        return passed(f"{o.n_paired} of at most {planned} items (sequential)")
    if o.n_paired != planned:
        what = "fewer" if o.n_paired < planned else "more"
        return _deviation(
            "items",
            planned,
            o.n_paired,
            f"{o.n_paired} paired items, {what} than the {planned} planned",
        )
    return passed(f"{planned} items as planned")


@REGISTRY.check(
    "deviation.dropped",
    layer="deviation",
    falsifies=_FALSIFIES + " (no item dropped that the plan did not exclude)",
    predicts="every item scored in one arm is scored in the other, or excluded by the plan",
)
def dropped_check(o: Observation):
    if o.only_a or o.only_b:
        dropped = sorted({*o.only_a, *o.only_b})
        shown = ", ".join(dropped[:5]) + (", ..." if len(dropped) > 5 else "")
        return _deviation(
            "dropped",
            list(o.registered.exclude),
            dropped[:100],
            f"{len(o.only_a)} item(s) missing from B and {len(o.only_b)} from A that the plan "
            f"did not exclude ({shown})",
        )
    return passed("no item dropped beyond the planned exclusions")


def _seed_count(seen: Sequence[str] | None) -> Any:
    return None if seen is None else len(seen)


@REGISTRY.check(
    "deviation.seeds",
    layer="deviation",
    falsifies=_FALSIFIES + " (the planned seeds)",
    predicts="each arm has exactly the seeds the plan named",
    applies=lambda o: None if o.seeds_a is not None else "the seeds are not observable",
)
def seeds_check(o: Observation):
    plan = o.registered
    for arm, seen, listed in (("A", o.seeds_a, plan.seeds_a), ("B", o.seeds_b, plan.seeds_b)):
        if seen is None:
            continue
        if listed and o.seeds_named and sorted(seen) != sorted(listed):
            return _deviation(
                "seeds",
                list(listed),
                list(seen),
                f"arm {arm} ran seeds {', '.join(seen)}; the plan named {', '.join(listed)}",
            )
        if len(seen) != plan.seeds:
            what = "added" if len(seen) > plan.seeds else "dropped"
            return _deviation(
                "seeds",
                plan.seeds,
                len(seen),
                f"arm {arm} has {len(seen)} seed(s) where the plan has {plan.seeds}: seeds {what}",
            )
    return passed(f"{plan.seeds} seed(s) per arm as planned")


@REGISTRY.check(
    "deviation.after-verdict",
    layer="deviation",
    falsifies=_FALSIFIES + " (one set of results, judged once)",
    predicts="no results file is produced after a verdict on the same hypothesis",
    applies=lambda o: (
        "no earlier verdict on this hypothesis"
        if not o.previous
        else "a sequential plan judges new results at each look"
        if o.registered.stopping == "sequential"
        else None
    ),
)
def after_verdict_check(o: Observation):
    seen = [p for p in o.previous if p.fingerprints == o.fingerprints]
    if seen:
        return passed("the same results as the earlier verdict, judged again")
    last = o.previous[-1]
    return _deviation(
        "after-verdict",
        f"the results judged at {last.recorded_at}",
        "new results",
        f"results differ from those of the verdict recorded at {last.recorded_at}: produced "
        "after a verdict on the same hypothesis",
    )


@REGISTRY.check(
    "deviation.look",
    layer="deviation",
    falsifies=_FALSIFIES + " (the planned stopping rule)",
    predicts="a fixed-n plan is judged once on all its items; a sequential one within its looks",
)
def look_check(o: Observation):
    plan = o.registered
    if plan.stopping == "sequential":
        looks = len({tuple(sorted(p.fingerprints.items())) for p in o.previous}) + 1
        if looks > plan.looks:
            return _deviation(
                "look", plan.looks, looks, f"look {looks} of a sequential plan with {plan.looks}"
            )
        return passed(f"look {looks} of {plan.looks} planned")
    interim = [p for p in o.previous if p.n_paired < plan.items]
    if interim:
        return _deviation(
            "look",
            "fixed n",
            f"{len(interim)} earlier look(s)",
            f"a sequential look under a fixed-n plan: a verdict at {interim[0].recorded_at} "
            f"judged {interim[0].n_paired} of {plan.items} items",
        )
    return passed("no interim look at a fixed-n plan")


def _changed_after_results(name: str):
    def check(o: Observation):
        if o.results_first is None:
            return skipped("no results recorded before this verdict")
        before, now = getattr(o.registered, name), getattr(o.plan, name)
        if before != now:
            return _deviation(
                name,
                before,
                now,
                f"{name} changed from {before:g} to {now:g} after results were first recorded "
                f"({o.results_first})",
            )
        return passed(f"{name} unchanged since results were first recorded")

    return check


for _name in ("margin", "alpha"):
    REGISTRY.check(
        f"deviation.{_name}",
        layer="deviation",
        falsifies=_FALSIFIES + f" (its {_name})",
        predicts=f"the {_name} is not revised once results exist",
    )(_changed_after_results(_name))


@REGISTRY.check(
    "deviation.family",
    layer="deviation",
    falsifies=_FALSIFIES + " (the family it is corrected within)",
    predicts="the family holds no more hypotheses than the plan declared",
    applies=lambda o: (
        None
        if o.registered.family and o.family_members
        else "not part of a family, or its members are unknown"
    ),
)
def family_check(o: Observation):
    declared = o.registered.family_size
    if o.family_members > declared:
        return _deviation(
            "family",
            declared,
            o.family_members,
            f"{o.family_members} hypotheses registered in family {o.registered.family!r}, "
            f"declared as {declared}: the correction assumed a smaller family",
        )
    return passed(f"{o.family_members} of {declared} hypotheses in the family")


@REGISTRY.check(
    "deviation.registered-late",
    layer="deviation",
    severity="warn",
    falsifies="the plan was written before the results it judges existed",
    predicts="the results files were produced after the plan was sealed",
    applies=lambda o: (
        None
        if o.produced_at and o.revisions
        else "the results' production time or the plan's revisions are unknown"
    ),
)
def registered_late_check(o: Observation):
    sealed = o.revisions[0].recorded_at
    if o.produced_at < sealed:
        return warned(
            f"the results files ({o.produced_at}) are older than the plan ({sealed}): a plan "
            "written after the results is no pre-registration (fine for copied files)",
            kind="registered-late",
            planned=sealed,
            observed=o.produced_at,
        )
    return passed("the results were produced after the plan was sealed")


#: analysis fields whose change after the results is a deviation of kind "revised" (margin
#: and alpha have kinds of their own; column, metric, items and seeds are checked on the data)
REVISABLE = (
    "comparison",
    "sides",
    "test",
    "better",
    "cluster",
    "exclude",
    "stopping",
    "looks",
    "family",
    "family_size",
    "correction",
    "bounds",
)


@REGISTRY.check(
    "deviation.revised",
    layer="deviation",
    falsifies=_FALSIFIES + " (its comparison, test, sides, clusters, exclusions, family)",
    predicts="the analysis is not revised once results exist",
)
def revised_check(o: Observation):
    if o.results_first is None:
        return skipped("no results recorded before this verdict")
    before, now = o.registered, o.plan
    changed = [f for f in REVISABLE if getattr(before, f) != getattr(now, f)]
    if changed:
        return _deviation(
            "revised",
            {f: _plain(getattr(before, f)) for f in changed},
            {f: _plain(getattr(now, f)) for f in changed},
            f"{', '.join(changed)} revised after results were first recorded ({o.results_first})",
        )
    return passed("the analysis is unchanged since results were first recorded")


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def find_deviations(observation: Observation) -> list[Finding]:
    """Every deviation check on ``observation``, in declaration order."""
    return [run_check(c, observation) for c in REGISTRY.in_layer("deviation")]


def deviations_of(findings: Sequence[Finding]) -> list[dict[str, Any]]:
    """The ``{"kind", "planned", "observed"}`` of every failed deviation finding."""
    return [
        {k: f.evidence.get(k) for k in ("kind", "planned", "observed")}
        for f in findings
        if f.layer == "deviation" and f.status == "fail"
    ]
