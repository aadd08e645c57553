"""Result types shared by every function in :mod:`labcoat.stats`.

Results are plain data with named fields, in the manner of ``scipy.stats``: the numbers a
report needs are attributes, the level of an interval is chosen after the fact through
``confidence_interval(confidence_level)``, and resampling results keep their resamples.
Rendering lives in :mod:`labcoat.stats.render`; ``to_dict`` gives the JSON shape.
"""

from __future__ import annotations

from typing import NamedTuple


class ConfidenceInterval(NamedTuple):
    """A two-sided interval ``(low, high)``; the one interval type across ``labcoat.stats``."""

    low: float
    high: float

    @property
    def width(self) -> float:
        return self.high - self.low

    def excludes(self, value: float) -> bool:
        """True when ``value`` lies outside the interval."""
        return value < self.low or value > self.high
