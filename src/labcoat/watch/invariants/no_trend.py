"""``no_trend``: the loss shows no decrease where one is expected.

A run is judged stuck when a statistical test, not a fixed threshold, finds neither a
decreasing trend over the last ``window`` losses (Mann–Kendall, i.e. Kendall's tau between
step and loss, one-sided) nor a net decrease of that window against the run's first
``window`` losses (one-sided Mann–Whitney U). A run that learned and then plateaued keeps its
net decrease and stays quiet; a run that never learned, or that fell back to where it started,
is flagged. Theil–Sen's slope over the window goes in the evidence.
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
        # the test costs a few hundred microseconds: run it every tenth of a window
        if len(self.recent) == self.window and self.untested >= max(1, self.window // 10):
            self.untested = 0
            self.verdict = self._test()

    def _test(self) -> Violation | None:
        steps = np.array([s for s, _ in self.recent], dtype=float)
        losses = np.array([v for _, v in self.recent], dtype=float)
        trend = stats.kendalltau(steps, losses, alternative="less")
        p_trend = 1.0 if math.isnan(trend.pvalue) else float(trend.pvalue)
        if p_trend < self.alpha:
            return None
        p_net = None
        if self.seen >= 2 * self.window:  # the two windows do not overlap
            p_net = float(stats.mannwhitneyu(losses, self.first, alternative="less").pvalue)
            if p_net < self.alpha:
                return None
        slope = float(stats.theilslopes(losses, steps).slope)
        since = (
            f"nor below the first {self.window} losses (Mann–Whitney p={p_net:.2g})"
            if p_net is not None
            else "since the start of the run"
        )
        return Violation(
            subject="loss",
            message=(
                f"no decrease in the loss over the last {self.window} steps (Mann–Kendall "
                f"p={p_trend:.2g}, Theil–Sen slope {slope:+.3g}/step) {since}"
            ),
            value=p_trend,
            evidence={
                "window": self.window,
                "p_trend": p_trend,
                "p_net_decrease": p_net,
                "theil_sen_slope": slope,
                "kendall_tau": float(trend.statistic) if not math.isnan(trend.statistic) else None,
                "window_steps": [int(steps[0]), int(steps[-1])],
                "window_median": float(np.median(losses)),
                "first_window_median": float(np.median(self.first)),
            },
        )

    def compute(self) -> list[Violation]:
        return [] if self.verdict is None else [self.verdict]
