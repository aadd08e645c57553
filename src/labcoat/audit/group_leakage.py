"""Group leakage: the same patient, hospital, speaker or source document on both sides of a
split, so a model can score by recognising the group rather than learning the task."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from labcoat._groups import group_ids
from labcoat.audit.checks import AuditResult, check
from labcoat.findings import Outcome, failed, passed
from labcoat.result import check_kind


@dataclass(frozen=True)
class SharedGroup:
    group: Any
    n_a: int  # rows of the first split in this group
    n_b: int

    def to_dict(self) -> dict[str, Any]:
        return {"group": self.group, "n_a": self.n_a, "n_b": self.n_b}


@dataclass
class SharedGroups(AuditResult):
    """Group ids present in both splits, most rows first."""

    KIND = "audit.groups"

    shared: list[SharedGroup]
    groups_a: int
    groups_b: int
    rows_a: int
    rows_b: int

    CHECKS = ("audit.groups",)

    @property
    def n_shared(self) -> int:
        return len(self.shared)

    @property
    def rows_b_leaked(self) -> int:
        return sum(g.n_b for g in self.shared)

    def to_dict(self) -> dict[str, Any]:
        return {
            "shared": [g.to_dict() for g in self.shared],
            "n_shared": self.n_shared,
            "groups_a": self.groups_a,
            "groups_b": self.groups_b,
            "rows_a": self.rows_a,
            "rows_b": self.rows_b,
            "findings": [f.to_dict() for f in self.findings],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "SharedGroups":
        """The result again from its ``to_dict()``, which keeps all of it."""
        check_kind(cls, data)
        counts = (data["groups_a"], data["groups_b"], data["rows_a"], data["rows_b"])
        return cls([SharedGroup(**g) for g in data["shared"]], *counts)


@check(
    "audit.groups",
    falsifies="the split keeps each group (patient, site, source) on one side",
    predicts="no group id appears in both splits",
)
def _groups_outcome(result: SharedGroups) -> Outcome:
    evidence = {
        "shared": result.n_shared,
        "groups_b": result.groups_b,
        "rows_b_in_shared_groups": result.rows_b_leaked,
        "rows_b": result.rows_b,
        "first": [g.to_dict() for g in result.shared[:10]],
    }
    if result.shared:
        return failed(
            f"{result.n_shared} of {result.groups_b} groups of the second split also appear in "
            "the first "
            f"({result.rows_b_leaked} of {result.rows_b} rows); split by group (GroupKFold, "
            "GroupShuffleSplit)",
            **evidence,
        )
    return passed(
        f"no group is on both sides ({result.groups_a} vs {result.groups_b} groups)", **evidence
    )


def groups(
    train_groups: Sequence[Any], test_groups: Sequence[Any], *, ledger: Any = None
) -> SharedGroups:
    """Group ids found in both ``train_groups`` and ``test_groups`` (one id per row), with row
    counts on each side. Ids compare as text, so ``1`` read from JSON matches ``"1"`` from CSV."""
    a = group_ids(train_groups, "train_groups")
    b = group_ids(test_groups, "test_groups")
    count_a, count_b = Counter(a), Counter(b)
    both = set(count_a) & set(count_b)
    shared = sorted(
        (SharedGroup(g, count_a[g], count_b[g]) for g in both),
        key=lambda s: (-s.n_b, -s.n_a, str(s.group)),
    )
    result = SharedGroups(shared, len(count_a), len(count_b), len(a), len(b))
    if ledger is not False:
        result.record(ledger)
    return result
