"""labcoat.logs: every line of a run with its rank and step, duplicates across ranks folded,
noise told from signal.

``labcoat run -- torchrun …`` captures each rank's output and logging records (see
:mod:`labcoat.logs.capture`); ``labcoat logs RUN --why`` names the failure-indicating lines.
Inside a script, :func:`install` captures the same and :func:`step` tells labcoat the step.
"""

from __future__ import annotations

from labcoat._lazy import lazy
from labcoat.logs.capture import install, step

_LAZY: dict[str, str] = {
    "why": "labcoat.logs.api:why",
    "records": "labcoat.logs.api:records",
    "folded": "labcoat.logs.api:folded",
    "ingest_folder": "labcoat.logs.api:ingest_folder",
    "LogsReport": "labcoat.logs.result:LogsReport",
    "CHECKS": "labcoat.logs.checks:CHECKS",
}

__all__ = ["install", "step", *_LAZY]

__getattr__, __dir__ = lazy("labcoat.logs", _LAZY)
