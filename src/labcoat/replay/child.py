"""The replaying process: the recorded command run again with ``LABCOAT_REPLAY`` pointing at a
plan (the checkpoint, the last step, the probes, where to write), and what it wrote read back."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from labcoat.errors import InputError, LabcoatError
from labcoat.replay.runs import RecordedRun


class ReplayFailed(LabcoatError):
    """The replayed script failed for a reason of its own (its stderr's last lines say why)."""


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
        f"labcoat.replayable wrote anything ({tail or 'no output'}); does it still call "
        "labcoat.replayable?"
    )


def run_child(
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
