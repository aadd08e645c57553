"""``engine="ray"``: a folder's per-rank files mined in parallel Ray tasks give the run the
same first line and templates as mining them here; where it cannot work it says so. The Ray
runs are slow: they start a local Ray."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.logs.conftest import PROC_JOB
from tests.logs.test_torchrun import JOB, torchrun

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


def _captured(tmp_path, subprocess_env, scenario="raise", world="4"):
    from labcoat.logs.api import SITE

    folder = tmp_path / "logs"
    env = {
        **subprocess_env,
        "LABCOAT_LOGS_DIR": str(folder),
        "PYTHONPATH": SITE + os.pathsep + subprocess_env["PYTHONPATH"],
    }
    subprocess.run([sys.executable, str(PROC_JOB), scenario, world], env=env, timeout=120)
    return folder


@pytest.mark.slow
def test_ray_mines_the_shards_as_one_core_does(tmp_path, subprocess_env):
    pytest.importorskip("ray")
    from labcoat.logs import why

    folder = _captured(tmp_path, subprocess_env)
    local = why(folder, ledger=False)
    parallel = why(folder, ledger=False, engine="ray")
    assert parallel.first["line"] == local.first["line"]
    assert (parallel.first["rank"], parallel.first["step"]) == (3, 8)
    assert parallel.analysis.templates == local.analysis.templates
    assert parallel.lines == local.lines


@pytest.mark.slow
def test_ray_reads_a_torchrun_log_dir_as_one_core_does(tmp_path, subprocess_env, cli):
    pytest.importorskip("ray")
    logs = tmp_path / "tr"
    subprocess.run(
        torchrun("--log-dir", str(logs), "--redirects", "3", str(JOB), "raise"),
        env={**subprocess_env, "GLOO_JOB_TIMEOUT": "6"},
        capture_output=True,
        timeout=300,
    )
    local = cli("logs", str(logs), "--why", "--json")
    parallel = cli("logs", str(logs), "--why", "--json", "--engine", "ray")
    assert parallel.code == local.code == 1, parallel.err
    mine, theirs = json.loads(parallel.out), json.loads(local.out)
    assert mine["first"] == theirs["first"] and mine["first"]["rank"] == 1
    assert "planted failure in the loss at step 12" in mine["first"]["line"]
    assert (mine["lines"], mine["templates"]) == (theirs["lines"], theirs["templates"])


def test_a_task_that_cannot_read_its_file_names_the_node(tmp_path):
    from labcoat.errors import InputError
    from labcoat.logs.parallel import mine_shards
    from labcoat.logs.sources import Source

    with pytest.raises(InputError, match="cannot read .*a file system every Ray node shares"):
        mine_shards([Source(str(tmp_path / "elsewhere" / "p1.log"))], engine="local")


def test_ray_without_ray_or_on_a_ledger_run_is_one_line_and_exit_2(
    tmp_path, subprocess_env, cli, job, monkeypatch
):
    ledger, _ = job("healthy")
    done = cli("logs", "last", "--why", "--engine", "ray", "--ledger", ledger)
    assert done.code == 2 and "mines the files of a folder" in done.err
    assert "Traceback" not in done.err
    folder = _captured(tmp_path, subprocess_env, "healthy", "2")
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    done = cli("logs", str(folder), "--why", "--engine", "ray")
    assert done.code == 2 and "ray" in done.err and "Traceback" not in done.err
