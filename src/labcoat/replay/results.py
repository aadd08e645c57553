"""What ``labcoat replay`` and ``labcoat divergence`` return, and the checks behind their
findings."""

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


@CHECKS.check(
    "replay.ranks",
    falsifies="the ranks of a distributed run hold the same replicated parameters",
    predicts="after every step, every rank's copy of every replicated parameter (all but "
    "tensor-parallel and DTensor shards) is bit-identical to the others'",
    applies=lambda r: None if r.tensors else "the run records no replicated parameters",
)
def _ranks(result: "RankDiffResult"):
    f = result.first
    if f is None:
        replayed = result.replayed
        extra = (
            f" and steps {replayed['from']}..{replayed['to']} replayed"
            if replayed is not None
            else ""
        )
        return passed(
            f"{result.tensors} replicated tensors agree on all {result.world_size} ranks at "
            f"{len(result.checkpoints)} checkpoints{extra}",
            checkpoints=len(result.checkpoints),
        )
    who = (
        f"rank {f['rank']} disagrees with ranks {', '.join(map(str, f['agree']))}"
        if f["majority"]
        else f"rank {f['rank']} differs from rank {f['agree'][0]} (no majority says which copy "
        "drifted)"
    )
    if f.get("step") is None:
        where = f"between checkpoints {f['between'][0]} and {f['between'][1]}"
    elif f.get("when") == "before":
        where = f"before step {f['step']}"
    else:
        where = f"after step {f['step']}"
    return failed(f"{where}: {who} on {f['tensor']}", **f)


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


@dataclass
class GroupReplayResult(Result):
    """A distributed run's window replayed on every rank together: each rank's
    :class:`ReplayResult`, checked against that rank's recording."""

    KIND: ClassVar[str] = "replay.group"

    run: str
    ranks: list[ReplayResult]

    engine: ClassVar[str] = "replay"
    view: ClassVar[str | None] = "labcoat.replay.view:group_view"
    section: ClassVar[str | None] = "labcoat.report.sections.replay:group_section"
    title: ClassVar[str] = "Replay (every rank)"

    @property
    def from_step(self) -> int:
        return self.ranks[0].from_step

    @property
    def to_step(self) -> int:
        return self.ranks[0].to_step

    @property
    def first_mismatch(self) -> dict[str, Any] | None:
        """The earliest mismatch on any rank, with its rank."""
        found = [
            {"rank": r, **res.first_mismatch}
            for r, res in enumerate(self.ranks)
            if res.first_mismatch is not None
        ]
        return min(found, key=lambda m: (m["step"], m["rank"])) if found else None

    @property
    def findings(self) -> list[Finding]:
        import dataclasses

        return [
            dataclasses.replace(f, rank=r, message=f"rank {r}: {f.message}")
            for r, res in enumerate(self.ranks)
            for f in res.findings
        ]

    def to_dict(self) -> dict[str, Any]:
        from labcoat._jsonable import jsonable

        return jsonable(
            {
                "run": self.run,
                "world_size": len(self.ranks),
                "from": self.from_step,
                "to": self.to_step,
                "checkpoint": self.ranks[0].checkpoint,
                "first_mismatch": self.first_mismatch,
                "ranks": [{"rank": r, **res.to_dict()} for r, res in enumerate(self.ranks)],
                "findings": [f.to_dict() for f in self.findings],
                "ok": self.ok,
            },
            max_items=10**9,
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "GroupReplayResult":
        """The group again from its ``to_dict()``: each rank's replay read back as one."""
        from labcoat.result import check_kind

        check_kind(cls, data)
        ranks = [{k: v for k, v in r.items() if k != "rank"} for r in data["ranks"]]
        return cls(data["run"], [ReplayResult.from_dict(r) for r in ranks])


@dataclass
class RankDiffResult(Result):
    """The ranks of one distributed run compared: where their replicated parameters first
    differ (the step, the tensor, the rank), from the checkpoints' hashes and a replay of the
    stretch before the first checkpoint that differs."""

    KIND: ClassVar[str] = "replay.ranks"

    run: str
    world_size: int
    tensors: int
    checkpoints: list[int]
    replayed: dict[str, Any] | None
    first: dict[str, Any] | None

    engine: ClassVar[str] = "replay"
    view: ClassVar[str | None] = "labcoat.replay.view:rank_diff_view"
    section: ClassVar[str | None] = "labcoat.report.sections.replay:rank_diff_section"
    title: ClassVar[str] = "Rank diff"

    @property
    def findings(self) -> list[Finding]:
        return [CHECKS["replay.ranks"].evaluate(self)]

    def to_dict(self) -> dict[str, Any]:
        from labcoat._jsonable import jsonable

        return jsonable(
            {
                "run": self.run,
                "world_size": self.world_size,
                "tensors": self.tensors,
                "checkpoints": self.checkpoints,
                "replayed": self.replayed,
                "first": self.first,
                "ok": self.ok,
            },
            max_items=10**9,
        )


__all__ = ["CHECKS", "DiffResult", "GroupReplayResult", "RankDiffResult", "ReplayResult"]
