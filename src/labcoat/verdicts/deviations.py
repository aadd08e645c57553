"""Deviations: how the analysis that produced a verdict departs from its plan, found in the data.

Nothing here is confessed: every deviation is read from what the verdict saw (the columns it
scored, the items and seeds in the files, their fingerprints and times) and from the ledger
(earlier verdicts on any hypothesis, `labcoat run` data fingerprints, the plan's revisions).
An :class:`Observation` holds those facts; each check is declared once in the engine's
registry and run by :func:`labcoat.findings.run_check`, and a failed one carries ``kind``,
``planned``, ``observed`` and its message in its evidence, which is what a verdict's
``deviations`` lists.

The plan the data is held to is the one *registered*: the plan's first revision. The ledger can
prove that data existed at a time (a sealed fingerprint, a file older than a plan), never that it
did not (a copy refreshes a file's time), so a later revision is never the registered plan: what
it changed is a deviation, and a revision sealed after the ledger's evidence of the data is one
more (``revised-after-data``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Sequence

from labcoat.findings import Finding, failed, passed, run_check
from labcoat.verdicts.plan import Plan
from labcoat.verdicts.registry import REGISTRY


@dataclass(frozen=True)
class PriorVerdict:
    """An earlier verdict on the same hypothesis, as the ledger holds it."""

    recorded_at: str
    fingerprints: dict[str, str]
    n_paired: int


@dataclass(frozen=True)
class DataEvidence:
    """A record that one arm's data existed at a time: a fingerprint the ledger sealed (an
    earlier verdict on ``entry``, a ``labcoat run``) or the results file's own time."""

    arm: str
    at: str
    what: str
    #: the entry whose verdict sealed the fingerprint (None: a run or a file's time)
    entry: int | None = None
    #: how much older than a moment ``at`` must be to predate it (a file system's clock and
    #: time resolution are not the ledger's)
    slack_s: float = 0.0

    def predates(self, moment: str) -> bool:
        return _time(self.at) + timedelta(seconds=self.slack_s) < _time(moment)

    def describe(self) -> str:
        return f"{self.what} ({self.at})"


@dataclass(frozen=True)
class SealedFingerprints:
    """Fingerprints the ledger sealed at ``at`` (a verdict's data, a run's ``--data``)."""

    at: str
    what: str
    digests: frozenset[str]
    entry: int | None = None


def _time(iso: str) -> datetime:
    return datetime.fromisoformat(iso.replace("Z", "+00:00"))


@dataclass(frozen=True)
class PilotOverlap:
    """The judged items that a pilot sealed with the plan also scored."""

    pilot_items: int
    judged_items: int
    #: judged items the pilot scored, and of those, the ones with the pilot's scores in both arms
    shared: int
    same_scores: int
    verdict: str
    #: the registered plan's verdict on the judged items outside the pilot (None: it does not
    #: run there, or was not needed because the shared items were scored again)
    verdict_outside: str | None = None

    @property
    def share(self) -> float:
        return self.shared / self.judged_items if self.judged_items else 0.0

    @property
    def contains_pilot(self) -> bool:
        """Every shared item carries the pilot's own scores: the pilot's rows are in the data."""
        return self.shared > 0 and self.same_scores == self.shared


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
    previous: Sequence[PriorVerdict] = ()
    revisions: Sequence[PlanRevision] = ()
    #: hypotheses registered in the plan's family so far, this one included (0: unknown)
    family_members: int = 0
    #: every record that the data of an arm existed (sealed fingerprints, file times)
    evidence: Sequence[DataEvidence] = ()
    #: the entry judged (None: a verdict without a ledger)
    entry_id: int | None = None
    #: breaks ``verify`` found in the ledger, judged anyway (``--unverified``)
    ledger_breaks: int = 0
    #: how the judged data overlap the pilot sealed with the plan (None: no pilot sealed)
    pilot: PilotOverlap | None = None

    @property
    def registered(self) -> Plan:
        """The plan the data is held to: the first sealed revision (the plan, without one)."""
        return self.revisions[0].plan if self.revisions else self.plan

    def existed_before(self, moment: str) -> dict[str, DataEvidence] | None:
        """Per arm, the earliest evidence that its data existed before ``moment``; None unless
        every arm has some (a comparison exists only once both arms do)."""
        found = {}
        for arm in self.fingerprints:
            before = [e for e in self.evidence if e.arm == arm and e.predates(moment)]
            if not before:
                return None
            found[arm] = min(before, key=lambda e: _time(e.at))
        return found


def describe_evidence(found: dict[str, DataEvidence]) -> str:
    """``a: <what> (<when>); b: ...``, one arm per part."""
    return "; ".join(f"{arm}: {e.describe()}" for arm, e in found.items())


