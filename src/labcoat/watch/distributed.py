"""Comparing ranks under ``torch.distributed``: which rank we are, how long our own work takes,
and one all-gather every N steps that carries both the replicated tensors' checksums
(for ``desync``) and the step times (for ``straggler``).

Checksums are the L1 and L2 norms of each replicated tensor: two fused reductions on the
device, a few bytes per tensor on the wire, and a different value as soon as any element
differs by more than rounding.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch

from labcoat.watch.probes import fused_norms
from labcoat.watch.sample import CrossRank


@dataclass(frozen=True)
class RankInfo:
    """This process's place in the process group (rank ``None`` outside torch.distributed)."""

    rank: int | None
    world_size: int
    group: Any = None
    backend: str | None = None

    @classmethod
    def current(cls, group: Any = None) -> "RankInfo":
        dist = torch.distributed
        if not (dist.is_available() and dist.is_initialized()):
            return cls(rank=None, world_size=1)
        return cls(
            rank=dist.get_rank(),
            world_size=dist.get_world_size(group),
            group=group,
            backend=str(dist.get_backend(group)),
        )

    def group_ranks(self) -> tuple[int, ...]:
        """Global ranks of the group's members, in group order."""
        dist = torch.distributed
        if self.group is None:
            return tuple(range(self.world_size))
        return tuple(dist.get_global_rank(self.group, i) for i in range(self.world_size))


class StepClock:
    """Times the part of each step that is this rank's own work.

    Own time = (first forward start - end of the previous ``observe``) + the forward calls +
    the optimizer step. Backward is excluded (see :mod:`labcoat.watch.invariants.straggler`);
    so is the watch's own synchronisation inside ``observe``. Without forward calls (a model
    driven some other way) the whole time between ``observe`` calls is used. Times are host
    clock times: on an accelerator they see data loading and launch overhead, not kernels.
    """

    #: a median over fewer steps than this is noise, not a measurement
    MIN_STEPS = 3

    def __init__(self) -> None:
        self.times: list[float] = []
        self._laps = 0
        self._mark = time.perf_counter()
        self._first_forward: float | None = None
        self._forward_total = 0.0
        self._forward_started: float | None = None
        self._step_total = 0.0
        self._step_started: float | None = None

    def forward_start(self) -> None:
        now = time.perf_counter()
        if self._first_forward is None:
            self._first_forward = now
        self._forward_started = now

    def forward_end(self) -> None:
        if self._forward_started is not None:
            self._forward_total += time.perf_counter() - self._forward_started
            self._forward_started = None

    def step_start(self) -> None:
        self._step_started = time.perf_counter()

    def step_end(self) -> None:
        if self._step_started is not None:
            self._step_total += time.perf_counter() - self._step_started
            self._step_started = None

    def lap(self) -> None:
        """Close the current step (called from ``observe``)."""
        now = time.perf_counter()
        if self._first_forward is None:
            own = now - self._mark
        else:
            own = (self._first_forward - self._mark) + self._forward_total + self._step_total
        self._laps += 1
        if self._laps > 1:  # the first step pays one-off costs (allocation, autograd warm-up)
            self.times.append(own)
        self._first_forward = None
        self._forward_total = 0.0
        self._step_total = 0.0

    def restart(self) -> None:
        """Start the next step's clock now (after the watch's own work in ``observe``)."""
        self._mark = time.perf_counter()

    def take_median(self) -> float:
        """Median own time since the last call (NaN if fewer than ``MIN_STEPS`` were timed)."""
        times, self.times = self.times, []
        return statistics.median(times) if len(times) >= self.MIN_STEPS else float("nan")


class Synchronizer:
    """One all-gather of checksums and step time across the ranks of a group."""

    def __init__(self, names: Sequence[str], tensors: Sequence[torch.Tensor], info: RankInfo):
        self.names = tuple(names)
        self.tensors = list(tensors)
        self.info = info
        self.ranks = info.group_ranks()
        if info.backend == "nccl":
            self.device = torch.device("cuda", torch.cuda.current_device())
        else:
            self.device = torch.device("cpu")

    def gather(self, step_time: float) -> CrossRank:
        local = torch.cat(
            [
                fused_norms(self.tensors, 1.0).to(self.device),
                fused_norms(self.tensors, 2.0).to(self.device),
                torch.tensor([step_time], dtype=torch.float64, device=self.device),
            ]
        )
        slots = [torch.empty_like(local) for _ in range(self.info.world_size)]
        torch.distributed.all_gather(slots, local, group=self.info.group)
        table = torch.stack(slots).cpu().numpy()  # [rank, 2P + 1], one transfer
        n = len(self.tensors)
        checksums = np.stack([table[:, :n], table[:, n : 2 * n]], axis=-1)
        return CrossRank(
            ranks=self.ranks, names=self.names, checksums=checksums, step_times=table[:, -1]
        )
