"""The pre-registration workflow on a ledger: register a plan, revise it, judge it.

The ledger stores plans and verdicts as plain JSON and chains them; it does not read them.
Everything that gives them meaning is here, and this module is the one place a verdict on a
ledger entry is judged: :func:`verdict` gathers what the ledger holds about the hypothesis
(its sealed plan revisions, its earlier verdicts, the other members of its family and their
latest p-values), hands it to :func:`labcoat.verdicts.analyse` and records the result.
"""

from __future__ import annotations

from typing import Any

from labcoat.errors import InputError
from labcoat.findings import Finding
from labcoat.verdicts.deviations import PlanRevision, PriorVerdict, SealedFingerprints
from labcoat.verdicts.kinds import judge_of, kind_of
from labcoat.verdicts.plan import Plan, coerce_plan
from labcoat.verdicts.review import ReviewResult, review
from labcoat.verdicts.verdict import VerdictResult, analyse


def _id(entry: Any) -> int:
    return int(getattr(entry, "id", entry))


def register(
    ledger: Any,
    title: str,
    *,
    predict: str | None,
    plan: Any,
    pilot_a: Any = None,
    pilot_b: Any = None,
    **entry: Any,
) -> Any:
    """Record hypothesis ``title`` with its registered analysis: ``plan`` (a
    :class:`labcoat.Plan`, a dict of its fields or a TOML file) is reviewed (``pilot_a``/
    ``pilot_b``: a pilot run of each arm gives the variance and item sets) and sealed with the
    entry in one transaction, so :func:`verdict` can judge it later. ``entry``: the other
    fields of :meth:`labcoat.Ledger.hypothesis` (tags, experiment, parents, runs). A plan of
    another kind (a design: :meth:`labcoat.design.Design.to_plan`) is reviewed and sealed by
    its engine. Returns the entry."""
    if kind_of(plan) is not None:
        return judge_of(kind_of(plan), "register")(ledger, title, plan, predict=predict, **entry)
    plan = coerce_plan(plan)
    reviewed = review(
        plan, pilot_a=pilot_a, pilot_b=pilot_b, family_members=_members_with(ledger, plan)
    )
    return ledger.hypothesis(
        title,
        predict=predict,
        sealed_plan=reviewed.plan.to_dict(),
        review=[f.to_dict() for f in reviewed.findings],
        **entry,
    )


def plan_history(ledger: Any, entry: Any) -> list[PlanRevision]:
    """Every sealed revision of an entry's plan, oldest first (empty when it has none)."""
    stored = ledger.plans(_id(entry))
    if any(kind_of(s.plan) for s in stored):
        raise InputError(
            f"entry {_id(entry)}: its plan is a {kind_of(stored[-1].plan)}, not a comparison: "
            f"`labcoat ledger plan {_id(entry)}` shows it, `labcoat verdict {_id(entry)}` judges "
            "it, and a new one is a new entry"
        )
    return [
        PlanRevision(s.revision, s.recorded_at, Plan.from_dict(s.plan, source="sealed plan"))
        for s in stored
    ]


def current_plan(ledger: Any, entry: Any) -> Plan | None:
    """The entry's current plan, or None when it has none."""
    history = plan_history(ledger, entry)
    return history[-1].plan if history else None


def plan_review(ledger: Any, entry: Any) -> ReviewResult:
    """The design review sealed with the entry's current plan."""
    stored = ledger.plans(_id(entry))
    if not stored:
        raise InputError(
            f"entry {_id(entry)}: has no plan; `labcoat ledger add --plan` registers one"
        )
    last = stored[-1]
    return ReviewResult(
        Plan.from_dict(last.plan, source="sealed plan"),
        tuple(Finding.from_dict(f) for f in last.review),
    )


def revise_plan(
    ledger: Any,
    entry: Any,
    plan: Any = None,
    *,
    pilot_a: Any = None,
    pilot_b: Any = None,
    **changes: Any,
) -> Plan:
    """Seal a new revision of the entry's plan (``plan``, or the current one with ``changes``),
    reviewed again; the earlier revisions are kept, and a verdict holds the data to the plan in
    force when results first existed, not to this one."""
    entry_id = _id(entry)
    if plan is None:
        current = current_plan(ledger, entry_id)
        if current is None:
            raise InputError(f"entry {entry_id}: has no plan to revise; give plan=")
        plan = current.revised(**changes)
    elif changes:
        plan = coerce_plan(plan).revised(**changes)
    plan = coerce_plan(plan)
    members = _members_with(ledger, plan, entry_id)
    reviewed = review(plan, pilot_a=pilot_a, pilot_b=pilot_b, family_members=members)
    ledger.seal_plan(entry_id, reviewed.plan.to_dict(), [f.to_dict() for f in reviewed.findings])
    return reviewed.plan


def family_pvalues(stored_verdicts: Any, family: str, other_than: int) -> list[float]:
    """The latest p-value of every other entry judged in ``family`` (stored verdict rows)."""
    latest: dict[int, float] = {}
    for v in stored_verdicts:
        if v.family == family and v.entry_id != other_than and v.pvalue is not None:
            latest[v.entry_id] = v.pvalue
    return list(latest.values())


def family_members(stored_plans: Any, family: str) -> int:
    """How many entries' current plans name ``family`` (stored plan rows, oldest first)."""
    latest: dict[int, Any] = {}
    for p in stored_plans:
        latest[p.entry_id] = p.plan.get("family")
    return sum(name == family for name in latest.values())


