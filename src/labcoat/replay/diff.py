"""``labcoat divergence``: where two recorded runs part ways.

Three answers, each cheaper than the next: what differs in their provenance (code, config,
data, environment, seeds, command; :func:`labcoat.provenance.diff.compare` does the keys), the
first step where a value both logged differs (``only``: among the chosen names), and, with
``bisect=True``, the first module whose output differs at that step (or, when none does, that
the value itself differs: a logged hyperparameter, no module at fault): both runs are replayed
from their last common checkpoint (the latest at or before the divergence whose stored state is
byte-identical in both, found by the content hashes) through the divergence with the
``activations`` probe, and the modules' output digests are compared in the order the forward
pass ran them.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from labcoat.errors import InputError
from labcoat.provenance.diff import compare
from labcoat.replay.replay import by_step, first_difference, replay
from labcoat.replay.runs import RecordedRun, open_run


def _sections(run: RecordedRun) -> dict[str, Any]:
    prov = run.manifest.get("provenance") or {}
    git = prov.get("git") or {}
    data = {d["name"]: d.get("digest") for d in prov.get("data") or []}
    return {
        "code": {
            "commit": git.get("commit"),
            "dirty": git.get("dirty"),
            "uncommitted diff": git.get("diff_sha256"),
        },
        "config": prov.get("config") or {},
        "data": data,
        "env": prov.get("env") or {},
        "seeds": prov.get("seeds") or {},
        "command": {
            "argv": " ".join(run.manifest.get("command") or [])[:2000],
            "cwd": run.manifest.get("cwd"),
        },
    }


def provenance_rows(a: RecordedRun, b: RecordedRun) -> list[dict[str, Any]]:
    sa, sb = _sections(a), _sections(b)
    rows = []
    for section in sa:
        for change in compare(section, sa[section], sb[section]):
            rows.append(
                {
                    "section": change.section,
                    "key": change.key,
                    "a": change.before,
                    "b": change.after,
                }
            )
    return rows


def common_checkpoint(a: RecordedRun, b: RecordedRun, step: int) -> int | None:
    """The latest checkpoint at or before ``step`` that both runs hold, preferring one whose
    stored objects are identical in both."""
    both = sorted(set(a.checkpoints()) & set(b.checkpoints()))
    both = [s for s in both if s <= step]
    if not both:
        return None
    for s in reversed(both):
        if set(a.store.manifest(s)["objects"]) == set(b.store.manifest(s)["objects"]):
            return s
    return both[-1]


def first_module(acts_a: dict[str, Any], acts_b: dict[str, Any], steps: list[int]) -> Any:
    for step in steps:
        ma = acts_a.get("steps", {}).get(step, {})
        mb = acts_b.get("steps", {}).get(step, {})
        for name in ma:
            if name in mb and ma[name]["digest"] != mb[name]["digest"]:
                return {"step": step, "module": name}
    return None


def chosen(
    steps_a: dict[int, dict[str, list[Any]]],
    steps_b: dict[int, dict[str, list[Any]]],
    only: list[str],
) -> tuple[dict[int, dict[str, list[Any]]], dict[int, dict[str, list[Any]]]]:
    """Both runs' values restricted to the names in ``only`` (each must be logged by both)."""
    names_a = {n for v in steps_a.values() for n in v}
    names_b = {n for v in steps_b.values() for n in v}
    missing = [n for n in only if n not in names_a or n not in names_b]
    if missing:
        both = ", ".join(sorted(names_a & names_b)) or "none"
        raise InputError(
            f"--only: {', '.join(missing)} not logged by both runs; the names both logged: {both}"
        )

    def keep(steps: dict[int, dict[str, list[Any]]]) -> dict[int, dict[str, list[Any]]]:
        out = {s: {n: v for n, v in vals.items() if n in only} for s, vals in steps.items()}
        return {s: v for s, v in out.items() if v}

    return keep(steps_a), keep(steps_b)


