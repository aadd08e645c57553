"""``labcoat replay``: re-run a stretch of a recorded run and check that it is the same run.

The recorded command (the script as it is now) runs again in a subprocess, with
``LABCOAT_REPLAY`` pointing at a plan: the checkpoint at or before ``from_step``, the last step
``to_step``, the probes and where to write. Inside it ``labcoat.replayable`` restores the
checkpoint, skips the loops' earlier iterations, runs the window and writes what was logged.
This side compares every value the run logged with the replay's: the first that differs is
``first_mismatch``; names the run never logged are hindsight values (``new``).

``n_jobs`` splits the window at checkpoints into segments replayed in parallel (processes, or
Ray tasks with ``engine="ray"``).
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

from labcoat.errors import InputError
from labcoat.replay.child import ReplayFailed as ReplayFailed
from labcoat.replay.child import run_child
from labcoat.replay.probes import check_probes
from labcoat.replay.runs import RecordedRun, open_run

#: what ``engine`` may be
ENGINES = ("process", "ray")


def _int(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{name}: expected a step number; got {value!r}")
    return value


def plan_window(run: RecordedRun, from_step: int | None, to_step: int | None) -> tuple[int, int]:
    last = run.last_step
    start = 0 if from_step is None else from_step
    end = last if to_step is None else to_step
    if start < 0 or start > last:
        raise InputError(
            f"--from: run {run.id} recorded steps 0..{last}; got {start}; pick a step in that range"
        )
    if end < start or end > last:
        raise InputError(
            f"--to: run {run.id} recorded steps 0..{last} and --from is {start}; got {end}; pick "
            f"a step in {start}..{last}"
        )
    return start, end


def checkpoint_for(run: RecordedRun, step: int) -> int:
    cps = run.checkpoints()
    before = [c for c in cps if c <= step]
    if not before:
        first = f"the first is at step {cps[0]}" if cps else "it has none"
        raise InputError(
            f"--from: run {run.id} has no checkpoint at or before step {step} ({first}); pass a "
            "later --from"
        )
    return before[-1]


def segments(run: RecordedRun, start: int, end: int, n_jobs: int) -> list[tuple[int, int, int]]:
    """(checkpoint, first step, last step) of each segment; split at checkpoints."""
    first_cp = checkpoint_for(run, start)
    inside = [c for c in run.checkpoints() if start < c <= end]
    if n_jobs <= 1 or not inside:
        return [(first_cp, start, end)]
    cuts = [inside[round(i * len(inside) / n_jobs) - 1] for i in range(1, n_jobs)]
    cuts = sorted(set(c for c in cuts if start < c <= end))
    out, lo, cp = [], start, first_cp
    for c in cuts:
        out.append((cp, lo, c - 1))
        lo, cp = c, c
    out.append((cp, lo, end))
    return out


def same(a: Any, b: Any, rtol: float, atol: float) -> bool:
    """Exact equality (NaN equals NaN), or within ``rtol``/``atol`` for numbers."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y, rtol, atol) for x, y in zip(a, b))
    numbers = (int, float)
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if not (isinstance(a, numbers) and isinstance(b, numbers)):
        return a == b
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if a == b:
        return True
    return bool(rtol or atol) and math.isclose(a, b, rel_tol=rtol, abs_tol=atol)


def by_step(records: list[dict[str, Any]]) -> dict[int, dict[str, list[Any]]]:
    """step -> name -> the values logged under that name at that step, in order."""
    out: dict[int, dict[str, list[Any]]] = {}
    for r in sorted(records, key=lambda r: r["seq"]):
        names = out.setdefault(int(r["step"]), {})
        for k, v in r["values"].items():
            names.setdefault(k, []).append(v)
    return out


