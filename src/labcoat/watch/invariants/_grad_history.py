"""The per-parameter gradient-norm history that grad_explode and grad_vanish judge against.

Norms are kept on a log10 scale in a ring buffer of the last ``window`` samples, one column per
parameter; a parameter with no gradient at a sample gets NaN there.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

from labcoat.watch.invariants.base import Bound, Invariant, Violation
from labcoat.watch.sample import WatchContext

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

    def row(self, grad_norms: Mapping[str, float]) -> tuple[np.ndarray, float]:
        """This sample as a log10 row (NaN: no gradient) and the log10 total norm (NaN if none
        or non-finite)."""
        cached = _last
        if cached[0] is grad_norms and cached[1] == self.names:  # the other invariant's work
            return cached[2].copy(), cached[3]
        nan = math.nan
        if not grad_norms:
            return np.full(len(self.names), nan), nan
        if not math.isfinite(sum(grad_norms.values())):  # norms are >= 0
            return np.full(len(self.names), nan), nan  # the nonfinite invariant reports this
        values = [grad_norms.get(n, nan) for n in self.names]
        if len(values) <= 64:  # a few dozen numbers: plain Python beats numpy's call overhead
            squares = sum(v * v for v in values if v == v)  # NaN marks "no gradient"
            row = np.array(
                [math.log10(v) if v > 0 else -math.inf if v == 0 else nan for v in values]
            )
        else:
            norms = np.array(values)
            present = norms[norms == norms]
            squares = float(present @ present)
            with np.errstate(divide="ignore"):
                row = np.log10(norms)  # a zero norm is -inf; no gradient stays NaN
        total = math.log10(math.sqrt(squares)) if squares > 0 else -math.inf
        _last[:] = [grad_norms, self.names, row, total]
        return row.copy(), total

    def push(self, row: np.ndarray, total: float) -> None:
        slot = self.count % self.window
        # zero norms (log -inf) are kept out of the history: they carry no scale to judge against
        self.logs[slot] = np.where(np.isfinite(row), row, np.nan)
        self.total[slot] = total if math.isfinite(total) else np.nan
        self.count += 1

    def state_dict(self) -> dict:
        return {"logs": self.logs.tolist(), "total": self.total.tolist(), "count": self.count}

    def load_state_dict(self, state: Mapping) -> None:
        self.logs = np.asarray(state["logs"], dtype=float).reshape(self.logs.shape)
        self.total = np.asarray(state["total"], dtype=float).reshape(self.total.shape)
        self.count = int(state["count"])

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
