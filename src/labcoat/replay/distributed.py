"""Distributed runs: the ranks of one launch recorded as one run, replayed together, compared.

Recording. When ``torch.distributed`` is initialized (``torchrun``, ``mp.spawn``, Slurm) as
``labcoat.record`` is entered, rank 0 draws the run id and hands it to the other ranks through
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

Comparing ranks. ``labcoat diff RUN --ranks`` checks the values that must agree across ranks:
the replicated parameters (all but tensor-parallel and DTensor shards, chosen as the watch's
``desync`` chooses them). The checkpoints' content hashes say, for free, the first checkpoint
where some rank's copy differs; the stretch before it is then replayed with the ``params``
probe (an exact fingerprint of every replicated parameter after every step) to name the first
step and the rank. With three ranks or more the rank is the one outside the majority; with two
there is no majority and the rank named is the one that differs from rank 0.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import subprocess
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from labcoat.errors import InputError
from labcoat.replay.runs import RecordedRun, open_run

if TYPE_CHECKING:
    from labcoat.replay.record import Recorder

GROUP_FILE = "group.json"
#: the environment variables a launcher sets for a rank; a replay sets its own
LAUNCH_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK")
_joined = 0  # recordings that joined a group in this process (each its own store key)
_warned_unjoined = False


# -- recording ---------------------------------------------------------------------------------
@dataclass
class Group:
    """This rank's place in a recorded distributed run."""

    id: str
    rank: int
    world_size: int
    local_rank: int | None
    replicated: dict[str, list[str]]
    store: Any = field(default=None, repr=False)
    key: str = ""
    every: int | None = None

    def agree_every(self, required: float) -> int:
        """The checkpoint interval every rank uses: the largest any rank needs (agreed once,
        through the store, at the same step on every rank; fixed from then on)."""
        from labcoat.replay.checkpoint import nice_every

        if self.every is None:
            self.store.set(f"{self.key}/every/{self.rank}", repr(float(required)))
            needed = [
                float(self.store.get(f"{self.key}/every/{r}").decode())
                for r in range(self.world_size)
            ]
            self.every = nice_every(max(needed))
        return self.every

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "rank": self.rank,
            "world_size": self.world_size,
            "local_rank": self.local_rank,
            "replicated": self.replicated,
            "every_agreed": self.every,
        }


def _default_store() -> Any:
    from torch.distributed import distributed_c10d

    return distributed_c10d._get_default_store()


def join_group(rec: "Recorder") -> Group | None:
    """The group this recording belongs to (and its folders made), or None outside
    ``torch.distributed``; sets ``rec.dir`` and ``rec.run_id`` to this rank's."""
    global _joined, _warned_unjoined
    import torch

    dist = torch.distributed
    if not (dist.is_available() and dist.is_initialized()):
        world = os.environ.get("WORLD_SIZE", "").strip()
        if world.isdigit() and int(world) > 1 and not _warned_unjoined:
            _warned_unjoined = True
            warnings.warn(
                f"labcoat.record: WORLD_SIZE={world} but torch.distributed is not initialized "
                f"yet, so rank {os.environ.get('RANK', '?')} records a run of its own that "
                "`labcoat replay` cannot relaunch with its peers; call "
                "torch.distributed.init_process_group before labcoat.record to record one run "
                "with every rank",
                RuntimeWarning,
                stacklevel=4,
            )
        return None
    world = dist.get_world_size()
    if world <= 1:
        return None
    rank = dist.get_rank()
    store = _default_store()
    _joined += 1
    key = f"labcoat.record/{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}/{_joined}"
    if rank == 0:
        gid = rec.run_id
        store.set(f"{key}/id", gid)
    else:
        gid = store.get(f"{key}/id").decode()
    local = os.environ.get("LOCAL_RANK", "").strip()
    group = Group(
        id=gid,
        rank=rank,
        world_size=world,
        local_rank=int(local) if local.isdigit() else None,
        replicated=_replicated(rec),
        store=store,
        key=key,
    )
    top = rec.dir.parent / gid
    top.mkdir(parents=True, exist_ok=True)
    rec.dir = top / f"rank{rank}"
    rec.run_id = f"{gid}/rank{rank}"
    if rank == 0:
        from labcoat.replay.checkpoint import write_atomic

        manifest = {
            "version": 1,
            "run_id": gid,
            "world_size": world,
            "ranks": [f"rank{r}" for r in range(world)],
            "backend": str(dist.get_backend()),
            "created": time.time(),
        }
        write_atomic(top / GROUP_FILE, json.dumps(manifest, indent=1).encode())
    return group


