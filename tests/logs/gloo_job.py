"""One rank of a small data-parallel run on gloo, started by torchrun, for the logs tests.

``torchrun --standalone --nproc-per-node N gloo_job.py SCENARIO``. Every rank trains the same
MLP on its shard (a DataLoader over a TensorDataset), averages gradients with an all-reduce,
logs through ``logging`` and prints its loss each step (before the all-reduce, as many scripts
do), with the chatter of a real run: a banner, a library warning, an INFO line per epoch.
SCENARIO plants one fault on the last rank at step ``K``:

- ``healthy``: nothing;
- ``raise``: it raises a RuntimeError;
- ``hang``: it stops (sleeps), so the others time out in the all-reduce;
- ``nan``: its inputs become NaN, so its loss is NaN (and, averaged, everyone's next);
- ``oom``: it asks torch for an impossible allocation (the allocator's real error);
- ``slow``: from step K it takes 0.3 s longer to load each batch.
"""

from __future__ import annotations

import logging
import os
import sys
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset

import labcoat.logs

K = 12
STEPS = 30


def main(scenario: str) -> None:
    torch.set_num_threads(1)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    log = logging.getLogger("train")
    timeout = float(os.environ.get("GLOO_JOB_TIMEOUT", "8"))
    dist.init_process_group("gloo", timeout=timedelta(seconds=timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    faulty = world - 1
    print(f"=== toy trainer v0.1 on rank {rank} of {world} ===", flush=True)
    log.info("loading dataset shard %d of %d", rank, world)
    warnings.warn("this toy trainer ignores --compile", UserWarning)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(STEPS * 8, 8, generator=g)
    y = x.sum(1, keepdim=True)
    loader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=False)
    for step, (xb, yb) in enumerate(loader):
        labcoat.logs.step(step)
        if step % 10 == 0:
            log.info("epoch 0: %d batches done", step)
        if rank == faulty and step >= K and scenario == "slow":
            time.sleep(0.3)
        if rank == faulty and step == K:
            if scenario == "raise":
                raise RuntimeError(f"planted failure in the loss at step {step}")
            if scenario == "hang":
                time.sleep(600)
            if scenario == "nan":
                xb = xb * float("nan")
            if scenario == "oom":
                torch.empty(1 << 46, dtype=torch.float32)
        loss = torch.nn.functional.mse_loss(model(xb), yb)
        print(f"step {step} loss {loss.item():.4f}", flush=True)
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        opt.step()
        time.sleep(0.02)
    log.info("training done: final loss %.4f", loss.item())
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
