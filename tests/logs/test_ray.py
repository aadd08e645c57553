"""``engine="ray"``: a folder's per-rank files mined in parallel Ray tasks give the run the
same first line and templates as mining them here. Slow: it starts a local Ray."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.logs.conftest import PROC_JOB

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::ResourceWarning")]


def test_ray_mines_the_shards_as_one_core_does(tmp_path, subprocess_env):
    pytest.importorskip("ray")
    from labcoat.logs import why
    from labcoat.logs.api import SITE

    folder = tmp_path / "logs"
    env = {
        **subprocess_env,
        "LABCOAT_LOGS_DIR": str(folder),
        "PYTHONPATH": SITE + os.pathsep + subprocess_env["PYTHONPATH"],
    }
    subprocess.run([sys.executable, str(PROC_JOB), "raise", "4"], env=env, timeout=120)
    local = why(folder, ledger=False)
    parallel = why(folder, ledger=False, engine="ray")
    assert parallel.first["line"] == local.first["line"]
    assert (parallel.first["rank"], parallel.first["step"]) == (3, 8)
    assert parallel.analysis.templates == local.analysis.templates
    assert parallel.lines == local.lines
