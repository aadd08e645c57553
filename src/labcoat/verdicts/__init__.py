"""Pre-registered verdicts: a hypothesis carries its planned analysis, and the ledger computes
the verdict.

A :class:`Plan` is written before the results (:mod:`~labcoat.verdicts.plan`); registering it
reviews the design (:func:`review`); :func:`analyse` runs exactly the registered analysis
through :mod:`labcoat.stats` and finds every deviation from the plan in the data
(:mod:`~labcoat.verdicts.deviations`). :meth:`labcoat.Ledger.hypothesis` (``plan=``) seals the
plan into the ledger's hash chain and :meth:`labcoat.Ledger.verdict` records the verdict.
"""

from __future__ import annotations

from labcoat.verdicts import deviations as _deviations  # noqa: F401 - declares its checks
from labcoat.verdicts.deviations import Observation, PlanRevision, PriorVerdict, find_deviations
from labcoat.verdicts.plan import FIELDS, Plan
from labcoat.verdicts.registry import REGISTRY
from labcoat.verdicts.review import ReviewResult, review
from labcoat.verdicts.verdict import EXIT_CODES, VerdictResult, analyse

__all__ = [
    "EXIT_CODES",
    "FIELDS",
    "Observation",
    "Plan",
    "PlanRevision",
    "PriorVerdict",
    "REGISTRY",
    "ReviewResult",
    "VerdictResult",
    "analyse",
    "find_deviations",
    "review",
]
