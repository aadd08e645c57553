"""Shared test helpers."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"


@dataclass
class CliResult:
    code: int
    out: str
    err: str


_SUMMARIES: list[str] = []


def pytest_runtest_logreport(report):
    """Collect what tests file under the ``summary`` property (e.g. the corpus's rates); reports
    reach the main process from every xdist worker, so this sees them all."""
    if report.when == "call":
        _SUMMARIES.extend(str(v) for k, v in report.user_properties if k == "summary")


def pytest_terminal_summary(terminalreporter):
    for line in _SUMMARIES:
        terminalreporter.write_line(line)


@pytest.fixture(autouse=True)
def no_project_ledger(monkeypatch, tmp_path_factory):
    """Code that records only where a ledger exists (the doctor, the watch, stats) finds none:
    a test never writes into a ledger the developer keeps in this checkout."""
    monkeypatch.setenv(
        "LABCOAT_LEDGER", str(tmp_path_factory.getbasetemp() / "absent" / "ledger.db")
    )


@pytest.fixture
def cli(capsys):
    """Run ``labcoat ARGS...`` in-process; returns exit code, stdout and stderr."""
    from labcoat.cli.main import main

    def run(*args: str) -> CliResult:
        code = main([str(a) for a in args])
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


@pytest.fixture
def subprocess_env():
    """Environment for running ``python -m labcoat`` from this checkout's sources."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


@pytest.fixture
def python() -> str:
    return sys.executable
