"""labcoat's designs with several interventions: tables that can attribute each effect, analyses
that do, and refusals when they cannot.

``labcoat.design(factors={...})`` (also ``labcoat.design.design``) returns a
:class:`~labcoat.design.designs.Design`: the runs, what they alias (in words), the resolution
and each planned effect's power; :func:`analyse` estimates the effects from the runs' results;
:func:`recommend` finds the smallest design that separates the effects at a power. Tables come
from pyDOE; the analysis is statsmodels' OLS with Holm-adjusted tests. On a ledger,
:func:`register` seals a design as a hypothesis' plan before any run and :func:`verdict` judges
the runs tagged with its factor levels (``labcoat run --factor lr=high``).
"""

from __future__ import annotations

import sys
import types
from typing import Any

from labcoat._lazy import lazy

#: public name -> "module:attribute", imported on first access
_LAZY: dict[str, str] = {
    "design": "labcoat.design.designs:design",
    "Design": "labcoat.design.designs:Design",
    "recommend": "labcoat.design.designs:recommend",
    "analyse": "labcoat.design.designs:analyse",
    "DesignAnalysis": "labcoat.design.analysis:DesignAnalysis",
    "CHECKS": "labcoat.design.checks:CHECKS",
    "read_factors": "labcoat.design.spec:read_factors",
    "DesignPlan": "labcoat.design.plan:DesignPlan",
    "DesignVerdict": "labcoat.design.verdict_result:DesignVerdict",
    "register": "labcoat.design.judge:register",
    "verdict": "labcoat.design.judge:verdict",
    "ledger_noise": "labcoat.design.noise:ledger_noise",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy("labcoat.design", _LAZY)


class _CallableModule(types.ModuleType):
    """``labcoat.design`` is both this package and the function that builds a design (as
    ``labcoat.watch`` is), so ``labcoat.design(factors=...)`` works whichever was imported."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return __getattr__("design")(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
