"""A distributed run is one run with N ranks: recorded with torchrun (2 ranks, gloo, CPU),
replayed on every rank with one command, and its ranks compared (tests/replay/dist_script.py).
Each test launches torchrun and replays in subprocesses: all are slow."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch.distributed

from tests.replay.scripts import cli, env

SCRIPT = Path(__file__).with_name("dist_script.py")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.distributed,  # torchrun launches: make test-all, -m distributed
    pytest.mark.skipif(
        not (torch.distributed.is_available() and torch.distributed.is_gloo_available()),
        reason="torch.distributed with the gloo backend is not available",
    ),
]


def launch(tmp: Path, *flags: str) -> Path:
    """``torchrun --nproc_per_node 2 dist_script.py FLAGS``; returns the run's folder."""
    before = set((tmp / "runs").iterdir()) if (tmp / "runs").is_dir() else set()
    run_env = dict(env(tmp), OMP_NUM_THREADS="1")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            "2",
            str(SCRIPT),
            *flags,
        ],
        cwd=tmp,
        env=run_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run,) = [p for p in (tmp / "runs").iterdir() if p.is_dir() and p not in before]
    return run


@pytest.mark.check("replay.ranks", planted=True)
def test_a_torchrun_run_is_one_run_replayed_on_every_rank_and_its_desync_is_named(tmp_path):
    run = launch(tmp_path, "--desync-at", "4")
    group = json.loads((run / "group.json").read_text())
    assert group["world_size"] == 2 and group["ranks"] == ["rank0", "rank1"]
    for r in (0, 1):
        manifest = json.loads((run / f"rank{r}" / "run.json").read_text())
        assert manifest["group"]["rank"] == r and manifest["status"] == "finished"
        assert manifest["group"]["replicated"]["model"][0] == "0.weight"
    # one command replays both ranks (the run's id, as `labcoat replay R0` was tried)
    code, out, err = cli(tmp_path, "replay", run.name, "--from", "4", "--json")
    assert code == 0, err
    assert out["world_size"] == 2 and out["first_mismatch"] is None and out["checkpoint"] == 3
    for r, rank in enumerate(out["ranks"]):
        assert rank["rank"] == r and rank["first_mismatch"] is None
        steps = [s["step"] for s in rank["steps"]]
        assert steps == list(range(4, 12))
        assert all(s["recorded"] == s["replayed"] for s in rank["steps"])
    losses = [out["ranks"][r]["steps"][0]["recorded"]["loss"] for r in (0, 1)]
    assert losses[0] != losses[1]  # each rank its own shard: logged values differ by design
    # one rank's folder names the whole run, too
    code, again, err = cli(tmp_path, "replay", str(run / "rank1"), "--from", "9", "--json")
    assert code == 0 and again["world_size"] == 2, err
    # the ranks compared: the checkpoints say 3..6, the replay says after step 4, rank 1
    code, diff, err = cli(tmp_path, "divergence", run.name, "--ranks", "--json")
    assert code == 1, err
    first = diff["first"]
    assert (first["step"], first["when"], first["rank"], first["tensor"]) == (
        4,
        "after",
        1,
        "0.bias",
    )
    assert first["majority"] is False and first["agree"] == [0]
    assert diff["replayed"] == {"from": 3, "to": 5, "exact": True}


@pytest.mark.check("replay.ranks", healthy=True)
def test_a_healthy_run_has_no_rank_difference(tmp_path):
    run = launch(tmp_path, "--every", "5")  # checkpoints 0, 5, 10: steps 10..11 are replayed
    code, diff, err = cli(tmp_path, "divergence", run.name, "--ranks", "--json")
    assert code == 0, err
    assert diff["first"] is None and diff["checkpoints"] == [0, 5, 10]
    assert diff["replayed"] == {"from": 10, "to": 11, "exact": True}
    assert diff["tensors"] == 4


@pytest.mark.ray
def test_every_rank_replays_as_a_ray_task(tmp_path):
    pytest.importorskip("ray")
    run = launch(tmp_path)
    code, out, err = cli(tmp_path, "replay", run.name, "--from", "6", "--engine", "ray", "--json")
    assert code == 0, err
    assert out["world_size"] == 2 and out["first_mismatch"] is None
    assert [len(r["steps"]) for r in out["ranks"]] == [6, 6]
