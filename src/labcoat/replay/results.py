"""What ``labcoat replay`` and ``labcoat diff`` return, and the checks behind their findings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

from labcoat.findings import CheckRegistry, Finding, failed, passed, warned
from labcoat.result import Result

CHECKS = CheckRegistry("replay", ["replay"])


@CHECKS.check(
    "replay.exact",
    falsifies="the recorded run can be replayed exactly from its checkpoints",
    predicts="every value the run logged in the window comes back identical (or within the "
    "stated tolerance) when the window is replayed",
)
def _exact(result: "ReplayResult"):
    m = result.first_mismatch
    tol = result.tolerance
    how = "bit-identical" if not (tol.get("rtol") or tol.get("atol")) else f"within {tol}"
    if m is None:
        n = sum(len(s["recorded"]) for s in result.steps)
        return passed(
            f"steps {result.from_step}..{result.to_step} replayed {how} ({n} logged values)",
            checkpoint=result.checkpoint,
        )
    return failed(
        f"step {m['step']}: {m['name']} was {m['recorded']!r} when recorded, {m['replayed']!r} "
        "replayed; something in the run is not reproducible (or the script changed)",
        **m,
    )


@CHECKS.check(
    "replay.finite",
    falsifies="every module's output stays finite over the replayed window",
    predicts="no module output holds a NaN or an Inf",
    applies=lambda r: None if "activations" in r.probes else "the activations probe was not run",
)
def _finite(result: "ReplayResult"):
    first = result.probes["activations"].get("first_nonfinite")
    if first is None:
        return passed("every module's output stayed finite")
    return failed(
        f"step {first['step']}: module {first['module'] or '(the model)'!r} is the first whose "
        "output is not finite",
        **first,
    )


@CHECKS.check(
    "replay.diverge",
    falsifies="two runs with the same provenance log the same values",
    predicts="a run and its rerun (same code, config, data, seeds) never diverge",
    severity="fail",
)
def _diverge(result: "DiffResult"):
    d = result.first_divergence
    if d is None:
        return passed("the logged values never diverge", steps_compared=result.steps_compared)
    where = f"step {d['step']}: {d['name']} is {d['a']!r} in A, {d['b']!r} in B"
    if result.provenance:
        sections: dict[str, list[str]] = {}
        for row in result.provenance:
            sections.setdefault(row["section"], []).append(str(row["key"]))
        named = "; ".join(
            f"{sec}: {', '.join(keys[:3])}{'…' if len(keys) > 3 else ''}"
            for sec, keys in sections.items()
        )
        return warned(f"{where}; the provenance differs too ({named})", **d)
    return failed(f"{where} although the provenance is the same: nondeterminism", **d)


@dataclass
class ReplayResult(Result):
    """A replayed window: what was logged then and now, the first mismatch, hindsight values
    and the probes' measurements."""

    KIND = "replay.replay"

    run: str
    from_step: int
    to_step: int
    checkpoint: int
    steps: list[dict[str, Any]]
    first_mismatch: dict[str, Any] | None
    new: dict[str, list[list[Any]]]
    probes: dict[str, Any]
    tolerance: dict[str, float] = field(default_factory=dict)
    segments: list[dict[str, int]] = field(default_factory=list)
    command: list[str] = field(default_factory=list)
    #: the exception that ended the replay early, as the script raised it (a crashed run's end)
    raised: str | None = None

    engine: ClassVar[str] = "replay"
    view: ClassVar[str | None] = "labcoat.replay.view:replay_view"
    section: ClassVar[str | None] = "labcoat.report.sections.replay:replay_section"
    title: ClassVar[str] = "Replay"

    @property
    def exact(self) -> bool:
        return self.first_mismatch is None

    @property
    def findings(self) -> list[Finding]:
        out = [CHECKS["replay.exact"].evaluate(self)]
        finite = CHECKS["replay.finite"].evaluate(self)
        if finite.status != "skip":
            out.append(finite)
        return out

    def to_dict(self) -> dict[str, Any]:
        from labcoat._jsonable import jsonable

        return jsonable(
            {
                "run": self.run,
                "from": self.from_step,
                "to": self.to_step,
                "checkpoint": self.checkpoint,
                "steps": self.steps,
                "first_mismatch": self.first_mismatch,
                "new": self.new,
                "probes": self.probes,
                "tolerance": self.tolerance,
                "segments": self.segments,
                "raised": self.raised,
                "command": self.command,
                "findings": [f.to_dict() for f in self.findings],
                "ok": self.ok,
            },
            max_items=10**9,
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ReplayResult":
        """The replay ``to_dict()`` gave, rebuilt (it holds every field)."""
        from labcoat.result import check_kind

        check_kind(cls, data)
        return cls(
            data["run"],
            data["from"],
            data["to"],
            data["checkpoint"],
            data["steps"],
            data["first_mismatch"],
            data["new"],
            data["probes"],
            data.get("tolerance") or {},
            data.get("segments") or [],
            data.get("command") or [],
            data.get("raised"),
        )


@dataclass
class DiffResult(Result):
    """Two recorded runs compared: provenance, the first divergence of their logged values and,
    with bisection, the first module whose activations differ there."""

    KIND = "replay.diff"

    a: str
    b: str
    provenance: list[dict[str, Any]]
    first_divergence: dict[str, Any] | None
    bisect: dict[str, Any] | None = None
    steps_compared: int = 0
    tolerance: dict[str, float] = field(default_factory=dict)
    #: the names compared (``--only``), and their values side by side: name -> [[step, a, b]]
    only: list[str] | None = None
    values: dict[str, list[list[Any]]] | None = None

    engine: ClassVar[str] = "replay"
    view: ClassVar[str | None] = "labcoat.replay.view:diff_view"
    section: ClassVar[str | None] = "labcoat.report.sections.replay:diff_section"
    title: ClassVar[str] = "Run diff"

    @property
    def findings(self) -> list[Finding]:
        return [CHECKS["replay.diverge"].evaluate(self)]

    def to_dict(self) -> dict[str, Any]:
        from labcoat._jsonable import jsonable

        return jsonable(
            {
                "a": self.a,
                "b": self.b,
                "provenance": self.provenance,
                "first_divergence": self.first_divergence,
                "bisect": self.bisect,
                "steps_compared": self.steps_compared,
                "tolerance": self.tolerance,
                "only": self.only,
                "values": self.values,
                "ok": self.ok,
            },
            max_items=10**9,
        )


__all__ = ["CHECKS", "DiffResult", "ReplayResult"]
