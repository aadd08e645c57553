"""Recorded runs, exact replay, hindsight logging and run diffs.

``labcoat.replayable(model=…, optimizer=…)`` records a run (:mod:`labcoat.replay.record`);
:func:`replay` re-runs a stretch of it from a checkpoint and checks it is the same run
(:mod:`labcoat.replay.replay`); :func:`divergence` says where two runs part ways
(:mod:`labcoat.replay.diff`). See docs/replay.md.

Names load on first use, so ``labcoat --help`` does not import torch.
"""

from __future__ import annotations

from labcoat._lazy import lazy

# the functions, not the modules of the same names (light: neither imports torch)
from labcoat.replay.diff import diff as diff
from labcoat.replay.diff import divergence as divergence
from labcoat.replay.replay import replay as replay

_LAZY: dict[str, str] = {
    "replayable": "labcoat.replay.record:replayable",
    "Recorder": "labcoat.replay.record:Recorder",
    "ReplayResult": "labcoat.replay.results:ReplayResult",
    "DiffResult": "labcoat.replay.results:DiffResult",
    "open_run": "labcoat.replay.runs:open_run",
}

__all__ = sorted([*_LAZY, "divergence", "replay"])


__getattr__, __dir__ = lazy("labcoat.replay", _LAZY, renamed={"record": "replayable"})