def _replicated(rec: "Recorder") -> dict[str, list[str]]:
    from labcoat.watch._resolve import select_replicated

    return {
        key: list(select_replicated(model, None))
        for key, model in rec.models.items()
        if hasattr(model, "named_parameters")
    }


# -- reading -----------------------------------------------------------------------------------
@dataclass
class RecordedGroup:
    """A distributed run's folder: ``group.json`` and one recorded run per rank."""

    dir: Path
    manifest: dict[str, Any]
    ranks: list[RecordedRun]

    @property
    def id(self) -> str:
        return str(self.manifest.get("run_id") or self.dir.name)

    @property
    def world_size(self) -> int:
        return len(self.ranks)

    def common_checkpoints(self) -> list[int]:
        """The checkpoints every rank finished (a replay starts all ranks from one of them)."""
        common = set(self.ranks[0].checkpoints())
        for run in self.ranks[1:]:
            common &= set(run.checkpoints())
        return sorted(common)


def _is_group(path: Path) -> bool:
    return (path / GROUP_FILE).is_file()


def open_group(path: Path) -> RecordedGroup:
    try:
        manifest = json.loads((path / GROUP_FILE).read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"run {path.name}: {path / GROUP_FILE} cannot be read ({exc})") from None
    ranks = []
    for r, name in enumerate(manifest.get("ranks") or []):
        if not (path / name / "run.json").is_file():
            raise InputError(
                f"run {manifest.get('run_id', path.name)}: rank {r} is missing ({path / name} "
                "holds no run.json; did that rank start?); every rank is needed to replay"
            )
        ranks.append(open_run(path / name))
    if not ranks:
        raise InputError(f"run {path.name}: {path / GROUP_FILE} lists no ranks")
    return RecordedGroup(path, manifest, ranks)


def find_group(run: Any) -> RecordedGroup | None:
    """The distributed run ``run`` names (its folder, id, unique id prefix, ``last``, or one
    rank's folder or run), or None when it names a single-process run (or nothing)."""
    from labcoat.replay.record import runs_root

    if isinstance(run, RecordedGroup):
        return run
    if isinstance(run, RecordedRun):
        return open_group(run.dir.parent) if run.manifest.get("group") else None
    path = Path(run)
    if _is_group(path):
        return open_group(path)
    if (path / "run.json").is_file():
        if _is_group(path.parent) and path.name.startswith("rank"):
            return open_group(path.parent)
        return None
    root = runs_root()
    text = str(run)
    if "/" in text and _is_group(root / text.split("/", 1)[0]):  # "<id>/rank1"
        return open_group(root / text.split("/", 1)[0])
    if _is_group(root / text):
        return open_group(root / text)
    if not root.is_dir():
        return None
    groups = sorted(p.name for p in root.iterdir() if _is_group(p))
    if text == "last":
        runs = sorted(p.name for p in root.iterdir() if (p / "run.json").is_file())
        if groups and (not runs or groups[-1] > runs[-1]):
            return open_group(root / groups[-1])
        return None
    matches = [g for g in groups if g.startswith(text)]
    single = [p.name for p in root.iterdir() if (p / "run.json").is_file()]
    if len(matches) == 1 and not any(n.startswith(text) for n in single):
        return open_group(root / matches[0])
    return None


