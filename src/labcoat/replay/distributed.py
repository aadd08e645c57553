"""Distributed runs: the ranks of one launch recorded as one run, replayed together, compared.

Recording. When ``torch.distributed`` is initialized (``torchrun``, ``mp.spawn``, Slurm) as
``labcoat.replayable`` is entered, rank 0 draws the run id and hands it to the other ranks through
the process group's store (a key, not a collective: nothing touches the ranks' communication),
and each rank records into ``<runs>/<run id>/rank<k>/`` a run of its own (run.json, log.jsonl,
checkpoints) whose ``run.json`` says which group it belongs to. Rank 0 also writes
``<runs>/<run id>/group.json``. Checkpoints must fall on the same steps on every rank (a replay
starts all ranks from one step), so an automatically chosen ``every`` is agreed once, through
the store, as the largest any rank needs. If ``WORLD_SIZE`` says the process is one of several
but no process group exists yet, the rank records a run of its own and says so.

Replaying. ``labcoat replay RUN`` on such a run (its folder, its id, or one rank's folder)
starts every rank's recorded command again on this machine, with ``RANK``, ``WORLD_SIZE``,
``LOCAL_RANK``, ``LOCAL_WORLD_SIZE`` and ``MASTER_ADDR``/``MASTER_PORT`` (a free port) set for
``init_process_group``'s ``env://``, from a checkpoint every rank holds; with ``engine="ray"``
each rank is a Ray task. Each rank's log is checked against its own recording.

Comparing ranks. ``labcoat divergence RUN --ranks`` checks the values that must agree across ranks:
the replicated parameters (all but tensor-parallel and DTensor shards, chosen as the watch's
``desync`` chooses them). The checkpoints' content hashes say, for free, the first checkpoint
where some rank's copy differs; the stretch before it is then replayed with the ``params``
probe (an exact fingerprint of every replicated parameter after every step) to name the first
step and the rank. With three ranks or more the rank is the one outside the majority; with two
there is no majority and the rank named is the one that differs from rank 0.
"""

from __future__ import annotations

from typing import Any

from labcoat.errors import InputError
from labcoat.replay.ranks import RecordedGroup, find_group
from labcoat.replay.runs import open_run


# -- comparing ranks ---------------------------------------------------------------------------
def _names(group: RecordedGroup) -> list[tuple[str, str]]:
    """(model key, parameter name) of the replicated parameters every rank recorded."""
    per_rank = [(run.manifest.get("group") or {}).get("replicated") or {} for run in group.ranks]
    out = []
    for key, names in per_rank[0].items():
        for name in names:
            if all(name in (r.get(key) or []) for r in per_rank[1:]):
                out.append((key, name))
    return out


def _label(key: str, name: str, several: bool) -> str:
    return f"{key}.{name}" if several else name


def _disagreement(values: list[Any]) -> dict[str, Any] | None:
    """Which ranks hold a value other than the majority's (ties: other than rank 0's)."""
    if all(v == values[0] for v in values[1:]):
        return None
    counts: dict[Any, list[int]] = {}
    for rank, v in enumerate(values):
        counts.setdefault(v, []).append(rank)
    top = max(len(r) for r in counts.values())
    leaders = [v for v, r in counts.items() if len(r) == top]
    majority = len(leaders) == 1
    agreed = leaders[0] if majority else values[0]
    culprits = [rank for rank, v in enumerate(values) if v != agreed]
    return {
        "rank": culprits[0],
        "ranks": culprits,
        "agree": counts[agreed],
        "majority": majority,
    }


def _checkpoint_digests(group: RecordedGroup, step: int, names: list[tuple[str, str]]) -> Any:
    several = len({k for k, _ in names}) > 1
    out = []
    for run in group.ranks:
        skeleton = run.store.skeleton(step)
        models = skeleton.get("models") or {}
        row = {}
        for key, name in names:
            ref = (models.get(key) or {}).get(name)
            row[_label(key, name, several)] = getattr(ref, "digest", None)
        out.append(row)
    return out


def _first_in(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The first tensor (in order) whose values differ across the ranks' rows."""
    for tensor in rows[0]:
        found = _disagreement([row.get(tensor) for row in rows])
        if found is not None:
            return {"tensor": tensor, **found}
    return None


def rank_diff(
    run: Any,
    *,
    replay: bool = True,
    timeout: float | None = None,
    ledger: Any = False,
):
    """Compare the ranks of a distributed run: the first step and rank whose replicated
    parameters differ; a :class:`~labcoat.replay.results.RankDiffResult`. ``replay=False``
    compares the checkpoints only (the step is then known to lie between two of them)."""
    from labcoat.replay.results import RankDiffResult

    group = find_group(run)
    if group is None:
        single = open_run(run, what="RUN")
        raise InputError(
            f"--ranks: run {single.id} is not a distributed run (it was recorded by one "
            "process); compare two runs with `labcoat divergence A B`"
        )
    names = _names(group)
    checkpoints = group.common_checkpoints()
    first: dict[str, Any] | None = None
    previous: int | None = None
    for step in checkpoints:
        found = _first_in(_checkpoint_digests(group, step, names)) if names else None
        if found is not None:
            first = {"checkpoint": step, "after": previous, **found}
            break
        previous = step
    steps_done = min(int(r.manifest.get("steps") or 0) for r in group.ranks)
    if first is not None:
        lo = first["after"]
        hi = None if lo is None else first["checkpoint"] - 1
    elif checkpoints and checkpoints[-1] < steps_done:  # the steps after the last checkpoint
        lo, hi = checkpoints[-1], min(steps_done - 1, min(r.last_step for r in group.ranks))
    else:
        lo = hi = None
    replayed: dict[str, Any] | None = None
    if replay and names and lo is not None and hi is not None and hi >= lo:
        from labcoat.replay.replay import replay_group

        result = replay_group(
            group,
            from_step=lo,
            to_step=hi,
            n_jobs=1,
            probes=["params"],
            engine="process",
            rtol=0.0,
            atol=0.0,
            timeout=timeout,
            ledger=False,
        )
        per_rank = [(r.probes.get("params") or {}).get("steps") or {} for r in result.ranks]
        replayed = {"from": lo, "to": hi, "exact": result.ok}
        for step in range(lo, hi + 1):
            rows = [steps.get(step) for steps in per_rank]
            if any(row is None for row in rows):
                continue
            found = _first_in(rows)
            if found is not None:
                first = {"step": step, "when": "after", **found}
                break
    if first is not None and "step" not in first:
        if first["after"] is None:  # the very first checkpoint: they differed from the start
            first = {"step": first["checkpoint"], "when": "before", **_strip(first)}
        else:
            between = [first["after"], first["checkpoint"]]
            first = {"step": None, "between": between, **_strip(first)}
    out = RankDiffResult(
        run=group.id,
        world_size=group.world_size,
        tensors=len(names),
        checkpoints=checkpoints,
        replayed=replayed,
        first=first,
    )
    out.record(ledger)
    return out


def _strip(found: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in found.items() if k not in ("checkpoint", "after")}


__all__ = ["rank_diff"]
