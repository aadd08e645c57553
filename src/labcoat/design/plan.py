"""A design registered as a hypothesis' plan: the factors, the runs, the effects to estimate.

A :class:`DesignPlan` is what :meth:`labcoat.design.Design.to_plan` returns and what the ledger
seals (as plain JSON, beside the entry, in the same chain as a comparison's
:class:`labcoat.Plan`): the factors and their levels, one replicate's coded runs (the table
itself, so the design the verdict rebuilds is the one that was sealed, whatever pyDOE's search
finds later), the seeds, the planned and needed effects, the metric,
the noise the power was computed at and where that noise came from. Its ``kind`` is
``"design"``: :mod:`labcoat.verdicts` registers it as it is and hands its verdict to
:func:`labcoat.design.verdict`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Mapping

from labcoat._validation import PROBABILITY
from labcoat.errors import InputError
from labcoat.findings import Finding

#: ``kind`` of a sealed design plan (a comparison plan has none)
KIND = "design"


@dataclass(frozen=True)
class DesignPlan:
    """A design sealed before its runs, and the metric its verdict reads."""

    KIND: ClassVar[str] = KIND

    metric: str
    factors: dict[str, list[Any]]
    table: str
    coded: list[list[int]]
    seeds: int
    effects: list[str]
    needed: list[str]
    level: float = 0.95
    blocks: str | None = "seed"
    orders: int | None = None
    noise: float | None = None
    noise_source: str | None = None
    effect_size: float | None = None
    alpha: float = 0.05
    power: float = 0.8
    seed: int = 0
    kind: str = KIND
    review_findings: tuple[Finding, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.factors, (list, tuple)):  # as sealed: [[name, [low, high]], ...]
            try:
                object.__setattr__(self, "factors", {str(n): list(v) for n, v in self.factors})
            except (TypeError, ValueError):
                raise InputError(
                    "design plan: `factors` must be [[name, [low, high]], ...]"
                ) from None
        if not isinstance(self.metric, str) or not self.metric.strip():
            raise InputError(f"design plan: `metric` must name the metric; got {self.metric!r}")
        PROBABILITY.check(self.level, "level")
        if self.kind != KIND:
            raise InputError(f"design plan: kind must be {KIND!r}; got {self.kind!r}")

    @classmethod
    def of(cls, design: Any, *, metric: str, level: float = 0.95) -> "DesignPlan":
        """The plan of ``design`` (a :class:`labcoat.design.Design`), read by ``metric``."""
        spec = design.to_spec()
        return cls(
            metric=metric,
            factors=spec["factors"],
            table=design.kind,
            coded=design.coded.astype(int).tolist(),
            seeds=design.seeds,
            effects=spec["effects"],
            needed=spec["needed"],
            level=level,
            blocks=spec["blocks"],
            orders=spec["orders"],
            noise=spec["noise"],
            noise_source=design.noise_source,
            effect_size=spec["effect_size"],
            alpha=spec["alpha"],
            power=spec["power"],
            seed=spec["seed"],
            review_findings=tuple(design.findings),
        )

    def review(self) -> list[Finding]:
        """The design's checks when the plan was made (empty for a plan read back from the
        ledger: :func:`labcoat.design.designs.rebuild` runs them again)."""
        return list(self.review_findings)

    @property
    def n_runs(self) -> int:
        return len(self.coded) * self.seeds

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON; the factors as ``[name, [low, high]]`` pairs, since the table's columns
        follow their order and a stored mapping's keys may come back sorted."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "review_findings"}
        out["factors"] = [[name, list(levels)] for name, levels in self.factors.items()]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "sealed plan") -> "DesignPlan":
        if not isinstance(data, Mapping) or data.get("kind") != KIND:
            raise InputError(f"{source}: not a design plan (its kind is not {KIND!r})")
        known = {f.name for f in fields(cls)} - {"review_findings"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise InputError(f"{source}: unknown design plan field {unknown[0]!r}")
        try:
            return cls(**dict(data))
        except TypeError as exc:
            raise InputError(f"{source}: {exc}") from None


def is_design_plan(data: Any) -> bool:
    """Whether a stored plan (plain JSON) is a design's."""
    return isinstance(data, Mapping) and data.get("kind") == KIND


__all__ = ["KIND", "DesignPlan", "is_design_plan"]
