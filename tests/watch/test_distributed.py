"""desync and straggler with real processes: three ranks on the gloo backend, one of which
corrupts its copy of a replicated parameter and another that turns slow (see dist_worker.py).
Three ranks, because with two there is no majority to tell which copy drifted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch.distributed

from labcoat.watch import read_alerts, read_events
from tests.watch import dist_worker

WORKER = Path(dist_worker.__file__)
WORLD = 3

pytestmark = pytest.mark.skipif(
    not (torch.distributed.is_available() and torch.distributed.is_gloo_available()),
    reason="torch.distributed with the gloo backend is not available",
)


@pytest.fixture(scope="module")
def planted_run(tmp_path_factory):
    """Event files of one 3-rank run with both bugs planted."""
    import os

    tmp = tmp_path_factory.mktemp("dist")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    src = str(Path(__file__).resolve().parents[2] / "src")
    env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    pattern = str(tmp / "events.{rank}.jsonl")
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                str(WORKER),
                "planted",
                str(rank),
                str(WORLD),
                str(tmp / "rendezvous"),
                pattern,
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for rank in range(WORLD)
    ]
    outputs = []
    try:
        for p in procs:
            outputs.append(p.communicate(timeout=120)[0])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert [p.returncode for p in procs] == [0] * WORLD, "\n".join(outputs)
    return sorted(tmp.glob("events.*.jsonl"))


@pytest.mark.distributed  # a 3-rank gloo run: slow, make test-all
def test_each_rank_stores_its_own_events(planted_run):
    assert [p.name for p in planted_run] == [f"events.{r}.jsonl" for r in range(WORLD)]
    for rank, path in enumerate(planted_run):
        assert {e["rank"] for e in read_events([path])} == {rank}


@pytest.mark.distributed  # a 3-rank gloo run: slow, make test-all
def test_nothing_fires_during_the_healthy_start(planted_run):
    assert min(a.step for a in read_alerts(planted_run)) >= dist_worker.DESYNC_STEP


@pytest.mark.distributed  # a 3-rank gloo run: slow, make test-all
def test_desync_is_one_alert_naming_the_culprit_rank_and_tensor(planted_run):
    (alert,) = [a for a in read_alerts(planted_run) if a.check == "desync"]
    assert alert.step == dist_worker.DESYNC_STEP  # the first comparison after the plant
    assert alert.subject == "fc2.bias" and alert.evidence["culprit_ranks"] == [WORLD - 1]
    assert alert.evidence["differing"] == ["fc2.bias"]  # the rank's own shard is not compared
    assert alert.ranks == (0, 1, 2)  # every rank reported it; merged into one
    assert "rank 2 disagrees with ranks 0, 1" in alert.message


@pytest.mark.distributed  # a 3-rank gloo run: slow, make test-all
def test_straggler_names_the_slow_rank(planted_run):
    # the first alert naming the planted rank; three ranks sharing two busy cores may add
    # another (the plant's alert ending and starting again, or a rank the load itself slowed)
    alert = next(
        a for a in read_alerts(planted_run) if a.check == "straggler" and a.subject == "rank 1"
    )
    assert dist_worker.STRAGGLER_STEP <= alert.step <= dist_worker.STRAGGLER_STEP + 10
    assert alert.subject == "rank 1" and alert.evidence["straggler_rank"] == 1
    times = alert.evidence["step_time_s_by_rank"]
    assert times["1"] > 0.025 > max(times["0"], times["2"])


def test_sharded_tensors_are_not_in_the_replicated_set():
    """DTensor shards and Megatron-marked shards are one rank's piece, not a copy; a
    replicated DTensor is compared through its local tensor; sequence-parallel layer norms
    are full copies and stay in."""
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    from labcoat.watch._resolve import select_replicated

    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.LayerNorm(4), torch.nn.Linear(4, 2))
    model[0].weight.tensor_model_parallel = True
    model[0].weight.partition_dim = 1
    model[0].bias.partition_dim = 0  # marked by its partition dimension alone
    model[1].weight.sequence_parallel = True
    model[2].bias.partition_dim = -1  # Megatron's mark for "not partitioned"
    assert list(select_replicated(model, None)) == ["1.weight", "1.bias", "2.weight", "2.bias"]
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        mesh = init_device_mesh("cpu", (1,))
        layer = torch.nn.Linear(4, 4)
        layer.weight = torch.nn.Parameter(
            distribute_tensor(layer.weight.detach(), mesh, [Shard(0)])
        )
        layer.bias = torch.nn.Parameter(distribute_tensor(layer.bias.detach(), mesh, [Replicate()]))
        chosen = select_replicated(layer, None)
        assert list(chosen) == ["bias"] and type(chosen["bias"]) is torch.Tensor
    finally:
        dist.destroy_process_group()
