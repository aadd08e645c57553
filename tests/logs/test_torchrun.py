"""``labcoat run -- torchrun …`` on real 2-process gloo jobs (torch, a DataLoader, logging):
each planted fault's first line, step and rank, its consequences called consequences, and a
healthy run that names nothing. Slow: a torchrun start costs seconds per process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.logs.conftest import record, why

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::ResourceWarning")]

JOB = Path(__file__).parent / "gloo_job.py"
K = 12


def torchrun(*args: str, nproc: int = 2) -> list[str]:
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        str(nproc),
        *args,
    ]


@pytest.fixture
def gloo(tmp_path, subprocess_env):
    def run(scenario: str):
        ledger = tmp_path / "ledger.db"
        env = {**subprocess_env, "GLOO_JOB_TIMEOUT": "6"}
        done = record(ledger, env, *torchrun(str(JOB), scenario), timeout=300)
        return why(ledger), done

    return run


def test_a_healthy_8_rank_gloo_run_names_nothing_and_folds_ten_times_shorter(
    tmp_path, subprocess_env, cli
):
    ledger = tmp_path / "ledger.db"
    env = {**subprocess_env, "GLOO_JOB_TIMEOUT": "60"}
    done = record(ledger, env, *torchrun(str(JOB), "healthy", nproc=8), timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    report = why(ledger)
    assert report.first is None and report.ok and report.ranks == list(range(8))
    raw = cli("logs", "last", "--ledger", ledger).out.splitlines()
    folded = cli("logs", "last", "--folded", "--ledger", ledger).out.splitlines()
    assert len(raw) >= 8 * 30 and len(raw) >= 10 * len(folded), "\n".join(folded)
    assert any("[ranks 0-7]" in line and "step <*> loss <*>" in line for line in folded)


def test_healthy_gloo_run_names_nothing(gloo):
    report, done = gloo("healthy")
    assert done.returncode == 0, done.stderr[-2000:]
    assert report.first is None and report.ok, report.to_dict()
    assert report.ranks == [0, 1]


@pytest.mark.parametrize(
    "scenario, line",
    [
        ("raise", "[rank1]: RuntimeError: planted failure in the loss at step 12"),
        ("nan", "step 12 loss nan"),
        ("oom", "can't allocate memory"),
    ],
)
def test_the_faulty_rank_is_named_first_and_the_rest_are_consequences(gloo, scenario, line):
    report, _ = gloo(scenario)
    first = report.first
    assert first is not None, report.to_dict()
    assert (first["rank"], first["step"]) == (1, K), first
    assert line in first["line"]
    assert all(c["rank"] != 1 for c in report.consequences)
    if scenario != "nan":  # the others lost their peer, the launcher reported the failure
        assert {c["rank"] for c in report.consequences} >= {0, None}


def test_a_hung_rank_is_the_cause_of_the_others_timeouts(gloo):
    report, done = gloo("hang")
    assert done.returncode != 0
    first = report.first
    assert (first["rank"], first["step"]) == (1, K) and "silent" in first["why"], first
    assert [s["rank"] for s in report.silent_ranks] == [1]
    timeout = [c for c in report.consequences if c["rank"] == 0]
    assert timeout and "Timed out" in timeout[0]["line"]


def test_a_slowed_rank_is_named_at_its_step(gloo):
    report, done = gloo("slow")
    assert done.returncode == 0
    assert [(c["rank"], c["step"]) for c in report.changes] == [(1, K)]
    assert report.first["rank"] == 1


def test_torchrun_log_dir_is_read_as_a_run(tmp_path, subprocess_env, cli):
    logs = tmp_path / "tr"
    subprocess.run(
        torchrun("--log-dir", str(logs), "--redirects", "3", str(JOB), "raise"),
        env={**subprocess_env, "GLOO_JOB_TIMEOUT": "6"},
        capture_output=True,
        timeout=300,
    )
    done = cli("logs", str(logs), "--why", "--json")
    data = json.loads(done.out)
    assert done.code == 1 and data["first"]["rank"] == 1, data
    assert "planted failure in the loss at step 12" in data["first"]["line"]