def _deviation(kind: str, planned: Any, observed: Any, message: str):
    return failed(message, kind=kind, planned=planned, observed=observed)


_FALSIFIES = "the analysis that produced the verdict is the one registered before the results"
#: why a revision is never the registered plan, said with every change it made
_UNPROVEN = (
    "the registered plan is revision 1; the ledger cannot show the results postdate a "
    "revision (a copy refreshes a file's time): register a new hypothesis to change a plan"
)


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
    predicts="the results are the ones the first verdict on the same hypothesis judged",
    applies=lambda o: (
        "no earlier verdict on this hypothesis"
        if not o.previous
        else "a sequential plan judges new results at each look"
        if o.registered.stopping == "sequential"
        else None
    ),
)
def after_verdict_check(o: Observation):
    # the first verdict's results, never the last one's: judging edited results twice does not
    # make them the registered ones
    first = o.previous[0]
    if first.fingerprints == o.fingerprints:
        return passed("the same results as the first verdict, judged again")
    return _deviation(
        "after-verdict",
        f"the results judged at {first.recorded_at}",
        "new results",
        f"results differ from those of the first verdict on this hypothesis "
        f"({first.recorded_at}): produced or edited after a verdict",
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


def _first_change(o: Observation, names: Sequence[str]) -> str:
    """Which revision first differs from revision 1 in one of ``names``, in words."""
    first = o.revisions[0].plan
    for r in o.revisions[1:]:
        if any(getattr(r.plan, n) != getattr(first, n) for n in names):
            return f"plan revision {r.revision} ({r.recorded_at})"
    return "the plan judged, which is no sealed revision"


def _changed_since_registered(name: str):
    def check(o: Observation):
        before, now = getattr(o.registered, name), getattr(o.plan, name)
        if before != now:
            return _deviation(
                name,
                before,
                now,
                f"{name} changed from {before:g} to {now:g} by {_first_change(o, (name,))}: "
                f"{_UNPROVEN}",
            )
        return passed(f"{name} as registered")

    return check


for _name in ("margin", "alpha"):
    REGISTRY.check(
        f"deviation.{_name}",
        layer="deviation",
        falsifies=_FALSIFIES + f" (its {_name})",
        predicts=f"the {_name} is the registered plan's (revision 1)",
    )(_changed_since_registered(_name))


@REGISTRY.check(
    "deviation.revised-after-data",
    layer="deviation",
    falsifies="every revision of the plan was sealed before the ledger had evidence of the data",
    predicts="no plan revision follows a verdict on the hypothesis or a record of its data",
    applies=lambda o: None if len(o.revisions) > 1 else "the plan was never revised",
)
def revised_after_data_check(o: Observation):
    first = o.revisions[0]
    for r in o.revisions[1:]:
        if o.previous and o.previous[0].recorded_at < r.recorded_at:
            after = f"the first verdict on this hypothesis ({o.previous[0].recorded_at})"
        elif (seen := o.existed_before(r.recorded_at)) is not None:
            after = f"the data existed: {describe_evidence(seen)}"
        else:
            continue
        return _deviation(
            "revised-after-data",
            {"revision": first.revision, "sealed_at": first.recorded_at},
            {"revision": r.revision, "sealed_at": r.recorded_at, "after": after},
            f"plan revision {r.revision} ({r.recorded_at}) was sealed after {after}; the data "
            f"is held to revision 1 ({first.recorded_at}): treat the revision's analysis as "
            "exploratory",
        )
    return passed("every revision precedes the ledger's first record of the data")


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
    falsifies="the plan was written before the results it judges existed",
    predicts="the ledger has no record of the results (a sealed fingerprint, a file older "
    "than the plan) from before the plan was sealed",
    applies=lambda o: None if o.revisions else "no sealed plan to date the results against",
)
def registered_late_check(o: Observation):
    sealed = o.revisions[0].recorded_at
    seen = o.existed_before(sealed)
    if seen is not None:
        evidence = describe_evidence(seen)
        return _deviation(
            "registered-late",
            {"sealed_at": sealed},
            {"data_existed": evidence},
            f"the results existed before the plan was sealed ({sealed}): {evidence}; a plan "
            "written after its results is no pre-registration: treat the verdict as "
            "exploratory, and register before producing the next results",
        )
    return passed("no record of the results predates the plan")