# -- replaying ---------------------------------------------------------------------------------
def free_port() -> int:
    """A TCP port free on this machine now (for rank 0's store)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rank_env(rank: int, world: int, port: int) -> dict[str, str | None]:
    """What ``init_process_group("…", init_method="env://")`` reads, for one replayed rank on
    this machine; a launcher's own variables (torchrun's agent store) are removed."""
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("TORCHELASTIC_")}
    env.update(
        {
            "RANK": str(rank),
            "WORLD_SIZE": str(world),
            "LOCAL_RANK": str(rank),
            "LOCAL_WORLD_SIZE": str(world),
            "GROUP_RANK": "0",
            "ROLE_RANK": str(rank),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
        }
    )
    return env


def _gang(
    group: RecordedGroup,
    checkpoint: int,
    to_step: int,
    probes: list[str],
    timeout: float | None,
) -> list[dict[str, Any]]:
    """Every rank replayed together from ``checkpoint`` through ``to_step`` as processes on
    this machine; when one rank fails the others are stopped (they would wait for it)."""
    from labcoat.replay.replay import read_out, run_cwd, write_plan

    port = free_port()
    with tempfile.TemporaryDirectory(prefix="labcoat-replay-ranks-") as tmp:
        procs, outs, logs = [], [], []
        for rank, run in enumerate(group.ranks):
            folder = Path(tmp) / f"rank{rank}"
            folder.mkdir()
            out, env = write_plan(run, checkpoint, to_step, probes, folder)
            for key, value in rank_env(rank, group.world_size, port).items():
                if value is None:
                    env.pop(key, None)
                else:
                    env[key] = value
            log = open(folder / "output.txt", "w+")
            procs.append(
                subprocess.Popen(
                    list(run.manifest["command"]),
                    cwd=run_cwd(run),
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    text=True,
                )
            )
            outs.append(out)
            logs.append(log)
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while any(p.poll() is None for p in procs):
                if any(p.returncode not in (None, 0) for p in procs):
                    break  # a rank failed: the others would wait for it forever
                if deadline is not None and time.monotonic() > deadline:
                    raise subprocess.TimeoutExpired(procs[0].args, timeout or 0)
                time.sleep(0.05)
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        results = []
        failures = []
        for rank, (run, proc, out, log) in enumerate(zip(group.ranks, procs, outs, logs)):
            log.seek(0)
            text = log.read()
            log.close()
            try:
                results.append(read_out(run, out, proc.returncode, text))
            except Exception as exc:  # noqa: BLE001 - the first failing rank is reported
                failures.append((rank, exc))
        if failures:  # a rank's own error first (the others then lost their peer)
            rank, exc = min(failures, key=lambda f: (not isinstance(f[1], InputError), f[0]))
            raise type(exc)(f"rank {rank}: {exc}") from None
        return results


def _ray_rank(
    run: RecordedRun,
    checkpoint: int,
    to_step: int,
    probes: list[str],
    timeout: float | None,
    env: dict[str, str | None],
) -> dict[str, Any]:
    from labcoat.replay.replay import _run_child

    return _run_child(run, checkpoint, to_step, probes, timeout, env)


def replay_group(
    group: RecordedGroup,
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
    from concurrent.futures import ThreadPoolExecutor

    from labcoat.replay.replay import compare_window, plan_window, segments
    from labcoat.replay.results import GroupReplayResult

    windows = [plan_window(run, from_step, to_step) for run in group.ranks]
    start = max(w[0] for w in windows)
    end = min(w[1] for w in windows)
    if end < start:
        raise InputError(
            f"run {group.id}: its ranks recorded no common steps in the window asked for "
            f"({windows}); pick --from/--to inside every rank's steps"
        )
    shared = _Shared(group.ranks[0].dir, group.ranks[0].manifest, group.ranks[0].logs)
    shared.common = group.common_checkpoints()
    parts = segments(shared, start, end, n_jobs)
    probes = list(probes)
    if engine == "ray":  # every rank of every segment a Ray task, all running at once
        from labcoat.audit.engine import make_engine

        tasks = []
        for cp, _, hi in parts:
            port = free_port()
            for rank, run in enumerate(group.ranks):
                env = rank_env(rank, group.world_size, port)
                tasks.append((run, cp, hi, probes, timeout, env))
        flat = make_engine("ray", n_jobs=len(tasks)).map(_ray_rank, tasks)
        per_part = [flat[i : i + group.world_size] for i in range(0, len(flat), group.world_size)]
    elif len(parts) == 1:
        per_part = [_gang(group, parts[0][0], parts[0][2], probes, timeout)]
    else:
        with ThreadPoolExecutor(max_workers=n_jobs) as pool:
            futures = [pool.submit(_gang, group, cp, hi, probes, timeout) for cp, _, hi in parts]
            per_part = [f.result() for f in futures]
    results = []
    for rank, run in enumerate(group.ranks):
        outs = [part[rank] for part in per_part]
        results.append(compare_window(run, start, end, parts, outs, rtol, atol))
    result = GroupReplayResult(run=group.id, ranks=results)
    result.record(ledger)
    return result


@dataclass
class _Shared(RecordedRun):
    """Rank 0's run, with the checkpoints every rank holds (a replay's starting points)."""

    common: list[int] = field(default_factory=list)

    def checkpoints(self) -> list[int]:
        return self.common


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
            "process); compare two runs with `labcoat diff A B`"
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


def with_rank(finding: Any, rank: int) -> Any:
    """A finding of one rank's replay, marked with the rank."""
    return dataclasses.replace(finding, rank=rank, message=f"rank {rank}: {finding.message}")


__all__ = [
    "Group",
    "RecordedGroup",
    "find_group",
    "join_group",
    "rank_diff",
    "replay_group",
]
