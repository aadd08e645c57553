"""The one interval type across labcoat: every engine's ``ci`` is a :class:`ConfidenceInterval`.

A two-field named tuple (``low``, ``high``), as in ``scipy.stats``, so ``lo, hi = result.ci``
works everywhere. Nothing here imports numpy.
"""

from __future__ import annotations

from typing import NamedTuple


class ConfidenceInterval(NamedTuple):
    """A two-sided interval ``(low, high)``."""

    low: float
    high: float

    @property
    def width(self) -> float:
        return self.high - self.low

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    def excludes(self, value: float) -> bool:
        """True when ``value`` lies outside the interval."""
        return value < self.low or value > self.high


__all__ = ["ConfidenceInterval"]
