"""The verdicts engine's checks, declared in one registry: the design review at registration
(layer ``design``, :mod:`labcoat.verdicts.review`) and the deviations a verdict finds in the
data (layer ``deviation``, :mod:`labcoat.verdicts.deviations`)."""

from __future__ import annotations

from labcoat.findings import CheckRegistry

REGISTRY = CheckRegistry("verdicts", layers=("design", "deviation"))
