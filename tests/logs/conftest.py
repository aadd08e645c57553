"""Real multi-process runs recorded by ``labcoat run``, for the logs tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("drain3")

HERE = Path(__file__).parent
PROC_JOB = HERE / "proc_job.py"


def record(
    ledger: Path, env: dict, *command: str, timeout: float = 120
) -> subprocess.CompletedProcess:
    """``labcoat run --ledger LEDGER -- COMMAND`` as a user runs it."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "labcoat",
            "run",
            "--no-git",
            "--ledger",
            str(ledger),
            "--",
            *command,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def job(tmp_path, subprocess_env):
    """Run proc_job.py SCENARIO [WORLD] under ``labcoat run``; returns (ledger path, result)."""

    def run(scenario: str, world: int = 2, *, ledger: Path | None = None, **env: str):
        path = ledger or tmp_path / "ledger.db"
        done = record(
            path, {**subprocess_env, **env}, sys.executable, str(PROC_JOB), scenario, str(world)
        )
        return path, done

    return run


def why(ledger: Path, run="last", **options):
    from labcoat.ledger import Ledger
    from labcoat.logs import why as read

    with Ledger(ledger, create=False) as book:
        return read(run, ledger=book, **options)
