"""``labcoat replay``: re-run a stretch of a recorded run and check that it is the same run.

The recorded command (the script as it is now) runs again in a subprocess, with
``LABCOAT_REPLAY`` pointing at a plan: the checkpoint at or before ``from_step``, the last step
``to_step``, the probes and where to write. Inside it ``labcoat.record`` restores the
checkpoint, skips the loops' earlier iterations, runs the window and writes what was logged.
This side compares every value the run logged with the replay's: the first that differs is
``first_mismatch``; names the run never logged are hindsight values (``new``).

``n_jobs`` splits the window at checkpoints into segments replayed in parallel (processes, or
Ray tasks with ``engine="ray"``).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Sequence

from labcoat.errors import InputError, LabcoatError
from labcoat.replay.probes import check_probes
from labcoat.replay.runs import RecordedRun, open_run

#: what ``engine`` may be
ENGINES = ("process", "ray")


class ReplayFailed(LabcoatError):
    """The replayed script failed for a reason of its own (its stderr's last lines say why)."""


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


def write_plan(
    run: RecordedRun, checkpoint: int, to_step: int, probes: list[str], tmp: Path
) -> tuple[Path, dict[str, str]]:
    """The plan file of one replaying process in ``tmp``: (where it writes, its environment)."""
    from labcoat.replay.record import ENV_REPLAY

    out = Path(tmp) / "out.json"
    plan = Path(tmp) / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "run_dir": str(run.dir.resolve()),
                "checkpoint": checkpoint,
                "to": to_step,
                "probes": probes,
                "out": str(out),
            }
        )
    )
    return out, {**os.environ, ENV_REPLAY: str(plan)}


def run_cwd(run: RecordedRun) -> str:
    cwd = run.manifest.get("cwd") or os.getcwd()
    if not os.path.isdir(cwd):
        raise InputError(f"run {run.id}: its working directory {cwd} no longer exists")
    return cwd


def read_out(run: RecordedRun, out: Path, returncode: int, output: str) -> dict[str, Any]:
    """What the replaying process wrote, or why it wrote nothing."""
    if out.exists():
        result = json.loads(out.read_text())
        if result.get("error"):
            raise InputError(result["error"])
        return result
    tail = " | ".join((output or "").strip().splitlines()[-3:])
    raise ReplayFailed(
        f"run {run.id}: the replayed script exited with code {returncode} before "
        f"labcoat.record wrote anything ({tail or 'no output'}); does it still call "
        "labcoat.record?"
    )


def _run_child(
    run: RecordedRun,
    checkpoint: int,
    to_step: int,
    probes: list[str],
    timeout: float | None,
    env: dict[str, str | None] | None = None,
) -> dict[str, Any]:
    """Replay from ``checkpoint`` through ``to_step`` in a subprocess; returns what it wrote.
    ``env``: variables to set (``None``: to remove) on top of this process's."""
    command = list(run.manifest["command"])
    with tempfile.TemporaryDirectory(prefix="labcoat-replay-") as tmp:
        out, child_env = write_plan(run, checkpoint, to_step, probes, Path(tmp))
        for key, value in (env or {}).items():
            if value is None:
                child_env.pop(key, None)
            else:
                child_env[key] = value
        proc = subprocess.run(
            command,
            cwd=run_cwd(run),
            env=child_env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return read_out(run, out, proc.returncode, proc.stderr or proc.stdout)


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
    from labcoat.replay.distributed import find_group, replay_group

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
    start, end = plan_window(recorded, from_step, to_step)
    parts = segments(recorded, start, end, n_jobs)
    child = _run_child
    if engine == "ray":  # one Ray, started once, runs every segment (labcoat.audit's engine)
        from labcoat.audit.engine import make_engine

        tasks = [(recorded, cp, hi, probes, timeout) for cp, _, hi in parts]
        outs = make_engine("ray", n_jobs=n_jobs).map(_run_child, tasks)
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
