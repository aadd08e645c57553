"""The built-in watch invariants, one module per alert kind, all in :data:`INVARIANTS`."""

from labcoat.watch.invariants.base import INVARIANTS, Bound, Invariant, Violation, create
from labcoat.watch.invariants.desync import Desync
from labcoat.watch.invariants.eval_mode import EvalMode
from labcoat.watch.invariants.frozen_moved import FrozenMoved
from labcoat.watch.invariants.grad_explode import GradExplode
from labcoat.watch.invariants.grad_vanish import GradVanish
from labcoat.watch.invariants.lr_zero import LrZero
from labcoat.watch.invariants.no_step import NoStep
from labcoat.watch.invariants.no_trend import NoTrend
from labcoat.watch.invariants.nonfinite import NonFinite
from labcoat.watch.invariants.repeat_batch import RepeatBatch
from labcoat.watch.invariants.resume_jump import ResumeJump
from labcoat.watch.invariants.spike import Spike
from labcoat.watch.invariants.stale import Stale
from labcoat.watch.invariants.straggler import Straggler

__all__ = [
    "INVARIANTS",
    "Bound",
    "Desync",
    "EvalMode",
    "FrozenMoved",
    "GradExplode",
    "GradVanish",
    "Invariant",
    "LrZero",
    "NoStep",
    "NoTrend",
    "NonFinite",
    "RepeatBatch",
    "ResumeJump",
    "Spike",
    "Stale",
    "Straggler",
    "Violation",
    "create",
]
