"""One rank of a small data-parallel training run on the gloo backend, for the desync and
straggler tests.

Run as ``python dist_worker.py SCENARIO RANK WORLD INIT_FILE EVENTS_PATTERN``. Every rank
trains the same MLP on its own shard of data and averages gradients with an all-reduce after
backward, as DistributedDataParallel does (DDP itself is left out only because constructing
it imports torch._dynamo, seconds per process). Ranks compare every 5 steps. With SCENARIO
``planted`` two bugs are planted, one after the other, after a healthy start:

- from step 20 (``DESYNC_STEP``) the last rank holds a nudged copy of ``fc2.bias``;
- from step 30 (``STRAGGLER_STEP``) rank 1 sleeps 30 ms before each forward (a slow loader).

With SCENARIO ``healthy`` nothing is planted. Each rank writes its alerts as JSON lines to
EVENTS_PATTERN with ``{rank}`` filled in.
"""

from __future__ import annotations

import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn.functional as F

import labcoat

DESYNC_STEP = 20
STRAGGLER_STEP = 30
STEPS = 45


def main(scenario: str, rank: int, world: int, init_file: str, events: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo",
        init_method=f"file://{init_file}",
        rank=rank,
        world_size=world,
        timeout=timedelta(seconds=60),
    )
    torch.manual_seed(0)  # the same initial weights on every rank
    model = torch.nn.Sequential()
    model.add_module("fc1", torch.nn.Linear(16, 32))
    model.add_module("act", torch.nn.ReLU())
    model.add_module("fc2", torch.nn.Linear(32, 4))
    # one rank's shard of a tensor-parallel weight, marked as Megatron-style libraries mark
    # them: it differs from rank to rank by design, and desync must leave it out
    shard = torch.randn(8, generator=torch.Generator().manual_seed(rank))
    model.register_parameter("tp_shard", torch.nn.Parameter(shard))
    model.tp_shard.tensor_model_parallel = True
    model.tp_shard.partition_dim = 0
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(100 + rank)  # each rank its own shard of data
    with labcoat.watch(model, opt, every=1, sync_every=5, events=events) as w:
        for step in range(STEPS):
            if scenario == "planted" and rank == world - 1 and step == DESYNC_STEP:
                with torch.no_grad():
                    model.fc2.bias.add_(1e-3)
            if scenario == "planted" and rank == 1 and step >= STRAGGLER_STEP:
                time.sleep(0.03)
            x = torch.randn(16, 16, generator=gen)
            y = x[:, :4].argmax(dim=1)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            for p in model.parameters():
                if p.grad is None:  # the shard, unused by this toy forward
                    continue
                dist.all_reduce(p.grad)
                p.grad /= world
            opt.step()
            w.observe(step=step, loss=loss)
    dist.destroy_process_group()


if __name__ == "__main__":
    scenario, rank, world, init_file, events = sys.argv[1:]
    main(scenario, int(rank), int(world), init_file, events)
