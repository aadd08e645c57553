"""A design on the ledger: registered as a hypothesis' plan before any run, judged on the runs
tagged with its factor levels.

:func:`register` seals a :class:`~labcoat.design.plan.DesignPlan` with a new hypothesis (its
review is the design's own checks). :func:`verdict` holds the runs to the plan in force when
the first of them started: each run linked to the entry (``labcoat run --for ID --factor
lr=high``), or, when none is linked, each run tagged with the design's factors that started
after the plan was sealed, is a result (the last value it recorded for the plan's metric, an
event of that kind); a results table with the factors' columns can stand in for the runs. What
the runs did differently from the plan is a deviation, and a deviating run is set aside rather
than analysed: a run at a level the design does not have, a repeat or an extra seed (a second
chance at a result), a run from before the plan was sealed, one that failed or recorded no
result. Planned runs that are missing are deviations too; the effects are then estimated on
the runs there are, with the aliasing of those runs. The ledger only stores what this hands it.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any, Mapping, Sequence

from labcoat.design.analysis import result_rows, same_level
from labcoat.design.designs import Design, rebuild
from labcoat.design.plan import DesignPlan, is_design_plan
from labcoat.errors import InputError

_MISSING = object()


def _id(entry: Any) -> int:
    return int(getattr(entry, "id", entry))


def register(
    ledger: Any,
    title: str,
    plan: Any,
    *,
    predict: str | None,
    metric: str | None = None,
    **entry: Any,
) -> Any:
    """Record hypothesis ``title`` with ``plan`` (a :class:`DesignPlan`, or a
    :class:`~labcoat.design.Design` with the ``metric`` its runs record) reviewed and sealed in
    one transaction, before any run. ``entry``: the other fields of
    :meth:`labcoat.Ledger.hypothesis` (tags, experiment, parents, runs). Returns the entry."""
    if isinstance(plan, Design):
        if metric is None:
            raise InputError("register: a Design needs `metric`, the result each run records")
        plan = plan.to_plan(metric)
    elif not isinstance(plan, DesignPlan):
        raise InputError(
            f"register: expected a labcoat Design or its plan (Design.to_plan); got "
            f"{type(plan).__name__}"
        )
    return ledger.hypothesis(
        title,
        predict=predict,
        sealed_plan=plan.to_dict(),
        review=[f.to_dict() for f in plan.review() or rebuild(plan).findings],
        **entry,
    )


def plan_revisions(ledger: Any, entry: Any) -> list[tuple[int, str, DesignPlan]]:
    """(revision, recorded_at, plan) of every sealed revision of a design entry's plan."""
    stored = ledger.plans(_id(entry))
    if not stored:
        raise InputError(f"entry {_id(entry)}: has no registered plan to judge the runs by")
    if not all(is_design_plan(s.plan) for s in stored):
        raise InputError(f"entry {_id(entry)}: its plan is not a design's")
    return [(s.revision, s.recorded_at, DesignPlan.from_dict(s.plan)) for s in stored]


# ---- the runs as results --------------------------------------------------------------------


def _deviation(kind: str, message: str, **where: Any) -> dict[str, Any]:
    return {"kind": kind, "message": message, **where}


