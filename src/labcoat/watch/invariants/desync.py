"""``desync``: replicated parameters differ across ranks.

Every rank holds the same copy of a replicated tensor (all of them under DDP; the layer norms
under tensor parallelism), so their norms must agree. When they do not, the ranks are grouped
by agreement and the ones outside the largest group are named as culprits; with no strict
majority (two ranks, or a tie) every disagreeing rank is listed. All ranks compute the same
verdict from the same gathered numbers, so the copies merge into one alert when reported.
"""

from __future__ import annotations

import numpy as np

from labcoat.watch.invariants.base import INVARIANTS, Bound, CrossRankInvariant, Violation
from labcoat.watch.sample import CrossRank


@INVARIANTS.register
class Desync(CrossRankInvariant):
    kind = "desync"
    falsifies = "replicated parameters are identical on every rank"
    predicts = "the L1 and L2 norms of each replicated tensor agree across ranks within `rtol`"
    options = {"rtol": (1e-6, Bound(float, 0.0))}

    def judge(self, cr: CrossRank, step: int) -> Violation | None:
        sums = cr.checksums  # [rank, tensor, 2]
        scale = np.maximum(np.abs(sums).max(axis=0, keepdims=True), 1e-30)
        # agree[i, j, t]: ranks i and j agree on tensor t
        close = np.abs(sums[:, None] - sums[None, :]) <= self.rtol * scale[None]
        agree = close.all(axis=-1)
        differing = np.flatnonzero(~agree.all(axis=(0, 1)))
        if differing.size == 0:
            return None
        t = int(differing[0])
        name = cr.names[t]
        support = agree[:, :, t].sum(axis=1)  # how many ranks agree with each rank
        best = support.max()
        leaders = np.flatnonzero(support == best)
        majority = [i for i in range(len(cr.ranks)) if agree[leaders[0], i, t]]
        clear = 2 * best > len(cr.ranks) and all(agree[leaders[0], j, t] for j in leaders)
        if clear:
            culprits = [cr.ranks[i] for i in range(len(cr.ranks)) if i not in majority]
            reference = [cr.ranks[i] for i in majority]
            who = (
                f"rank{'s' if len(culprits) > 1 else ''} {_join(culprits)} disagree"
                f"{'s' if len(culprits) == 1 else ''} with rank{'s' if len(reference) > 1 else ''} "
                f"{_join(reference)}"
            )
        else:
            culprits = list(cr.ranks)
            reference = []
            who = f"ranks {_join(culprits)} disagree with no majority to tell which drifted"
        per_rank = {str(r): float(sums[i, t, 1]) for i, r in enumerate(cr.ranks)}
        more = f"; {differing.size - 1} more tensors differ" if differing.size > 1 else ""
        return Violation(
            subject=name,
            message=f"replicated tensor {name!r} differs across ranks at step {step}: {who}{more}",
            value=float(np.ptp(sums[:, t, 1])),
            evidence={
                "tensor": name,
                "culprit_ranks": culprits,
                "majority_ranks": reference,
                "l2_norm_by_rank": per_rank,
                "differing": [cr.names[i] for i in differing[:50]],
            },
        )


def _join(ranks: list[int]) -> str:
    return ", ".join(str(r) for r in ranks)