def first_difference(
    a: dict[int, dict[str, list[Any]]],
    b: dict[int, dict[str, list[Any]]],
    steps: Sequence[int],
    rtol: float,
    atol: float,
    *,
    only_common: bool = False,
) -> dict[str, Any] | None:
    """The first (step, name) whose values differ between ``a`` and ``b``."""
    for step in steps:
        left, right = a.get(step, {}), b.get(step, {})
        for name in list(left) + [n for n in right if n not in left]:
            if only_common and (name not in left or name not in right):
                continue
            if name not in left:
                continue  # a name only the replay logs is hindsight, not a mismatch
            xs, ys = left.get(name, []), right.get(name, [])
            for i in range(max(len(xs), len(ys))):
                x = xs[i] if i < len(xs) else None
                y = ys[i] if i < len(ys) else None
                if not same(x, y, rtol, atol):
                    return {"step": step, "name": name, "a": x, "b": y}
    return None


def _merge_probes(parts: list[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for part in parts:
        for name, data in part.items():
            into = merged.setdefault(name, {})
            for key, value in data.items():
                if key == "steps":
                    into.setdefault("steps", {}).update({int(k): v for k, v in value.items()})
                elif key == "first_nonfinite":
                    now = into.get(key)
                    if value is not None and (now is None or value["step"] < now["step"]):
                        into[key] = value
                    else:
                        into.setdefault(key, now)
                elif key == "alerts":
                    into.setdefault("alerts", []).extend(value)
                else:
                    into[key] = value
    return merged


def replay(
    run: str | os.PathLike[str] | RecordedRun,
    *,
    from_step: int | None = None,
    to_step: int | None = None,
    n_jobs: int = 1,
    probes: Sequence[str] = (),
    engine: str = "process",
    rtol: float = 0.0,
    atol: float = 0.0,
    timeout: float | None = None,
    ledger: Any = False,
):
    """Replay steps ``from_step``..``to_step`` of a recorded run; returns a
    :class:`~labcoat.replay.results.ReplayResult`. ``ledger``: where its findings are recorded
    (``False``, the default here: nowhere; ``None``: the project's ledger if it exists)."""
    from labcoat._validation import OneOf, check_int
    from labcoat.replay.ranks import find_group

    from_step, to_step = _int(from_step, "--from"), _int(to_step, "--to")
    n_jobs = check_int(n_jobs, "n_jobs", minimum=1)
    engine = OneOf(ENGINES).check(engine, "engine")
    probes = check_probes(probes)
    for value, name in ((rtol, "rtol"), (atol, "atol")):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
            raise InputError(f"{name}: expected a tolerance >= 0; got {value!r}")
    group = find_group(run)
    if group is not None:  # a distributed run: every rank replays, together
        return replay_group(
            group,
            from_step=from_step,
            to_step=to_step,
            n_jobs=n_jobs,
            probes=probes,
            engine=engine,
            rtol=rtol,
            atol=atol,
            timeout=timeout,
            ledger=ledger,
        )
    recorded = run if isinstance(run, RecordedRun) else open_run(run)
    if int(recorded.manifest.get("version") or 1) < 2:
        import warnings

        warnings.warn(
            f"run {recorded.id} was recorded by labcoat's first recorder, which reseeded every "
            "DataLoader batch; this one does not, so a DataLoader's batches (their order and "
            "augmentation) replay differently: record the run again",
            RuntimeWarning,
            stacklevel=2,
        )
    start, end = plan_window(recorded, from_step, to_step)
    parts = segments(recorded, start, end, n_jobs)
    child = run_child
    if engine == "ray":  # one Ray, started once, runs every segment (labcoat.audit's engine)
        from labcoat.audit.engine import make_engine

        tasks = [(recorded, cp, hi, probes, timeout) for cp, _, hi in parts]
        outs = make_engine("ray", n_jobs=n_jobs).map(run_child, tasks)
    elif len(parts) == 1:
        outs = [child(recorded, parts[0][0], parts[0][2], probes, timeout)]
    else:
        with ThreadPoolExecutor(max_workers=n_jobs) as pool:
            futures = [pool.submit(child, recorded, cp, hi, probes, timeout) for cp, _, hi in parts]
            outs = [f.result() for f in futures]
    result = compare_window(recorded, start, end, parts, outs, rtol, atol)
    result.record(ledger)
    return result


def compare_window(
    recorded: RecordedRun,
    start: int,
    end: int,
    parts: list[tuple[int, int, int]],
    outs: list[dict[str, Any]],
    rtol: float,
    atol: float,
):
    """The :class:`~labcoat.replay.results.ReplayResult` of a replayed window: what each
    segment's process logged (``outs``) against the recording."""
    from labcoat.replay.results import ReplayResult

    replayed: list[dict[str, Any]] = []
    window: list[dict[str, Any]] = []
    for (cp, lo, hi), out in zip(parts, outs):
        replayed += [r for r in out["logs"] if lo <= r["step"] <= hi]
        # what was logged before the checkpoint (at its step, before the loop) is not replayed
        before = int(recorded.store.manifest(cp).get("log_count", 0))
        window += [r for r in recorded.logs if lo <= r["step"] <= hi and r["seq"] >= before]
    rec_steps, rep_steps = by_step(window), by_step(replayed)
    steps = list(range(start, end + 1))
    mismatch = first_difference(rec_steps, rep_steps, steps, rtol, atol)
    known = recorded.names()
    new: dict[str, list[list[Any]]] = {}
    for r in sorted(replayed, key=lambda r: (r["step"], r["seq"])):
        for k, v in r["values"].items():
            if k not in known:
                new.setdefault(k, []).append([r["step"], v])
    rows = []
    for step in steps:
        if step in rec_steps or step in rep_steps:
            rows.append(
                {
                    "step": step,
                    "recorded": {k: v[-1] for k, v in rec_steps.get(step, {}).items()},
                    "replayed": {k: v[-1] for k, v in rep_steps.get(step, {}).items()},
                }
            )
    result = ReplayResult(
        run=recorded.id,
        from_step=start,
        to_step=end,
        checkpoint=parts[0][0],
        steps=rows,
        first_mismatch=None
        if mismatch is None
        else {
            "step": mismatch["step"],
            "name": mismatch["name"],
            "recorded": mismatch["a"],
            "replayed": mismatch["b"],
        },
        new=new,
        probes=_merge_probes([o.get("probes") or {} for o in outs]),
        tolerance={"rtol": rtol, "atol": atol},
        segments=[{"checkpoint": cp, "from": lo, "to": hi} for cp, lo, hi in parts],
        raised=next((o["raised"] for o in outs if o.get("raised")), None),
        command=list(recorded.manifest["command"]),
    )
    return result


def replay_group(
    group: Any,
    *,
    from_step: int | None,
    to_step: int | None,
    n_jobs: int,
    probes: Sequence[str],
    engine: str,
    rtol: float,
    atol: float,
    timeout: float | None,
    ledger: Any,
):
    """Replay steps ``from_step``..``to_step`` of every rank; a
    :class:`~labcoat.replay.results.GroupReplayResult`. Arguments as
    :func:`labcoat.replay.replay` takes them (already checked)."""
    from labcoat.replay.ranks import CommonCheckpoints, run_ranks
    from labcoat.replay.results import GroupReplayResult

    windows = [plan_window(run, from_step, to_step) for run in group.ranks]
    start = max(w[0] for w in windows)
    end = min(w[1] for w in windows)
    if end < start:
        raise InputError(
            f"run {group.id}: its ranks recorded no common steps in the window asked for "
            f"({windows}); pick --from/--to inside every rank's steps"
        )
    shared = CommonCheckpoints(group.ranks[0].dir, group.ranks[0].manifest, group.ranks[0].logs)
    shared.common = group.common_checkpoints()
    parts = segments(shared, start, end, n_jobs)
    per_part = run_ranks(group, parts, list(probes), timeout, engine, n_jobs)
    results = []
    for rank, run in enumerate(group.ranks):
        outs = [part[rank] for part in per_part]
        results.append(compare_window(run, start, end, parts, outs, rtol, atol))
    result = GroupReplayResult(run=group.id, ranks=results)
    result.record(ledger)
    return result
