"""What ``labcoat logs RUN --why`` returns: the failure-indicating lines of a run, as findings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from labcoat.findings import Finding
from labcoat.logs.analysis import Analysis
from labcoat.logs.checks import CHECKS
from labcoat.result import Result

#: the event ``labcoat run`` stores with a run: its :meth:`LogsReport.timeline`
TIMELINE_EVENT = "logs.timeline"


def _public(entry: dict[str, Any] | None, keys: tuple[str, ...]) -> dict[str, Any] | None:
    return None if entry is None else {k: entry.get(k) for k in keys}


@dataclass
class LogsReport(Result):
    """A run's log read for its failure: the first line, its consequences, silent ranks,
    changes of pace, and the findings of the logs checks."""

    run: Any
    analysis: Analysis

    engine: ClassVar[str] = "logs"
    KIND: ClassVar[str] = "logs.report"
    view: ClassVar[str | None] = "labcoat.logs.view:why_view"
    section: ClassVar[str | None] = "labcoat.report.sections.logs:logs_section"
    title: ClassVar[str] = "Logs"

    @property
    def lines(self) -> int:
        return self.analysis.lines

    @property
    def ranks(self) -> list[int]:
        return self.analysis.ranks

    @property
    def first(self) -> dict[str, Any] | None:
        return self.analysis.first

    @property
    def consequences(self) -> list[dict[str, Any]]:
        return self.analysis.consequences

    @property
    def silent_ranks(self) -> list[dict[str, Any]]:
        return self.analysis.silent

    @property
    def changes(self) -> list[dict[str, Any]]:
        return self.analysis.changes

    @property
    def findings(self) -> list[Finding]:
        out = []
        for check in CHECKS:
            finding = check.evaluate(self)
            if finding.status in ("fail", "warn") and self.first is not None:
                finding.rank, finding.step = self.first["rank"], self.first["step"]
            out.append(finding)
        return out

    @property
    def ok(self) -> bool:
        """True when no failure-indicating line was named (a slowed rank counts as named)."""
        return self.first is None and all(f.status != "fail" for f in self.findings)

    def timeline(self) -> dict[str, Any]:
        """What the per-rank timeline draws (:mod:`labcoat.report.sections.logs`), plain data
        that ``labcoat run`` stores with the run as a ``logs.timeline`` event."""
        from labcoat._jsonable import jsonable

        a = self.analysis
        first_seq = None if self.first is None else self.first.get("seq")
        order = sorted(a.per_rank, key=lambda r: (r is None, r if r is not None else 0))
        return jsonable(
            {
                "run": self.run,
                "lines": self.lines,
                "templates": a.templates,
                "first": _public(self.first, ("rank", "node", "step", "time", "line", "why")),
                "consequences": self.consequences,
                "ranks": [{"rank": r, **a.per_rank[r]} for r in order],
                "marks": [
                    {
                        "rank": c.rank,
                        "time": c.time,
                        "step": c.step,
                        "line": c.text[:200],
                        "first": c.seq == first_seq,
                    }
                    for c in a.candidates
                ],
                "silent": [
                    _public(s, ("rank", "last_time", "last_step", "silent_s")) for s in a.silent
                ],
                "changes": [_public(c, ("rank", "step", "time", "what")) for c in a.changes],
            },
            max_items=10**4,
        )

    def to_dict(self) -> dict[str, Any]:
        from labcoat._jsonable import jsonable

        first_keys = ("rank", "node", "step", "time", "line", "template", "why")
        return jsonable(
            {
                "run": self.run,
                "ranks": self.ranks,
                "lines": self.lines,
                "templates": self.analysis.templates,
                "first": _public(self.first, first_keys),
                "consequences": self.consequences,
                "silent_ranks": [
                    _public(s, ("rank", "last_time", "last_step", "silent_s"))
                    for s in self.silent_ranks
                ],
                "changes": [_public(c, ("rank", "step", "what")) for c in self.changes],
                "findings": [f.to_dict() for f in self.findings],
                "ok": self.ok,
            },
            max_items=10**6,
        )


__all__ = ["TIMELINE_EVENT", "LogsReport"]
