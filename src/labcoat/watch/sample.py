"""What the watcher hands to invariants: the static :class:`WatchContext` of a run and one
:class:`Sample` per sampled step.

Samples hold plain Python numbers. The watcher computes them on the device and moves them to
the host in one transfer per sampled step, so invariants never touch a tensor and can be
tested with hand-made samples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Hashable, Literal, Mapping, Sequence

import numpy as np

#: why a tensor is expected not to change: declared by the user, or requires_grad=False
FrozenReason = Literal["declared", "requires_grad=False"]


@dataclass(frozen=True)
class WatchContext:
    """Facts about the watched run that do not change from step to step."""

    #: trainable and frozen parameter names, in ``model.named_parameters()`` order
    param_names: tuple[str, ...]
    #: tensors (parameters and, for declared modules, floating-point buffers) expected to stay put
    frozen: Mapping[str, FrozenReason]
    #: parameter names of each optimizer param group, in group order
    group_params: tuple[tuple[str, ...], ...]
    #: norms of the frozen tensors when the watch started
    frozen_baseline: Mapping[str, float]
    rank: int | None = None
    world_size: int = 1
    every: int = 1
    #: modules that compute differently in train and eval mode (dropout, batch norm's running
    #: statistics), each as "name (Type)"
    mode_dependent: tuple[str, ...] = ()


@dataclass(frozen=True)
class CrossRank:
    """What one synchronisation gathered from every rank of the group."""

    #: global rank of each row, in group order
    ranks: tuple[int, ...]
    #: names of the replicated tensors compared
    names: tuple[str, ...]
    #: ``[rank, tensor, (L1, L2)]`` norms of the replicated tensors
    checksums: np.ndarray
    #: each rank's median own step time (seconds) since the previous synchronisation
    step_times: np.ndarray


@dataclass(slots=True)
class Sample:
    """One sampled step (read-only by convention: one is made at every step at ``every=1``,
    and a frozen dataclass costs four times as much to make).

    ``losses`` holds every loss observed since the previous sample (not only this step's),
    so loss invariants see the whole curve even when tensors are sampled every N steps.
    ``grad_norms`` has an entry for each parameter that had a gradient when the optimizer
    stepped; ``param_versions`` (every parameter's in-place version counter) and
    ``param_norms`` were taken just before that step, so a non-finite parameter is seen before
    the update spreads it. ``param_norms`` holds every parameter at some samples and, at the
    others, only those whose counter the last step did not move (see
    :mod:`labcoat.watch.sampler`). ``applied_steps`` counts
    optimizer steps that ran since the previous sample; steps a GradScaler skipped do not.
    """

    step: int
    time: float
    losses: Sequence[tuple[int, float]] = ()
    applied_steps: int = 0
    lrs: Sequence[float | None] | None = None
    #: each group's base rate as an LR scheduler keeps it (``initial_lr``; None without one)
    base_lrs: Sequence[float | None] | None = None
    grad_norms: Mapping[str, float] | None = None
    #: parameters without a gradient whose ``requires_grad`` was False when the optimizer
    #: stepped (frozen on purpose, perhaps mid-run)
    grad_disabled: Sequence[str] = ()
    param_norms: Mapping[str, float] | None = None
    param_versions: Mapping[str, int] | None = None
    #: names of the parameters in the watched optimizer's groups when the norms were read
    optimizer_params: frozenset[str] | None = None
    frozen_norms: Mapping[str, float] | None = None
    #: parameters frozen by ``requires_grad=False`` whose version counter this sample's
    #: optimizer step moved (all of them when the step moved no counter at all, as optimizers
    #: that write through ``.data`` do); None: no step was watched
    frozen_stepped: frozenset[str] | None = None
    cross_rank: CrossRank | None = None
    #: ``||update|| / ||weights||`` of this step's optimizer step over all trained parameters,
    #: estimated on a strided sample of each tensor (None: no step, or not measured)
    update_ratio: float | None = None
    #: observe() calls since the previous sample
    observes: int = 0
    #: observe() calls since the last optimizer step that was applied
    unapplied: int = 0
    #: for each optimizer step applied since the previous sample, the observe() calls it took
    step_gaps: Sequence[int] = ()
    #: ``(observe index, step, fingerprint)`` of each batch passed to observe() since the
    #: previous sample (see :mod:`labcoat.watch.batches`)
    batches: Sequence[tuple[int, int, Hashable]] = ()
    #: ``model.training`` at each optimizer step since the previous sample
    train_modes: Sequence[bool] = ()

    def finite(self) -> bool:
        """Whether every loss and norm read at this step is finite (norms are >= 0, so a
        finite sum means each one is)."""
        for norms in (self.grad_norms, self.param_norms, self.frozen_norms):
            if norms and not math.isfinite(sum(norms.values())):
                return False
        return all(math.isfinite(v) for _, v in self.losses) and (
            self.update_ratio is None or math.isfinite(self.update_ratio)
        )
