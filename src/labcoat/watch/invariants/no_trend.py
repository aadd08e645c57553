"""``no_trend``: the loss shows no decrease where one is expected.

A run is judged stuck only when two one-sided tests at level ``alpha`` agree: Mann–Kendall
(Kendall's tau between step and loss) finds no significant downward trend over the last
``window`` losses, *and* Mann–Whitney U finds that window no lower than the run's first
``window`` losses. The second test needs the two windows apart, so nothing is judged before
``2 * window`` losses: early in a noisy run (small batches, plain SGD) a real but slow
decrease is often not yet significant over one window, and "no significant trend" alone is
not evidence of a stuck run. A run that learned and then plateaued keeps its net decrease and
stays quiet; a run that never learned, or that climbed back to where it started, is flagged.
Theil–Sen's slope over the window goes in the evidence.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np
from scipy import stats

from labcoat.watch.invariants.base import INVARIANTS, Bound, Invariant, Violation
from labcoat.watch.sample import Sample, WatchContext


@INVARIANTS.register
class NoTrend(Invariant):
    kind = "no_trend"
    falsifies = "the model is learning"
    predicts = (
        "over the last `window` steps the loss trends down, or it is significantly below the "
        "run's first `window` losses (one-sided tests at level `alpha`)"
    )
    severity = "warn"
    needs = frozenset({"losses"})
    options = {
        "window": (100, Bound(int, 10)),
        "alpha": (0.01, Bound(float, 0.0, 0.5, low_open=True)),
    }

    def setup(self, context: WatchContext) -> None:
        super().setup(context)
        self.add_state("first", [])
        self.add_state("recent", deque(maxlen=self.window))
        self.add_state("seen", 0)
        self.add_state("untested", 0)
        self.add_state("verdict", None)

    def update(self, sample: Sample) -> None:
        for step, loss in sample.losses:
            if not math.isfinite(loss):
                continue  # the nonfinite invariant reports these
            if len(self.first) < self.window:
                self.first.append(loss)
            self.recent.append((step, loss))
            self.seen += 1
            self.untested += 1
        # the tests cost a few hundred microseconds right after a training step, whatever
        # `every` is: run them every half window (the cheap one, which settles a run that is
        # learning, first), so a stuck run is flagged at its 2*window-th loss and a change of
        # verdict shows within half a window
        if self.seen >= 2 * self.window and self.untested >= max(1, self.window // 2):
            self.untested = 0
            self.verdict = self._test()

    def _test(self) -> Violation | None:
        steps = np.array([s for s, _ in self.recent], dtype=float)
        losses = np.array([v for _, v in self.recent], dtype=float)
        p_net = mann_whitney_less(losses, np.asarray(self.first, dtype=float))
        if p_net < self.alpha:
            return None
        trend = stats.kendalltau(steps, losses, alternative="less")
        p_trend = 1.0 if math.isnan(trend.pvalue) else float(trend.pvalue)
        if p_trend < self.alpha:
            return None
        slope = float(stats.theilslopes(losses, steps).slope)
        return Violation(
            subject="loss",
            message=(
                f"the loss has not decreased significantly: over the last {self.window} steps "
                f"no downward trend (Mann–Kendall p={p_trend:.2g}, Theil–Sen slope "
                f"{slope:+.3g}/step) and not below the run's first {self.window} losses "
                f"(Mann–Whitney p={p_net:.2g}; both tests at level {self.alpha:g})"
            ),
            value=p_trend,
            evidence={
                "window": self.window,
                "alpha": self.alpha,
                "pvalue_trend": p_trend,
                "pvalue_net_decrease": p_net,
                "theil_sen_slope": slope,
                "kendall_tau": float(trend.statistic) if not math.isnan(trend.statistic) else None,
                "window_steps": [int(steps[0]), int(steps[-1])],
                "window_median": float(np.median(losses)),
                "first_window_median": float(np.median(self.first)),
            },
        )

    def compute(self) -> list[Violation]:
        return [] if self.verdict is None else [self.verdict]


def mann_whitney_less(x: np.ndarray, y: np.ndarray) -> float:
    """One-sided p-value that ``x`` tends to be smaller than ``y``: Mann–Whitney U with the
    normal approximation, tie and continuity corrections, as ``scipy.stats.mannwhitneyu(x, y,
    alternative="less")`` computes it for samples this large (tested against it). scipy's
    argument handling costs a millisecond a call, which a per-step watch cannot afford."""
    n1, n2 = len(x), len(y)
    ys = np.sort(y)
    below = np.searchsorted(ys, x, side="left")
    upto = np.searchsorted(ys, x, side="right")
    u1 = float(below.sum() + 0.5 * (upto - below).sum())  # pairs with x > y, ties half
    u2 = n1 * n2 - u1
    _, counts = np.unique(np.concatenate([x, y]), return_counts=True)
    n = n1 + n2
    ties = float((counts.astype(float) ** 3 - counts).sum())
    s = math.sqrt(n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1))))
    if s == 0:
        return 1.0
    z = (u2 - n1 * n2 / 2 - 0.5) / s
    return 0.5 * math.erfc(z / math.sqrt(2))
