"""Pre-registered verdicts: a hypothesis carries its planned analysis, and labcoat computes
the verdict.

A :class:`Plan` is written before the results (:mod:`~labcoat.verdicts.plan`); registering it
reviews the design (:func:`review`); :func:`analyse` runs exactly the registered analysis
through :mod:`labcoat.stats` and finds every deviation from the plan in the data
(:mod:`~labcoat.verdicts.deviations`). On a ledger (:mod:`~labcoat.verdicts.judge`, the one
place a verdict is judged): :func:`register` seals a reviewed plan with a new hypothesis,
:func:`revise_plan` seals a revision and :func:`verdict` judges the entry and records the
verdict. The ledger only stores and chains what these hand it.

(``labcoat.verdicts.verdict`` and ``labcoat.verdicts.review`` are the functions; their modules
are imported as ``from labcoat.verdicts.verdict import ...``.)
"""

from __future__ import annotations

from labcoat.verdicts import deviations as _deviations  # noqa: F401 - declares its checks
from labcoat.verdicts.deviations import (
    DataEvidence,
    Observation,
    PilotOverlap,
    PlanRevision,
    PriorVerdict,
    SealedFingerprints,
    find_deviations,
)
from labcoat.verdicts.judge import (
    current_plan,
    plan_history,
    plan_review,
    register,
    revise_plan,
    verdict,
)
from labcoat.verdicts.plan import FIELDS, Plan
from labcoat.verdicts.registry import REGISTRY
from labcoat.verdicts.review import ReviewResult, review
from labcoat.verdicts.verdict import EXIT_CODES, NOT_HELD, VerdictResult, analyse

__all__ = [
    "DataEvidence",
    "EXIT_CODES",
    "FIELDS",
    "NOT_HELD",
    "Observation",
    "PilotOverlap",
    "Plan",
    "PlanRevision",
    "PriorVerdict",
    "REGISTRY",
    "ReviewResult",
    "SealedFingerprints",
    "VerdictResult",
    "analyse",
    "current_plan",
    "find_deviations",
    "plan_history",
    "plan_review",
    "register",
    "review",
    "revise_plan",
    "verdict",
]
