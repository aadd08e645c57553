"""``spike``: one loss far above the recent distribution of losses.

"Far" is measured against the run itself: the median and MAD of the last ``window`` losses,
taken on a log scale while the losses are positive (per-batch losses are right-skewed, and
near convergence a plain MAD would call every hard batch a spike). A loss must be ``z``
robust standard deviations above the median *and* exceed it by a fraction ``rel``, so a
converged run whose loss barely moves is not alarmed by rounding.

Near convergence a classifier's per-batch losses are heavy-tailed: a few hard examples make a
batch 5-11x the median every 50 steps or so, while the MAD sees only the tight middle (a ResNet
with BatchNorm under SGD with momentum on digits: a batch 9.6x the median counted as 6 robust
SDs out while the window already held batches 3.2x and 6.6x the median). So a loss that passes
is judged again against the spread the window's own upper tail implies: its second-largest
deviation from the local median (of 9 neighbours, so a learning curve's early, higher losses
are not taken for a tail), read as where the second largest of as many normal draws sits, and
at most :data:`TAIL_WIDENS` times the MAD's spread, so a batch hundreds of times the median (a
corrupted one) still stands out. A window of nearly normal losses keeps its MAD, so a 1.5x
spike of a language model's loss, averaged over many tokens, still does too. Tuned on the
ResNet above and the synthetic windows of tests/watch/test_false_alarm_classes.py.

A loss that still stands out is no spike if the window already holds a *precedent*: a loss at
least half as far above its own neighbours, and at least half the ratio (a loss 300x the
median needs one 150x its neighbours; see _robust.precedented). Multi-task training that draws
a task per batch mixes losses of different scales: each batch of a rarer task with a larger
loss (1 in 7, 17x the others') stood 60 robust SDs out, at every one of them. A corrupted batch
has no precedent the first time; a task that comes back within the window has one. A task
rarer than one batch per window is still reported at each return.
"""

from __future__ import annotations

import math
from collections import deque
from statistics import NormalDist

from labcoat.watch.invariants._robust import (
    local_deviations,
    median_of,
    precedented,
    robust_scale,
)
from labcoat.watch.invariants.base import INVARIANTS, Bound, Invariant, Violation
from labcoat.watch.sample import Sample, WatchContext

#: the log of 2: a precedent stood out by at least half the ratio (see _robust.precedented)
_HALF = math.log(2)
#: the upper tail may widen the spread a spike is judged against at most this many times
TAIL_WIDENS = 2.0


@INVARIANTS.register
class Spike(Invariant):
    kind = "spike"
    falsifies = "every batch belongs to the same healthy run"
    predicts = "each loss stays within `z` robust standard deviations of the recent median"
    severity = "warn"
    needs = frozenset({"losses"})
    options = {
        "window": (50, Bound(int, 5)),
        "min_history": (20, Bound(int, 5)),
        "z": (6.0, Bound(float, 0.0, low_open=True)),
        "rel": (0.2, Bound(float, 0.0)),
    }

    def setup(self, context: WatchContext) -> None:
        super().setup(context)
        self.add_state("history", deque(maxlen=self.window))
        self.add_state("spikes", [])

    def update(self, sample: Sample) -> None:
        finite = [(s, v) for s, v in sample.losses if math.isfinite(v)]
        self.spikes = []
        if finite and len(self.history) >= min(self.min_history, self.window):
            self.spikes = self._judge(finite)
        self.history.extend(v for _, v in finite)

    def _judge(self, losses: list[tuple[int, float]]) -> list[tuple[int, float, float, float, str]]:
        past = sorted(self.history)
        log = past[0] > 0
        # a spike must exceed the median by `rel`; the lower middle value bounds the median
        # from below on either scale, so this screen settles most losses without more work
        low = past[(len(past) - 1) // 2]
        candidates = [(s, v) for s, v in losses if self.rel > 1 or v > low + self.rel * abs(low)]
        if not candidates:
            return []
        if log:
            logs = [math.log(v) for v in past]
            c = median_of(logs)
            sigma = robust_scale(logs, c)
            median = math.exp(c)
        else:
            c = median = median_of(past)
            sigma = robust_scale(past, c)
        out = []
        deviations: list[float] | None = None
        tail = sigma
        for step, loss in candidates:
            if loss <= median + self.rel * abs(median):
                continue
            deviation = (math.log(loss) if log else loss) - c
            if deviation / sigma < self.z:
                continue
            # rare from here on: the window's own tail is worked out only now
            if deviations is None:
                deviations = self._local_deviations(log)
                tail = min(max(sigma, _tail_scale(deviations)), TAIL_WIDENS * sigma)
            z = deviation / tail
            if z < self.z:
                continue
            if deviations and precedented(deviation, deviations[-1], _HALF if log else None):
                continue
            out.append((step, loss, median, z, "log" if log else "linear"))
        return out

    def _local_deviations(self, log: bool) -> list[float]:
        """The window's local deviations (see _robust), on the scale the losses are judged on;
        none for a window under 9."""
        values = [math.log(v) for v in self.history] if log else list(self.history)
        return local_deviations(values) if len(values) >= 9 else []

    def compute(self) -> list[Violation]:
        if not self.spikes:
            return []
        step, loss, median, z, scale = max(self.spikes, key=lambda t: t[3])
        times = f"{loss / median:.3g}x" if median > 0 else f"{loss - median:+.3g} over"
        return [
            Violation(
                subject="loss",
                message=(
                    f"loss {loss:.4g} at step {step} is {times} the median {median:.4g} of the "
                    f"last {len(self.history)} losses ({z:.0f} robust SDs, {scale} scale)"
                ),
                value=loss,
                evidence={
                    "spike_step": step,
                    "median": median,
                    "z": z,
                    "scale": scale,
                    "spike_steps": [s for s, *_ in self.spikes],
                },
            )
        ]


def _tail_scale(deviations: list[float]) -> float:
    """The spread the window's upper tail implies: its second-largest local deviation, read
    as where the second largest of as many normal draws sits (see the module docstring)."""
    n = len(deviations)
    return deviations[-2] / NormalDist().inv_cdf(1 - 2 / (n + 1)) if n >= 9 else 0.0