@REGISTRY.check(
    "deviation.judged-before",
    layer="deviation",
    falsifies="the results are judged under the hypothesis registered for them",
    predicts="no other entry judged the same results before this plan was sealed",
    applies=lambda o: None if o.revisions else "no sealed plan to date the results against",
)
def judged_before_check(o: Observation):
    sealed = o.revisions[0].recorded_at
    arms = set(o.fingerprints)
    judged: dict[int, dict[str, DataEvidence]] = {}
    for e in o.evidence:
        if e.entry is not None and e.entry != o.entry_id and e.predates(sealed):
            judged.setdefault(e.entry, {}).setdefault(e.arm, e)
    for entry, found in sorted(judged.items()):
        if set(found) == arms:
            when = min(e.at for e in found.values())
            return _deviation(
                "judged-before",
                {"entry": o.entry_id, "sealed_at": sealed},
                {"entry": entry, "judged_at": when},
                f"these results were judged under entry #{entry} ({when}) before this plan was "
                f"sealed ({sealed}): a second hypothesis on results already judged is no "
                f"pre-registration; report entry #{entry}'s verdict",
            )
    return passed("no other entry judged these results before the plan was sealed")


@REGISTRY.check(
    "deviation.judged-on-pilot",
    layer="deviation",
    falsifies="the verdict rests on results produced after the plan, not on the pilot it was "
    "written from",
    predicts="the judged data do not contain the pilot's rows, or the items outside the pilot "
    "give the same verdict",
    applies=lambda o: None if o.pilot is not None else "no pilot was sealed with the plan",
)
def judged_on_pilot_check(o: Observation):
    p = o.pilot
    if not p.shared:
        return passed(f"no judged item is one of the pilot's {p.pilot_items:,}")
    part = f"{p.shared:,} of the {p.judged_items:,} judged items ({p.share:.0%})"
    if not p.contains_pilot:
        return passed(
            f"{part} were in the pilot and scored again ({p.shared - p.same_scores:,} with other "
            "scores): new results"
        )
    fresh = p.judged_items - p.shared
    if p.verdict_outside == p.verdict:
        return passed(
            f"{part} are the pilot's rows; the {fresh:,} items outside the pilot give the same "
            f"verdict ({p.verdict})"
        )
    outside = (
        f"the {fresh:,} items outside it give {p.verdict_outside}"
        if p.verdict_outside is not None
        else "no item outside it is left to judge"
        if fresh == 0
        else f"the {fresh:,} items outside it are too few to judge"
    )
    return _deviation(
        "judged-on-pilot",
        {"pilot_items": p.pilot_items, "results": "produced after the plan"},
        {"pilot_rows": p.shared, "share": p.share, "verdict_outside_pilot": p.verdict_outside},
        f"{part} are the rows of the pilot the plan was registered with; {outside}: the verdict "
        "rests on results seen when the plan was written; treat it as exploratory and judge "
        "results produced after the plan",
    )


@REGISTRY.check(
    "deviation.unverified",
    layer="deviation",
    falsifies="the plan and the earlier verdicts read from the ledger are the ones it sealed",
    predicts="the ledger passes `labcoat ledger verify`",
)
def unverified_check(o: Observation):
    if o.ledger_breaks:
        return _deviation(
            "unverified",
            "a ledger that verifies",
            f"{o.ledger_breaks} break(s)",
            f"judged on a ledger that fails `labcoat ledger verify` ({o.ledger_breaks} "
            "break(s)): its plan and earlier verdicts may have been edited; run "
            "`labcoat ledger verify` and judge on a ledger that passes it",
        )
    return passed("the ledger verifies")


#: analysis fields whose change by a revision is a deviation of kind "revised" (margin and
#: alpha have kinds of their own; column, metric, items and seeds are checked on the data)
REVISABLE = (
    "comparison",
    "id",
    "label",
    "seed_column",
    "resamples",
    "seed",
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
    predicts="the analysis is the registered plan's (revision 1)",
)
def revised_check(o: Observation):
    before, now = o.registered, o.plan
    changed = [f for f in REVISABLE if getattr(before, f) != getattr(now, f)]
    if changed:
        return _deviation(
            "revised",
            {f: _plain(getattr(before, f)) for f in changed},
            {f: _plain(getattr(now, f)) for f in changed},
            f"{', '.join(changed)} revised by {_first_change(o, changed)}: {_UNPROVEN}",
        )
    return passed("the analysis is the registered plan's")


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def find_deviations(observation: Observation) -> list[Finding]:
    """Every deviation check on ``observation``, in declaration order."""
    return [run_check(c, observation) for c in REGISTRY.in_layer("deviation")]


def deviations_of(findings: Sequence[Finding]) -> list[dict[str, Any]]:
    """The ``{"kind", "planned", "observed", "evidence"}`` of every failed deviation finding
    (``evidence``: the finding's message, which says what showed it)."""
    return [
        {**{k: f.evidence.get(k) for k in ("kind", "planned", "observed")}, "evidence": f.message}
        for f in findings
        if f.layer == "deviation" and f.status == "fail"
    ]
