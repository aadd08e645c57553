"""The verdict on a registered design: every planned effect, judged by the plan sealed before
the runs, with what the runs did differently from the plan.

The entry's verdict is about the effects the plan names as needed: ``confirmed`` when each is
detected (Holm across the planned effects), ``refuted`` when each is shown smaller than the
plan's smallest effect worth detecting (its interval inside ±``effect_size``), otherwise
``inconclusive``. A needed effect the runs cannot tell apart from another (a bundle, an alias
set) is judged as that set and never confirmed on its own: the first line says so and names
the design that would separate them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from labcoat.findings import Finding
from labcoat.result import Result

#: the keys of one effect in the verdict's JSON
EFFECT_KEYS = ("effect", "estimate", "ci", "pvalue", "pvalue_adjusted", "aliases", "decision")


@dataclass(frozen=True, eq=False)
class DesignVerdict(Result):
    """A registered design's verdict: its analysis, the entry's verdict and the deviations."""

    engine: ClassVar[str] = "design"
    KIND: ClassVar[str] = "design.verdict"
    view: ClassVar[str] = "labcoat.design.view:verdict_view"
    section: ClassVar[str] = "labcoat.report.sections.design:verdict_section"
    title: ClassVar[str] = "Design verdict"

    id: int | None
    verdict: str
    analysis: Any
    plan: Any
    plan_revision: int
    deviations: list[dict[str, Any]]
    reasons: list[str]
    fingerprints: dict[str, str]
    source: str
    findings: list[Finding] = field(default_factory=list)

    @property
    def attributable(self) -> bool:
        """Whether every needed effect was estimated on its own contrast."""
        return not any(len(r["members"]) > 1 for r in self._needed_rows())

    def _needed_rows(self) -> list[dict[str, Any]]:
        needed = set(self.plan.needed)
        return [r for r in self.analysis.effects if needed & set(r["members"])]

    @property
    def headline(self) -> str:
        """The first line: a refusal to attribute where the runs cannot, the verdict, and
        whether the runs deviated from the plan."""
        who = f"#{self.id} " if self.id is not None else ""
        line = f"{who}{self.verdict}"
        if self.deviations:
            kinds = ", ".join(dict.fromkeys(d["kind"] for d in self.deviations))
            line += f", DEVIATING FROM ITS PLAN ({len(self.deviations)}: {kinds})"
        else:
            line += ", by the registered design"
        if not self.attributable:
            merged = [r["effect"] for r in self._needed_rows() if len(r["members"]) > 1]
            return (
                "no single intervention's effect can be attributed: "
                + "; ".join(merged)
                + " moved together in every run, so the verdict is on them together; "
                + (self.analysis.separating or "a design that varies them apart would separate")
                + f". {line}"
            )
        return line

    def summary(self) -> str:
        """One line for the entry's result."""
        shown = "; ".join(
            f"{r['effect']} {r['estimate']:+.4g}"
            + (f" [{r['ci'][0]:+.4g}, {r['ci'][1]:+.4g}]" if r["ci"] else "")
            for r in self._needed_rows()
            if r["estimate"] is not None
        )
        return f"{self.headline}: {self.plan.metric} {shown}, {self.analysis.n_runs} runs"

    def to_dict(self) -> dict[str, Any]:
        a = self.analysis
        return {
            "id": self.id,
            "headline": self.headline,
            "verdict": self.verdict,
            "reasons": self.reasons,
            "metric": self.plan.metric,
            "effects": [
                {k: r[k] for k in EFFECT_KEYS} | {"se": r["se"], "members": r["members"]}
                for r in a.effects
            ],
            "needed": list(self.plan.needed),
            "attributable": self.attributable,
            "separating": a.separating,
            "n": {"runs": a.n_runs, "planned": self.plan.n_runs, "paired": a.n_runs},
            "df": a.df,
            "noise": a.noise,
            "level": a.level,
            "alpha": a.alpha,
            "deviations": self.deviations,
            "plan_revision": self.plan_revision,
            "source": self.source,
            "pvalue": None,
            "fingerprints": dict(self.fingerprints),
            "findings": [f.to_dict() for f in self.findings],
        }

    def record_dict(self) -> dict[str, Any]:
        """What the ledger seals with the verdict."""
        return self.to_dict()


def judge_effect(row: dict[str, Any], effect_size: float | None) -> str:
    """``detected`` (Holm), ``ruled out`` (the interval inside ±``effect_size``) or ``open``."""
    if row["decision"] == "effect":
        return "detected"
    ci = row["ci"]
    if ci is not None and effect_size is not None and -effect_size < ci[0] and ci[1] < effect_size:
        return "ruled out"
    return "open"


def decide(analysis: Any, plan: Any) -> tuple[str, list[str]]:
    """The entry's verdict on the needed effects (an alias set is judged as the set), and
    why, one reason per needed effect."""
    rows = [r for r in analysis.effects if set(plan.needed) & set(r["members"])]
    if analysis.df < 1 or not rows:
        return "inconclusive", ["no residual degrees of freedom: no effect could be tested"]
    judged = [(r, judge_effect(r, plan.effect_size)) for r in rows]
    reasons = [
        f"{r['effect']}: "
        + {
            "detected": f"detected (p_adj {r['pvalue_adjusted']:.3g})",
            "ruled out": f"smaller than {plan.effect_size:g} (its whole interval)",
            "open": "neither detected nor ruled out",
        }[status]
        for r, status in judged
    ]
    statuses = {status for _, status in judged}
    if statuses == {"detected"}:
        return "confirmed", reasons
    if statuses == {"ruled out"}:
        return "refuted", reasons
    return "inconclusive", reasons


__all__ = ["EFFECT_KEYS", "DesignVerdict", "decide", "judge_effect"]
