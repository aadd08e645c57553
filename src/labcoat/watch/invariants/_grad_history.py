"""The per-parameter gradient-norm history that grad_explode and grad_vanish judge against.

Norms are kept on a log10 scale in a ring buffer of the last ``window`` samples, one column per
parameter; a parameter with no gradient at a sample gets NaN there.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np


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
        row = np.full(len(self.names), np.nan)
        squares = 0.0
        for name, norm in grad_norms.items():
            i = self.index.get(name)
            if i is None:
                continue
            if not math.isfinite(norm):
                return row, math.nan  # the nonfinite invariant reports this sample
            row[i] = math.log10(norm) if norm > 0 else -math.inf
            squares += norm * norm
        total = math.log10(math.sqrt(squares)) if squares > 0 else (-math.inf if grad_norms else math.nan)
        return row, total

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