def _members_with(ledger: Any, plan: Plan, entry_id: int | None = None) -> int:
    """The hypotheses in ``plan``'s family once ``plan`` is sealed (for entry ``entry_id``, or a
    new one): the other entries whose current plan names it, and this one."""
    if not plan.family:
        return 0
    others = [p for p in ledger.plans() if p.entry_id != entry_id]
    return family_members(others, plan.family) + 1


def sealed_pilot(stored_plans: Any) -> dict[str, str] | None:
    """The rows of every pilot sealed with an entry's plan revisions (stored plan rows): what
    ``design.pilot`` recorded; None when no revision had a pilot."""
    rows: dict[str, str] | None = None
    for p in stored_plans:
        for f in p.review:
            if f.get("check") == "design.pilot" and "rows" in f.get("evidence", {}):
                rows = {**(rows or {}), **f["evidence"]["rows"]}
    return rows


def sealed_fingerprints(ledger: Any, stored_verdicts: Any) -> list[SealedFingerprints]:
    """Every data fingerprint the ledger sealed, with when: each verdict's (any entry) and
    each ``labcoat run``'s ``--data``."""
    sealed = [
        SealedFingerprints(
            v.recorded_at,
            f"the verdict on entry #{v.entry_id}",
            frozenset(
                [*v.fingerprints.values()]
                + [d for ds in v.result.get("digests", {}).values() for d in ds]
            ),
            v.entry_id,
        )
        for v in stored_verdicts
    ]
    for run in ledger.runs():
        for data in run.data:
            sealed.append(
                SealedFingerprints(
                    run.started_at,
                    f"`labcoat run` #{run.id} (--data {data.name})",
                    frozenset({data.digest}),
                )
            )
    return sealed


def verified_breaks(ledger: Any, *, unverified: bool) -> int:
    """How many problems ``verify`` finds; a ledger with any is refused unless
    ``unverified``."""
    problems = ledger.verify().problems()
    if problems and not unverified:
        raise InputError(
            f"the ledger fails `labcoat ledger verify` ({len(problems)} problem(s), first: "
            f"{problems[0]}); its plans and verdicts cannot be trusted: judge with --unverified "
            "to say so in the verdict"
        )
    return len(problems)


def verdict(
    ledger: Any,
    entry: Any,
    *,
    a: Any = None,
    b: Any = None,
    column: str | None = None,
    metric: str | None = None,
    unverified: bool = False,
    results: Any = None,
) -> VerdictResult:
    """Judge the entry by its registered plan on the results of arm ``a`` and arm ``b``
    (files, :class:`labcoat.stats.Table` s or dicts of columns) and record the verdict in the
    ledger: a sealed verdict row and the entry's next revision (its result and verdict).
    ``column``/``metric`` analyse another column or metric, which the verdict reports as a
    deviation. A ledger that fails ``verify`` is refused (:class:`labcoat.errors.InputError`)
    unless ``unverified``, and the verdict then names the deviation ``unverified``. An entry
    sealed with a plan of another kind (a design) is judged by its engine, on ``results`` or on
    the runs the ledger holds."""
    entry_id = _id(entry)
    breaks = verified_breaks(ledger, unverified=unverified)
    stored = ledger.plans(entry_id)
    kind = kind_of(stored[-1].plan) if stored else None
    if kind is not None:
        if a is not None or b is not None or column is not None or metric is not None:
            raise InputError(
                f"entry {entry_id}: its plan is a {kind}, judged on its runs or `results`, not "
                "on two arms (a=, b=) or another column or metric"
            )
        return judge_of(kind, "verdict")(ledger, entry_id, results=results)
    revisions = plan_history(ledger, entry_id)
    if not revisions:
        raise InputError(
            f"entry {entry_id}: has no registered plan, so there is no analysis to run; "
            "register one (`labcoat ledger add ... --plan plan.toml`) or resolve it by hand"
        )
    if a is None or b is None or results is not None:
        raise InputError(
            f"entry {entry_id}: give the results of both arms (--a and --b; a= and b= in Python)"
        )
    plan = revisions[-1].plan
    stored = ledger.verdicts()
    prior = [v for v in stored if v.entry_id == entry_id]
    result = analyse(
        plan,
        a,
        b,
        entry_id=entry_id,
        column=column,
        metric=metric,
        previous=[PriorVerdict(v.recorded_at, v.fingerprints, v.n_paired) for v in prior],
        revisions=revisions,
        family_pvalues=family_pvalues(stored, plan.family, entry_id) if plan.family else [],
        family_members=family_members(ledger.plans(), plan.family) if plan.family else 0,
        sealed=sealed_fingerprints(ledger, stored),
        ledger_breaks=breaks,
        pilot=sealed_pilot(ledger.plans(entry_id)),
    )
    ledger.record_verdict(
        entry_id,
        result.record_dict(),
        summary=result.summary(),
        plan_revision=revisions[-1].revision,
        family=plan.family,
    )
    return result


__all__ = [
    "current_plan",
    "family_members",
    "family_pvalues",
    "plan_history",
    "plan_review",
    "register",
    "revise_plan",
    "sealed_fingerprints",
    "sealed_pilot",
    "verdict",
    "verified_breaks",
]
