"""Shared test helpers."""

from __future__ import annotations

import os
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

# make test runs one pytest worker per core (xdist), and tests start subprocesses: one thread
# each for torch's and the BLAS libraries' pools (as the doctor and the watch tests already use),
# instead of every process starting one per core and the threads spinning against each other.
# Set before torch or numpy loads, and inherited by the workers and the subprocesses.
for _threads in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_threads, "1")


@dataclass
class CliResult:
    code: int
    out: str
    err: str


_SUMMARIES: list[str] = []
_CORPUS: Counter[str] = Counter()


def pytest_runtest_logreport(report):
    """Collect what tests file under the ``summary`` property and the corpus cases' outcomes
    (``corpus``: "healthy clean", "bug caught", ...); reports reach the main process from every
    xdist worker, so this sees them all."""
    if report.when == "call":
        for key, value in report.user_properties:
            if key == "summary":
                _SUMMARIES.append(str(value))
            elif key == "corpus":
                _CORPUS[str(value)] += 1


def corpus_summary(outcomes: Counter[str]) -> str | None:
    """The corpus's false-alarm and detection rates over the cases that ran, or None."""
    healthy = sum(n for k, n in outcomes.items() if k.startswith("healthy "))
    bugs = sum(n for k, n in outcomes.items() if k.startswith("bug "))
    if not healthy and not bugs:
        return None
    raised = outcomes["healthy raised"] + outcomes["bug raised"]
    return (
        f"corpus: false alarms {outcomes['healthy alarm']}/{healthy} healthy setups; "
        f"detected {outcomes['bug caught']}/{bugs} real bugs at their layer"
        + (f"; {raised} cases raised" if raised else "")
    )


def pytest_terminal_summary(terminalreporter):
    corpus = corpus_summary(_CORPUS)
    for line in _SUMMARIES + ([corpus] if corpus else []):
        terminalreporter.write_line(line)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Under ``--dist loadgroup`` (make test) each test module runs on one xdist worker, as
    with ``loadfile``, so its module- and session-scoped fixtures (a Ray cluster, a browser, a
    trained model) are built once; a module marked ``spread`` (independent slow cases, such as
    the corpus) instead hands its tests out one by one to whichever worker is free. Runs before
    xdist reads the marks (tryfirst)."""
    for item in items:
        if (
            item.get_closest_marker("spread") is None
            and item.get_closest_marker("xdist_group") is None
        ):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


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
