"""``straggler``: one rank's own step time is far above the others'.

Each rank times the work that is its own: from the end of the previous step to the first
forward call (data loading), the forward calls, and the optimizer step. Backward is left out
because under DDP it contains the gradient all-reduce, where fast ranks wait for the slow one
and would look just as slow. Ranks compare the median of these times since the previous
synchronisation; a rank ``ratio`` times slower than the median of the others, and slower by
at least ``min_gap_s``, is named.
"""

from __future__ import annotations

import math

import numpy as np

from labcoat.watch.invariants.base import INVARIANTS, Bound, CrossRankInvariant, Violation
from labcoat.watch.sample import CrossRank


@INVARIANTS.register
class Straggler(CrossRankInvariant):
    kind = "straggler"
    falsifies = "all ranks run at the same speed"
    predicts = "no rank's median own step time exceeds `ratio` times the others' median"
    severity = "warn"
    options = {
        "ratio": (2.0, Bound(float, 1.0, low_open=True)),
        "min_gap_s": (0.002, Bound(float, 0.0)),
    }

    def judge(self, cr: CrossRank, step: int) -> Violation | None:
        times = np.asarray(cr.step_times, dtype=float)
        if len(times) < 2 or not np.isfinite(times).all():
            return None
        slow = int(np.argmax(times))
        others = float(np.median(np.delete(times, slow)))
        t = float(times[slow])
        if t < self.ratio * others or t - others < self.min_gap_s:
            return None
        rank = cr.ranks[slow]
        ratio = t / others if others > 0 else math.inf
        return Violation(
            subject=f"rank {rank}",
            message=(
                f"rank {rank} is a straggler at step {step}: its own step time {t * 1e3:.3g} ms "
                f"is {ratio:.3g}x the median of the other ranks ({others * 1e3:.3g} ms)"
            ),
            value=t,
            evidence={
                "straggler_rank": rank,
                "ratio": ratio,
                "step_time_s_by_rank": {str(r): float(x) for r, x in zip(cr.ranks, times)},
            },
        )
