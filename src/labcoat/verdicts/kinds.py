"""Plans of another kind than a comparison of two arms, and the engine that judges each.

A comparison's sealed plan (:class:`labcoat.Plan`) has no ``kind``; a plan that names one (a
design of several factors: ``"design"``) is registered, read and judged by its own engine,
through the functions this table names. The ledger stores every kind the same way.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

#: plan kind -> what registers a plan of that kind, and what judges an entry sealed with one
JUDGES: dict[str, dict[str, str]] = {
    "design": {
        "register": "labcoat.design.judge:register",
        "verdict": "labcoat.design.judge:verdict",
    },
}


def kind_of(plan: Any) -> str | None:
    """The kind of a plan object or of a stored plan (plain JSON); None for a comparison."""
    kind = plan.get("kind") if isinstance(plan, Mapping) else getattr(plan, "kind", None)
    return kind if isinstance(kind, str) and kind in JUDGES else None


def judge_of(kind: str, what: str) -> Callable[..., Any]:
    from labcoat.result import load

    return load(JUDGES[kind][what])


__all__ = ["JUDGES", "judge_of", "kind_of"]
