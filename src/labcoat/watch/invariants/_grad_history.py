"""The per-parameter gradient-norm history that grad_explode and grad_vanish judge against.

Norms are kept on a log10 scale in a ring buffer of the last ``window`` samples, one column per
parameter; a parameter with no gradient at a sample gets NaN there.

Most samples cannot be a violation, and telling so must cost far less than the robust
statistics that judge one: right after a training step each numpy call costs microseconds
while its code is out of the caches. The history therefore also keeps screening bounds: an
upper bound on each parameter's largest recent log-norm, a lower bound on the smallest recent
total, and the sample at which each parameter last lacked a finite norm. The bounds are
recomputed from the window once per ``window`` samples and in between only widen, so a screen
can send a sample to the full judgement needlessly but never wave a violation through. Up to
:data:`SMALL` parameters the per-sample bookkeeping is plain Python, above it numpy.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

from labcoat.watch.invariants.base import Bound, Invariant, Violation
from labcoat.watch.sample import WatchContext

#: up to this many parameters a sample's row is a list handled in plain Python
SMALL = 64
#: the last (grad_norms, names, row, total): grad_explode and grad_vanish read the same sample
_last: list = [None, None, None, None]


class GradHistory:
    def __init__(self, names: Sequence[str], window: int):
        self.names = tuple(names)
        self.index = {n: i for i, n in enumerate(self.names)}
        self.window = window
        self.logs = np.full((window, len(self.names)), np.nan)
        self.total = np.full(window, np.nan)
        self.count = 0
        self._small = len(self.names) <= SMALL
        self._bounds()

    def row(self, grad_norms: Mapping[str, float]) -> tuple[list[float] | np.ndarray, float]:
        """This sample as a log10 row (NaN: no gradient; read-only, shared with the other
        invariant) and the log10 total norm (NaN if none or non-finite)."""
        cached = _last
        if cached[0] is grad_norms and cached[1] == self.names:  # the other invariant's work
            return cached[2], cached[3]
        nan = math.nan
        if not grad_norms:
            return [nan] * len(self.names), nan
        if not math.isfinite(sum(grad_norms.values())):  # norms are >= 0
            return [nan] * len(self.names), nan  # the nonfinite invariant reports this
        values = [grad_norms.get(n, nan) for n in self.names]
        row: list[float] | np.ndarray
        if self._small:  # a few dozen numbers: plain Python beats numpy's call overhead
            squares = sum(v * v for v in values if v == v)  # NaN marks "no gradient"
            row = [math.log10(v) if v > 0 else -math.inf if v == 0 else nan for v in values]
        else:
            norms = np.array(values)
            present = norms[norms == norms]
            squares = float(present @ present)
            with np.errstate(divide="ignore"):
                row = np.log10(norms)  # a zero norm is -inf; no gradient stays NaN
        total = math.log10(math.sqrt(squares)) if squares > 0 else -math.inf
        _last[:] = [grad_norms, self.names, row, total]
        return row, total

    def push(self, row: list[float] | np.ndarray, total: float) -> None:
        slot = self.count % self.window
        # zero norms (log -inf) are kept out of the history: they carry no scale to judge against
        if self._small:
            stored = [v if -math.inf < v < math.inf else math.nan for v in row]
            ceiling, gaps = self._ceiling, self._last_gap
            for j, v in enumerate(stored):
                if v != v:
                    gaps[j] = self.count
                elif not v <= ceiling[j]:  # also when the ceiling is NaN (no history yet)
                    ceiling[j] = v
            self.logs[slot] = stored
        else:
            kept = np.where(np.isfinite(row), row, np.nan)
            self.logs[slot] = kept
            np.fmax(self._ceiling, kept, out=self._ceiling)
            self._last_gap[np.isnan(kept)] = self.count
        total = total if math.isfinite(total) else math.nan
        self.total[slot] = total
        if total < self._floor:
            self._floor = total
        self.count += 1
        if self.count % self.window == 0:
            self._bounds()

    def may_explode(self, total: float, rise: float) -> bool:
        """False only if ``total`` is not ``rise`` (log10) above even the smallest recent total,
        and so not above their median either."""
        return total >= self._floor + rise

    def may_vanish(self, row: list[float] | np.ndarray, drop: float) -> bool:
        """False only if no parameter is ``drop`` (log10) below its largest recent norm (and so
        below its median), and none that had a gradient at every recent sample lacks one."""
        in_window = self.count - self.filled  # the first sample still in the window
        if self._small:
            for v, top, gap in zip(row, self._ceiling, self._last_gap):
                if v != v:
                    if gap < in_window:
                        return True
                elif v <= top - drop:
                    return True
            return False
        missing = np.isnan(row)
        if (row <= self._ceiling - drop).any():
            return True
        return bool(missing.any() and (missing & (self._last_gap < in_window)).any())

    def _bounds(self) -> None:
        """The screening bounds, exact for the window as it is now."""
        filled = self.filled
        past, totals = self.logs[:filled], self.total[:filled]
        width = len(self.names)
        ceiling = np.full(width, np.nan)
        last_gap = np.full(width, -1, dtype=np.int64)
        floor = math.inf
        if filled:
            with np.errstate(all="ignore"):
                ceiling = np.fmax.reduce(past, axis=0)  # NaN where a column has no value
                low = float(np.fmin.reduce(totals))
            floor = low if low == low else math.inf
            # the sample each slot holds: the latest one before `count` that maps to it
            slots = np.arange(filled)
            held = slots + (self.count - 1 - slots) // self.window * self.window
            last_gap = np.where(np.isnan(past), held[:, None], -1).max(axis=0)
        self._floor = floor
        if self._small:
            self._ceiling: list[float] | np.ndarray = ceiling.tolist()
            self._last_gap: list[int] | np.ndarray = last_gap.tolist()
        else:
            self._ceiling, self._last_gap = ceiling, last_gap

    def state_dict(self) -> dict:
        return {"logs": self.logs.tolist(), "total": self.total.tolist(), "count": self.count}

    def load_state_dict(self, state: Mapping) -> None:
        self.logs = np.asarray(state["logs"], dtype=float).reshape(self.logs.shape)
        self.total = np.asarray(state["total"], dtype=float).reshape(self.total.shape)
        self.count = int(state["count"])
        self._bounds()

    @property
    def filled(self) -> int:
        return min(self.count, self.window)

    def past_logs(self) -> np.ndarray:
        return self.logs[: self.filled]

    def past_total(self) -> np.ndarray:
        return self.total[: self.filled]


def window_options(factor: float) -> dict:
    """The options grad_explode and grad_vanish share; ``factor`` is each one's default ratio."""
    return {
        "window": (50, Bound(int, 5)),
        "min_history": (10, Bound(int, 3)),
        "factor": (factor, Bound(float, 1.0, low_open=True)),
        "z": (6.0, Bound(float, 0.0, low_open=True)),
    }


class GradWindowInvariant(Invariant):
    """An invariant judged against the recent gradient norms: the history is its state, and
    ``found`` the violation of the latest sample (a subclass writes :meth:`update`)."""

    needs = frozenset({"grad_norms"})
    history: GradHistory
    found: Violation | None

    def setup(self, context: WatchContext) -> None:
        super().setup(context)
        self.add_state("history", GradHistory(context.param_names, self.window))
        self.add_state("found", None)

    def compute(self) -> list[Violation]:
        return [] if self.found is None else [self.found]
