"""A release gate: may the new model replace the old one?

Non-inferiority, as regulators test drugs: the new model passes when the whole interval of
``new - old`` lies above ``-margin`` (it is not worse by more than the margin), fails when the
whole interval lies below ``-margin``, and otherwise the data cannot tell; then the gate says
roughly how many more questions would decide, if the difference stays where it is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from labcoat._validation import BOOL, PROBABILITY, Interval, OneOf, renamed, validate_params
from labcoat.stats._results import ConfidenceInterval, StatsResult
from labcoat.stats.compare import CompareResult, compare
from labcoat.stats.mean import FORMULAS

#: exit codes of ``labcoat stats gate`` (2 is bad input and 3 a labcoat bug, as everywhere)
EXIT_CODES = {"ALLOW": 0, "REJECT": 1, "INCONCLUSIVE": 4}


@dataclass(frozen=True)
class GateResult(StatsResult):
    """``decision`` (ALLOW, REJECT or INCONCLUSIVE) on ``diff = new - old`` and its ``ci``.

    ``more_items`` estimates the further questions that would shrink the interval enough to
    decide if the difference stayed at ``diff`` (None once decided, or when ``diff`` sits
    exactly on ``-margin``).
    """

    KIND = "stats.gate"

    view = "labcoat.stats.view:gate_view"
    title = "Release gate"

    decision: str
    diff: float
    ci: ConfidenceInterval
    margin: float
    more_items: int | None
    comparison: CompareResult
    notes: tuple[str, ...] = field(default=())

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.decision]

    def to_dict(self) -> dict[str, Any]:
        return {
            "decision": self.decision,
            "diff": self.diff,
            "ci": list(self.ci),
            "margin": self.margin,
            "more_items": self.more_items,
            "n": self.comparison.n,
            "se": self.comparison.se,
            "pvalue": self.comparison.pvalue,
            "level": self.comparison.level,
            "mde": self.comparison.mde,
            "n_dropped_new": self.comparison.n_dropped_a,
            "n_dropped_old": self.comparison.n_dropped_b,
            "warnings": list(self.notes),
        }


@renamed(confidence="level")
@validate_params(
    {
        "margin": Interval(float, 0.0),
        "level": PROBABILITY,
        "formula": OneOf(FORMULAS),
        "strict": BOOL,
    }
)
def gate(
    new: Any,
    old: Any,
    margin: float,
    cluster: Any = None,
    level: float = 0.95,
    *,
    ids_new: Any = None,
    ids_old: Any = None,
    formula: str = "cr1",
    strict: bool = False,
) -> GateResult:
    """Decide whether ``new`` is not worse than ``old`` by more than ``margin`` (paired)."""
    res = compare(
        new, old, cluster, level, ids_a=ids_new, ids_b=ids_old, formula=formula, strict=strict
    )
    ci = res.ci
    if ci.low > -margin:
        decision, more = "ALLOW", None
    elif ci.high < -margin:
        decision, more = "REJECT", None
    else:
        decision, more = "INCONCLUSIVE", _more_items(res, ci, margin)
    notes = [
        w.replace("only in A", "only in NEW").replace("only in B", "only in OLD") for w in res.notes
    ]
    if decision == "INCONCLUSIVE":
        if more is None:
            notes.append(
                "the difference sits on the margin: no number of questions is sure to decide"
            )
        else:
            notes.append(
                f"about {more} more questions would decide, if the difference stays at "
                f"{res.diff:+.3g}"
            )
    return GateResult(decision, res.diff, ci, margin, more, res, tuple(notes))


def _more_items(res: CompareResult, ci: ConfidenceInterval, margin: float) -> int | None:
    """Questions to add so the half-width falls below the distance from ``diff`` to ``-margin``.

    The standard error shrinks as ``1 / sqrt(n)``, so ``n' = n * (half / gap)^2``.
    """
    gap = abs(res.diff + margin)
    if gap == 0:
        return None
    half = (ci.high - ci.low) / 2
    needed = res.n * (half / gap) ** 2
    return max(1, math.ceil(needed - res.n))
