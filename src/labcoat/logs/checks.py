"""The logs engine's declared checks; each reads a :class:`~labcoat.logs.result.LogsReport`."""

from __future__ import annotations

from typing import Any

from labcoat.findings import CheckRegistry, failed, passed, warned

CHECKS = CheckRegistry("logs", ["logs"])


def _where(first: dict[str, Any]) -> str:
    rank = "the launcher" if first["rank"] is None else f"rank {first['rank']}"
    step = "" if first["step"] is None else f", step {first['step']}"
    return f"{rank}{step}"


@CHECKS.check(
    "logs.first_error",
    falsifies="the run's log holds no failure-indicating line",
    predicts="no new template of the run is an error, a traceback's exception, a timeout, an "
    "out-of-memory or a non-finite value",
)
def _first_error(report: Any):
    first = report.first
    if first is None or first["kinds"] in (["silent"], ["slowed"]):
        return passed(
            f"{report.lines} lines from {len(report.ranks)} ranks: no error, timeout, "
            "out-of-memory or non-finite value outside the background",
            candidates=len(report.analysis.candidates),
        )
    return failed(
        f"{_where(first)}: {first['line']} ({first['why']})",
        **{k: first[k] for k in ("rank", "node", "step", "time", "line", "template")},
        consequences=len(report.consequences),
    )


@CHECKS.check(
    "logs.silent_rank",
    falsifies="every rank keeps writing until the run ends",
    predicts="no rank falls silent while the other ranks go on to report trouble",
    applies=lambda r: None if r.analysis.timed else "the lines carry no times (files only)",
)
def _silent_rank(report: Any):
    silent = report.silent_ranks
    if not silent:
        return passed(f"all {len(report.ranks)} ranks wrote until the end")
    s = silent[0]
    return failed(
        f"rank {s['rank']} went silent after step {s['last_step']} ({s['silent_s']:.1f} s before "
        "the end) while the other ranks reported trouble",
        silent=silent,
    )


@CHECKS.check(
    "logs.rate_change",
    falsifies="every rank keeps the others' pace",
    predicts="no rank starts lagging the other ranks' lines for the same step",
    severity="warn",
    applies=lambda r: None if r.analysis.timed else "the lines carry no times (files only)",
)
def _rate_change(report: Any):
    if not report.changes:
        return passed("no rank started lagging the others")
    c = report.changes[0]
    return warned(c["what"], changes=report.changes)


@CHECKS.check(
    "logs.new_template",
    falsifies="the run writes the warnings earlier healthy runs wrote",
    predicts="every WARNING template of the run was seen in an earlier healthy run",
    severity="warn",
    applies=lambda r: (
        None
        if r.analysis.history_runs
        else "no earlier healthy run of this project has its logs in the ledger"
    ),
)
def _new_template(report: Any):
    new = report.analysis.new_templates
    loud = [t for t in new if t["level"] == "WARNING"]  # errors are logs.first_error's
    if not loud:
        return passed(
            f"{len(new)} templates new against {report.analysis.history_runs} earlier healthy "
            "runs, none of them a warning",
            new=[t["template"] for t in new[:10]],
        )
    return warned(
        f"{len(loud)} warning templates no earlier healthy run wrote, first: {loud[0]['template']}",
        new=[t["template"] for t in loud[:10]],
    )


__all__ = ["CHECKS"]
