"""A hypothesis registered with its plan, as ``labcoat ledger add --plan`` and ``labcoat ledger
plan`` answer it: one call each, whose result's ``to_dict()`` is the command's ``--json``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from labcoat.errors import InputError
from labcoat.ledger.answers import Added
from labcoat.verdicts.deviations import PlanRevision
from labcoat.verdicts.judge import plan_history, plan_review, register, revise_plan
from labcoat.verdicts.kinds import kind_of
from labcoat.verdicts.review import ReviewResult


def register_entry(
    ledger: Any,
    title: str,
    *,
    predict: str | None,
    plan: Any,
    pilot_a: Any = None,
    pilot_b: Any = None,
    **fields: Any,
) -> Added:
    """Record hypothesis ``title`` with its plan, reviewed and sealed
    (:func:`labcoat.verdicts.judge.register`), and the review that was sealed with it."""
    entry = register(
        ledger, title, predict=predict, plan=plan, pilot_a=pilot_a, pilot_b=pilot_b, **fields
    )
    return Added(entry, ledger.location, plan_review(ledger, entry))


@dataclass(frozen=True)
class PlanRecord:
    """An entry's plan in force: its latest sealed revision and the review sealed with it."""

    entry_id: int
    latest: PlanRevision
    review: ReviewResult

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.entry_id,
            "revision": self.latest.revision,
            "recorded_at": self.latest.recorded_at,
            "plan": self.latest.plan.to_dict(),
            "review": [f.to_dict() for f in self.review.findings],
        }

    def __rich__(self) -> Any:
        from rich.console import Group
        from rich.text import Text

        head = f"# entry {self.entry_id}, plan revision {self.latest.revision} "
        head += f"({self.latest.recorded_at})\n"
        return Group(Text(head + self.latest.plan.to_toml().rstrip("\n")), self.review)


@dataclass(frozen=True)
class SealedPlanRecord:
    """An entry's plan of another kind (a design), shown as its engine sealed it."""

    entry_id: int
    kind: str
    latest: Any  # the ledger's plan record: revision, recorded_at, plan, review

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.entry_id,
            "revision": self.latest.revision,
            "recorded_at": self.latest.recorded_at,
            "plan": self.latest.plan,
            "review": self.latest.review,
        }

    def __rich__(self) -> Any:
        from rich.text import Text

        head = f"# entry {self.entry_id}, {self.kind} plan revision {self.latest.revision} "
        head += f"({self.latest.recorded_at})\n"
        return Text(head + json.dumps(self.latest.plan, indent=2))


def show_plan(
    ledger: Any,
    entry_id: int,
    plan: Any = None,
    *,
    pilot_a: Any = None,
    pilot_b: Any = None,
    **changes: Any,
) -> PlanRecord | SealedPlanRecord:
    """Entry ``entry_id``'s plan; given ``plan`` or ``changes``, a new revision of it is sealed
    first (:func:`labcoat.verdicts.judge.revise_plan`). A plan of another kind (a design) is
    shown as it was sealed."""
    stored = ledger.plans(entry_id)
    kind = kind_of(stored[-1].plan) if stored else None
    if kind is not None and plan is None and not changes:
        return SealedPlanRecord(entry_id, kind, stored[-1])
    if plan is not None or changes:
        revise_plan(ledger, entry_id, plan, pilot_a=pilot_a, pilot_b=pilot_b, **changes)
    history = plan_history(ledger, entry_id)
    if not history:
        raise InputError(
            f"entry {entry_id}: has no plan; give --plan FILE or --plan-field KEY=VALUE"
        )
    return PlanRecord(entry_id, history[-1], plan_review(ledger, entry_id))


__all__ = ["PlanRecord", "SealedPlanRecord", "register_entry", "show_plan"]
