"""A 2-rank data-parallel training script on the gloo backend, launched with torchrun by
tests/replay/test_distributed.py: each rank trains the same MLP (dropout included) on its own
shard of data and averages gradients with an all-reduce after backward, as
DistributedDataParallel does (DDP itself is left out only because constructing it imports
torch._dynamo, seconds per process). ``--desync-at K`` plants a desync: at step K, rank
``--desync-rank`` nudges its copy of the first layer's bias, and the ranks' copies differ from
then on."""

import argparse

import torch
import torch.distributed as dist
from torch import nn

import labcoat

parser = argparse.ArgumentParser()
parser.add_argument("--every", type=int, default=3)
parser.add_argument("--desync-at", type=int, default=-1)
parser.add_argument("--desync-rank", type=int, default=1)
args = parser.parse_args()

torch.set_num_threads(1)
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)  # the same initial weights on every rank
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 2))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
data = torch.Generator().manual_seed(100 + rank)  # each rank its own shard

with labcoat.replayable(
    model=model, optimizer=opt, every=args.every, ledger=False, generators={"data": data}
) as rec:
    for epoch in rec.loop("epoch", range(2)):
        for i in rec.loop("step", range(6)):
            if rec.step == args.desync_at and rank == args.desync_rank:
                with torch.no_grad():
                    model[0].bias.add_(1e-3)
            x = torch.randn(16, 8, generator=data)
            y = (x[:, 0] > 0).long()
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            for p in model.parameters():
                dist.all_reduce(p.grad)
                p.grad /= world
            opt.step()
            rec.log(loss=loss)
dist.destroy_process_group()