def _seed_label(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _ledger_candidates(ledger: Any, entry_id: int, plan: DesignPlan, sealed_at: str):
    """The entry's runs as candidate rows, the deviations of the runs set aside, and when
    the first candidate started (None when there is none)."""
    from labcoat.design.noise import run_results

    linked = set(ledger.entry(entry_id).runs)
    results = run_results(ledger, plan.metric)
    names = set(plan.factors)
    rows, deviations, starts = [], [], []
    for run in ledger.runs():
        if linked:
            if run.id not in linked:
                continue
        elif {k for k in run.factors if k != "seed"} != names:
            continue  # nothing linked: the design's runs are those tagged with its factors
        where = {"run": run.id}
        if not run.factors:
            deviations.append(
                _deviation(
                    "untagged-run",
                    f"run {run.id} is linked to the entry without factor levels",
                    **where,
                )
            )
            continue
        if run.started_at < sealed_at:
            if linked:
                deviations.append(
                    _deviation(
                        "before-plan",
                        f"run {run.id} started before the design was sealed",
                        **where,
                    )
                )
            continue
        if run.status == "running":
            deviations.append(
                _deviation(
                    "unfinished-run",
                    f"run {run.id} has not ended (still running, or died without saying so)",
                    **where,
                )
            )
            continue
        if run.status != "ok":
            deviations.append(_deviation("failed-run", f"run {run.id} ended {run.status}", **where))
            continue
        if run.id not in results:
            deviations.append(
                _deviation(
                    "no-result",
                    f"run {run.id} recorded no {plan.metric!r} (an event of that kind)",
                    **where,
                )
            )
            continue
        seed = run.factors.get("seed", run.seeds.get("seed"))
        row = {k: v for k, v in run.factors.items() if k != "seed"}
        rows.append({**row, "seed": seed, plan.metric: results[run.id], "run": run.id})
        starts.append(run.started_at)
    return rows, deviations, min(starts) if starts else None


def _table_candidates(results: Any, plan: DesignPlan, seed_column: str):
    rows, deviations = [], []
    for i, row in enumerate(result_rows(results)):
        value = row.get(plan.metric)
        try:
            value = float(value)
        except (TypeError, ValueError):
            value = math.nan
        if not math.isfinite(value):
            deviations.append(
                _deviation("no-result", f"row {i + 1} has no finite {plan.metric!r}", row=i + 1)
            )
            continue
        levels = {k: v for k, v in row.items() if k in plan.factors}
        rows.append({**levels, "seed": row.get(seed_column), plan.metric: value, "row": i + 1})
    return rows, deviations


def _level(value: Any, low: Any, high: Any) -> Any:
    if same_level(value, low):
        return low
    if same_level(value, high):
        return high
    if isinstance(value, str) and value.strip().lower() in ("low", "high"):
        return low if value.strip().lower() == "low" else high
    return _MISSING


def screen(candidates: Sequence[Mapping[str, Any]], design: Any, metric: str):
    """The candidate rows the plan can analyse (one per planned run, at its declared levels),
    and a deviation for each row set aside."""
    planned = {
        (tuple(str(run[f]) for f in design.factors), str(run["seed"])) for run in design.runs
    }
    seen: dict[tuple, Any] = {}
    kept, deviations = [], []
    for c in candidates:
        where = {k: c[k] for k in ("run", "row") if k in c}
        label = f"run {c['run']}" if "run" in c else f"row {c.get('row')}"
        unknown = sorted(k for k in c if k not in design.factors and k not in (
            "seed", metric, "run", "row"))  # fmt: skip
        if unknown and "run" in c:
            deviations.append(
                _deviation(
                    "unknown-factor",
                    f"{label} is tagged with {', '.join(unknown)}, which the design does not vary",
                    **where,
                )
            )
        levels, off = {}, []
        for f, (low, high) in design.factors.items():
            value = c.get(f, _MISSING)
            level = _MISSING if value is _MISSING else _level(value, low, high)
            if level is _MISSING:
                off.append(f"{f} = {'(none)' if value is _MISSING else repr(value)}")
            levels[f] = level
        if off:
            deviations.append(
                _deviation(
                    "unplanned-level",
                    f"{label} ran at {', '.join(off)}, not a level of the design",
                    **where,
                )
            )
            continue
        seed = _seed_label(c.get("seed"))
        if seed is None or seed == "":
            if design.seeds > 1:
                deviations.append(
                    _deviation("no-seed", f"{label} does not say which seed it ran", **where)
                )
                continue
            seed = 0
        key = (tuple(str(levels[f]) for f in design.factors), str(seed))
        if key not in planned:
            deviations.append(
                _deviation(
                    "extra-run",
                    f"{label} (seed {seed}) is not a run of the design: set aside",
                    **where,
                )
            )
            continue
        if key in seen:
            deviations.append(
                _deviation(
                    "repeated-run",
                    f"{label} repeats {seen[key]} (same levels and seed): the first is analysed",
                    **where,
                )
            )
            continue
        seen[key] = label
        kept.append({**levels, "seed": seed, metric: float(c[metric]), **where})
    return kept, deviations


def fingerprint(rows: Sequence[Mapping[str, Any]], names: Sequence[str], metric: str) -> str:
    """What the analysed results were: levels, seed and metric of each row, order aside."""
    shown = sorted(
        json.dumps([*(str(r[f]) for f in names), str(r["seed"]), repr(float(r[metric]))])
        for r in rows
    )
    return hashlib.sha256("\n".join(shown).encode()).hexdigest()


# ---- the verdict ------------------------------------------------------------------------------


def judge(
    plan: DesignPlan,
    candidates: Sequence[Mapping[str, Any]],
    *,
    entry_id: int | None = None,
    plan_revision: int = 1,
    deviations: Sequence[Mapping[str, Any]] = (),
    source: str = "results",
    previous: Sequence[Mapping[str, str]] = (),
):
    """The verdict of ``plan`` on candidate rows (factor levels, seed, metric), before it is
    recorded: screened, analysed, decided and checked."""
    from dataclasses import replace

    from labcoat.design.checks import CHECKS
    from labcoat.design.designs import analyse
    from labcoat.design.verdict_result import DesignVerdict, decide
    from labcoat.findings import run_check

    design = rebuild(plan)
    rows, set_aside = screen(candidates, design, plan.metric)
    devs = [*map(dict, deviations), *set_aside]
    if len(rows) < 2:
        raise InputError(
            f"{source}: {len(rows)} of the design's {design.n_runs} runs can be analysed"
            + (f" ({len(devs)} set aside: {devs[0]['message']})" if devs else "")
        )
    analysis = analyse(rows, design=design, metric=plan.metric, level=plan.level)
    for run in analysis.missing_runs:
        shown = ", ".join(f"{f} = {run[f]!r}" for f in design.factors)
        devs.append(
            _deviation(
                "missing-run",
                f"planned run {shown}, seed {run['seed']} has no result",
                planned=run,
            )
        )
    prints = {"results": fingerprint(rows, list(design.factors), plan.metric)}
    changed = [p for p in previous if p.get("results") not in (None, prints["results"])]
    if changed:
        devs.append(
            _deviation(
                "results-changed",
                f"judged {len(changed)} time(s) before on other results: a design is judged "
                "once, on its planned runs",
            )
        )
    verdict, reasons = decide(analysis, plan)
    out = DesignVerdict(
        id=entry_id,
        verdict=verdict,
        analysis=analysis,
        plan=plan,
        plan_revision=plan_revision,
        deviations=devs,
        reasons=reasons,
        fingerprints=prints,
        source=source,
        findings=list(analysis.findings),
    )
    checks = [run_check(c, out) for c in CHECKS.in_layer("verdict")]
    return replace(out, findings=[*out.findings, *checks])


def verdict(
    ledger: Any,
    entry: Any,
    *,
    results: Any = None,
    seed_column: str = "seed",
):
    """Judge design entry ``entry`` by its sealed plan on its runs in the ledger (or on a
    ``results`` table: one row per run with the factors' columns, ``seed_column`` and the
    metric) and record the verdict. Returns a
    :class:`~labcoat.design.verdict_result.DesignVerdict`."""
    entry_id = _id(entry)
    revisions = plan_revisions(ledger, entry_id)
    sealed = revisions[0][1]
    in_force = revisions[-1]
    if results is None:
        source = f"the ledger's runs of entry {entry_id}"
        candidates, devs, first_run = _ledger_candidates(ledger, entry_id, in_force[2], sealed)
        if first_run is not None:  # the plan in force when the first run started
            in_force = [r for r in revisions if r[1] <= first_run][-1:] or [revisions[0]]
            in_force = in_force[0]
            if in_force is not revisions[-1]:
                candidates, devs, _ = _ledger_candidates(ledger, entry_id, in_force[2], sealed)
                devs.append(
                    _deviation(
                        "plan-revised",
                        f"the plan was revised after the first run started; judged by "
                        f"revision {in_force[0]}, the one in force then",
                    )
                )
    else:
        candidates, devs = _table_candidates(results, in_force[2], seed_column)
        source = str(results) if isinstance(results, str) else "results"
    previous = [v.fingerprints for v in ledger.verdicts(entry_id)]
    result = judge(
        in_force[2],
        candidates,
        entry_id=entry_id,
        plan_revision=in_force[0],
        deviations=devs,
        source=source,
        previous=previous,
    )
    ledger.record_verdict(
        entry_id, result.record_dict(), summary=result.summary(), plan_revision=in_force[0]
    )
    return result


__all__ = ["fingerprint", "judge", "plan_revisions", "register", "screen", "verdict"]
