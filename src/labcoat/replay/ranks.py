"""A recorded distributed run read back (``group.json`` and a run per rank), and its ranks
started again together, as processes on this machine or as Ray tasks (see
:mod:`labcoat.replay.distributed`)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labcoat.errors import InputError
from labcoat.replay.child import read_out, run_child, run_cwd, write_plan
from labcoat.replay.rank import GROUP_FILE
from labcoat.replay.runs import RecordedRun, open_run


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


@dataclass
class CommonCheckpoints(RecordedRun):
    """Rank 0's run, with the checkpoints every rank holds (a replay's starting points)."""

    common: list[int] = field(default_factory=list)

    def checkpoints(self) -> list[int]:
        return self.common


def run_ranks(
    group: RecordedGroup,
    parts: list[tuple[int, int, int]],
    probes: list[str],
    timeout: float | None,
    engine: str,
    n_jobs: int,
) -> list[list[dict[str, Any]]]:
    """What every rank's process wrote, per segment ``(checkpoint, first, last)``: each
    segment's ranks run together (a gang), segments ``n_jobs`` at a time; with
    ``engine="ray"`` every rank of every segment is a Ray task, all running at once."""
    if engine == "ray":
        from labcoat.audit.engine import make_engine

        tasks = []
        for cp, _, hi in parts:
            port = free_port()
            for rank, run in enumerate(group.ranks):
                env = rank_env(rank, group.world_size, port)
                tasks.append((run, cp, hi, probes, timeout, env))
        flat = make_engine("ray", n_jobs=len(tasks)).map(run_child, tasks)
        size = group.world_size
        return [flat[i : i + size] for i in range(0, len(flat), size)]
    if len(parts) == 1:
        return [_gang(group, parts[0][0], parts[0][2], probes, timeout)]
    with ThreadPoolExecutor(max_workers=n_jobs) as pool:
        futures = [pool.submit(_gang, group, cp, hi, probes, timeout) for cp, _, hi in parts]
        return [f.result() for f in futures]
