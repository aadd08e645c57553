"""The per-parameter gradient-norm history that grad_explode and grad_vanish judge against.

Norms are kept on a log10 scale in a ring buffer of the last ``window`` samples, one column per
parameter; a parameter with no gradient at a sample gets NaN there.

Most samples cannot be a violation, and telling so must cost far less than the robust
statistics that judge one: right after a training step each numpy call costs microseconds
while its code is out of the caches. So the history also answers the invariants' first
question cheaply (:meth:`GradHistory.may_explode`, :meth:`GradHistory.may_vanish`): is the
sample far enough from the recent median to be judged at all? Up to :data:`SMALL` parameters
the ring is plain Python with each column's finite values kept sorted, so the screens use the
exact medians. Above it the ring is numpy and the screens use bounds: each parameter's largest
recent value and the smallest recent total, recomputed from the window once per ``window``
samples and in between only widened, so they may send a sample on needlessly but never wave a
violation through. Either way the sample at which each parameter last lacked a finite norm is
kept exactly, for a gradient that goes missing (a sample with no finite norm at all is no gap
of any one parameter).

grad_explode and grad_vanish judge the same rows over windows of the same length, so by
a judge gives them one history (:func:`share_histories`): each judges a sample against the
window before it, and a pushed row joins the window when the next sample's row is taken (or
the state is saved), whichever of the two pushed it first.
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from typing import Mapping, Sequence

import numpy as np

from labcoat.watch.invariants._robust import median_of
from labcoat.watch.invariants.base import Bound, Invariant, Violation
from labcoat.watch.sample import WatchContext

#: up to this many parameters a sample's row is a list handled in plain Python
SMALL = 64
#: slack (log10 units) for the screens, so rounding never makes them stricter than the judgement
_SLACK = 1e-9


class GradHistory:
    def __init__(self, names: Sequence[str], window: int):
        self.names = tuple(names)
        self.index = {n: i for i, n in enumerate(self.names)}
        self.window = window
        self.count = 0
        self._small = len(self.names) <= SMALL
        # the last sample's (grad_norms, row, total), and the row pushed but not yet in the window
        self._last: tuple | None = None
        self._pushed: tuple | None = None
        self._load(np.full((window, len(self.names)), np.nan), np.full(window, np.nan))

    def row(self, grad_norms: Mapping[str, float]) -> tuple[list[float] | np.ndarray, float]:
        """This sample as a log10 row (NaN: no gradient; read-only, shared with the other
        invariant) and the log10 total norm (NaN if none or non-finite). A new sample first
        puts the previous one's pushed row into the window."""
        last = self._last
        if last is not None and last[0] is grad_norms:  # the other invariant's work
            return last[1], last[2]
        self.settle()
        nan = math.nan
        row: list[float] | np.ndarray
        if not grad_norms or not math.isfinite(sum(grad_norms.values())):  # norms are >= 0
            row, total = [nan] * len(self.names), nan  # non-finite: the nonfinite invariant's
        else:
            values = [grad_norms.get(n, nan) for n in self.names]
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
        self._last = (grad_norms, row, total)
        return row, total

    def push(self, row: list[float] | np.ndarray, total: float) -> None:
        """Add this sample's row; it joins the window at :meth:`settle` (pushing it twice, as
        both invariants do, adds it once)."""
        if self._pushed is not None and self._pushed[0] is row:
            return
        self.settle()
        self._pushed = (row, total)

    def settle(self) -> None:
        """Put the pushed row into the window."""
        if self._pushed is None:
            return
        row, total = self._pushed
        self._pushed = None
        slot = self.count % self.window
        total = total if math.isfinite(total) else math.nan
        # zero norms (log -inf) are kept out of the history: they carry no scale to judge against
        if self._small:
            stored = [v if -math.inf < v < math.inf else math.nan for v in row]
            empty = all(v != v for v in stored)  # no gradient at all: a gap of none in particular
            for j, (old, new) in enumerate(zip(self._rows[slot], stored)):
                column = self._columns[j]
                if old == old:  # not NaN: it leaves the window
                    del column[bisect_left(column, old)]
                if new == new:
                    insort(column, new)
                elif not empty:
                    self._last_gap[j] = self.count
            self._rows[slot] = stored
            old = self._totals[slot]
            if old == old:
                del self._sorted_totals[bisect_left(self._sorted_totals, old)]
            if total == total:
                insort(self._sorted_totals, total)
            self._totals[slot] = total
        else:
            kept = np.where(np.isfinite(row), row, np.nan)
            self.logs[slot] = kept
            np.fmax(self._ceiling, kept, out=self._ceiling)
            if not np.isnan(kept).all():
                self._last_gap[np.isnan(kept)] = self.count
            self.total[slot] = total
            if total < self._floor:
                self._floor = total
        self.count += 1
        if not self._small and self.count % self.window == 0:
            self._bounds()

    def may_explode(self, total: float, rise: float) -> bool:
        """False only if ``total`` is not ``rise`` (log10) above the recent median total."""
        if self._small:
            totals = self._sorted_totals
            return bool(totals) and total >= median_of(totals) + rise - _SLACK
        return total >= self._floor + rise  # above the median means above the smallest

    def may_vanish(self, row: list[float] | np.ndarray, drop: float) -> bool:
        """False only if no parameter is ``drop`` (log10) below its recent median, and none that
        had a gradient at every recent sample lacks one."""
        in_window = self.count - self.filled  # the first sample still in the window
        if self._small:
            for v, column, gap in zip(row, self._columns, self._last_gap):
                if v != v:
                    if gap < in_window:
                        return True
                elif column and v <= median_of(column) - drop + _SLACK:
                    return True
            return False
        missing = np.isnan(row)
        if (row <= self._ceiling - drop).any():  # below the median means below the largest
            return True
        return bool(missing.any() and (missing & (self._last_gap < in_window)).any())

    def _load(self, logs: np.ndarray, total: np.ndarray) -> None:
        """Take ``logs`` and ``total`` (slot order) as the window, with what the screens read."""
        filled = self.filled
        # the sample each slot holds: the latest one before `count` that maps to it
        slots = np.arange(filled)
        held = slots + (self.count - 1 - slots) // self.window * self.window
        gaps = np.isnan(logs[:filled]) & ~np.isnan(logs[:filled]).all(axis=1, keepdims=True)
        last_gap = np.where(gaps, held[:, None], -1).max(axis=0, initial=-1)
        if self._small:
            self._rows = logs.tolist()
            self._totals = total.tolist()
            self._columns = [sorted(v for v in col if v == v) for col in logs[:filled].T.tolist()]
            self._sorted_totals = sorted(v for v in total[:filled].tolist() if v == v)
            self._last_gap = last_gap.tolist()
        else:
            self.logs, self.total = logs, total
            self._last_gap = last_gap
            self._bounds()

    def _bounds(self) -> None:
        """The numpy screens' bounds, exact for the window as it is now."""
        filled = self.filled
        self._ceiling = np.full(len(self.names), np.nan)
        self._floor = math.inf
        if filled:
            with np.errstate(all="ignore"):
                self._ceiling = np.fmax.reduce(self.logs[:filled], axis=0)  # NaN: no values
                low = float(np.fmin.reduce(self.total[:filled]))
            self._floor = low if low == low else math.inf

    def state_dict(self) -> dict:
        self.settle()
        logs, total = self._arrays()
        return {"logs": logs.tolist(), "total": total.tolist(), "count": self.count}

    def load_state_dict(self, state: Mapping) -> None:
        self._last = self._pushed = None
        shape = (self.window, len(self.names))
        self.count = int(state["count"])
        logs = np.asarray(state["logs"], dtype=float).reshape(shape)
        self._load(logs, np.asarray(state["total"], dtype=float).reshape(self.window))

    def _arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if self._small:
            width = len(self.names)
            return np.array(self._rows, dtype=float).reshape(-1, width), np.array(self._totals)
        return self.logs, self.total

    @property
    def filled(self) -> int:
        return min(self.count, self.window)

    def past_logs(self) -> np.ndarray:
        """The window's rows (in slot order, NaN: no finite norm)."""
        return self._arrays()[0][: self.filled]

    def past_total(self) -> np.ndarray:
        return self._arrays()[1][: self.filled]

    def recent_totals(self) -> list[float]:
        """The window's finite totals, oldest first."""
        total = self._arrays()[1]
        start = self.count % self.window if self.count >= self.window else 0
        ordered = [*total[start : self.filled].tolist(), *total[:start].tolist()]
        return [v for v in ordered if math.isfinite(v)]


def share_histories(invariants: Sequence[Invariant]) -> None:
    """Give the gradient-window invariants of one run that keep equal windows one history
    (call after their setup, before the first sample)."""
    by_window: dict[int, GradHistory] = {}
    for inv in invariants:
        if isinstance(inv, GradWindowInvariant):
            inv.history = by_window.setdefault(inv.window, inv.history)


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