def side_by_side(
    steps_a: dict[int, dict[str, list[Any]]], steps_b: dict[int, dict[str, list[Any]]]
) -> dict[str, list[list[Any]]]:
    """name -> [[step, value in A, value in B], ...] over the steps both logged it."""
    out: dict[str, list[list[Any]]] = {}
    for step in sorted(set(steps_a) & set(steps_b)):
        for name, xs in steps_a[step].items():
            ys = steps_b[step].get(name)
            if ys is not None:
                out.setdefault(name, []).append([step, xs[-1], ys[-1]])
    return out


def no_module(found: dict[str, Any]) -> dict[str, Any]:
    """The bisection's answer when every module's output agreed through the divergence: the
    value itself differs (a hyperparameter, or one computed outside the model)."""
    return {
        "step": found["step"],
        "module": None,
        "value": found["name"],
        "note": f"no module's output differs through step {found['step']}: the first value "
        f"that differs is the logged value {found['name']!r} (a hyperparameter, or a value "
        "computed outside the model); no module is at fault",
    }


def divergence(
    a: str | os.PathLike[str],
    b: str | os.PathLike[str],
    *,
    bisect: bool = False,
    only: list[str] | tuple[str, ...] | None = None,
    rtol: float = 0.0,
    atol: float = 0.0,
    timeout: float | None = None,
    ledger: Any = False,
):
    """Compare two recorded runs; returns a :class:`~labcoat.replay.results.DiffResult`.
    ``ledger``: where its findings are recorded (``False``: nowhere; ``None``: the project's
    ledger if it exists)."""
    from labcoat.replay.rank import GROUP_FILE
    from labcoat.replay.results import DiffResult

    for run, what in ((a, "A"), (b, "B")):
        if (Path(run) / GROUP_FILE).is_file():
            raise InputError(
                f"{what}: {run} is a distributed run; compare its ranks with `labcoat divergence "
                f"{run} --ranks`, or one rank of each run (RUN/rank0)"
            )
    run_a, run_b = open_run(a, what="A"), open_run(b, what="B")
    for value, name in ((rtol, "rtol"), (atol, "atol")):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
            raise InputError(f"{name}: expected a tolerance >= 0; got {value!r}")
    steps_a, steps_b = by_step(run_a.logs), by_step(run_b.logs)
    values = None
    if only:
        steps_a, steps_b = chosen(steps_a, steps_b, list(only))
        values = side_by_side(steps_a, steps_b)
    common = sorted(set(steps_a) & set(steps_b))
    found = first_difference(steps_a, steps_b, common, rtol, atol, only_common=True)
    bisected = None
    if bisect and found is not None:
        step = found["step"]
        start = common_checkpoint(run_a, run_b, step)
        if start is None:
            raise InputError(
                f"--bisect: runs {run_a.id} and {run_b.id} hold no common checkpoint at or before "
                f"step {step}, where they diverge"
            )
        with ThreadPoolExecutor(max_workers=2) as pool:
            futures = [
                pool.submit(
                    replay,
                    run,
                    from_step=start,
                    to_step=min(step, run.last_step),
                    probes=["activations"],
                    timeout=timeout,
                )
                for run in (run_a, run_b)
            ]
            ra, rb = (f.result() for f in futures)
        steps = list(range(start, step + 1))
        bisected = first_module(
            ra.probes.get("activations", {}), rb.probes.get("activations", {}), steps
        ) or no_module(found)
    result = DiffResult(
        a=run_a.id,
        b=run_b.id,
        provenance=provenance_rows(run_a, run_b),
        first_divergence=found,
        bisect=bisected,
        steps_compared=len(common),
        tolerance={"rtol": rtol, "atol": atol},
        only=list(only) if only else None,
        values=values,
    )
    result.record(ledger)
    return result


def diff(*args: Any, **kwargs: Any):
    """Deprecated: :func:`divergence` (``diff`` also named the ledger's provenance diff)."""
    from labcoat._validation import warn_deprecated

    warn_deprecated("labcoat.replay.diff()", "labcoat.replay.divergence()")
    return divergence(*args, **kwargs)
