"""The seed noise a design's power needs, measured on the ledger's earlier runs.

A run records its result as an event whose kind is the metric's name
(``run.record_event("accuracy", value=0.93)``). Earlier runs of one configuration (the same
recorded config, data and factor levels) that differ only in their seed are replicates: the
pooled standard deviation within those groups is the seed noise, with ``Σ(nᵢ − 1)`` degrees of
freedom. A run with neither a recorded config nor factor levels says nothing about which runs it
repeats, so it is left out rather than pooled with strangers (which would inflate the noise and
understate the power).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class LedgerNoise:
    """Pooled within-configuration standard deviation of a metric over the ledger's runs."""

    sd: float
    df: int
    runs: int
    groups: int
    metric: str

    def describe(self) -> str:
        return (
            f"the seed variance of {self.runs} earlier runs in {self.groups} configuration(s) "
            f"in the ledger ({self.metric}, {self.df} df)"
        )


def run_results(ledger: Any, metric: str) -> dict[int, float]:
    """Run id -> the last value the run recorded for ``metric`` (an event of that kind)."""
    out: dict[int, float] = {}
    for event in ledger.events(kind=metric):
        if event.run_id is not None and event.value is not None and math.isfinite(event.value):
            out[event.run_id] = float(event.value)
    return out


def _configuration(run: Any) -> tuple | None:
    levels = {k: v for k, v in run.factors.items() if k != "seed"}
    if run.config_hash is None and not levels:
        return None
    return (run.config_hash, run.data_hash, tuple(sorted((k, str(v)) for k, v in levels.items())))


def ledger_noise(ledger: Any, metric: str, *, before: str | None = None) -> LedgerNoise | None:
    """The seed noise of ``metric`` over the ledger's finished runs (those started before
    ``before``, an ISO time, when given); None when no configuration ran twice."""
    results = run_results(ledger, metric)
    groups: dict[tuple, list[float]] = {}
    for run in ledger.runs(status="ok"):
        if run.id not in results or (before is not None and run.started_at >= before):
            continue
        key = _configuration(run)
        if key is not None:
            groups.setdefault(key, []).append(results[run.id])
    repeated = [np.asarray(v) for v in groups.values() if len(v) >= 2]
    df = sum(len(v) - 1 for v in repeated)
    if df < 1:
        return None
    ss = sum(float(((v - v.mean()) ** 2).sum()) for v in repeated)
    if not ss > 0:
        return None  # every replicate identical: no measured noise, none claimed
    return LedgerNoise(
        sd=math.sqrt(ss / df),
        df=df,
        runs=sum(len(v) for v in repeated),
        groups=len(repeated),
        metric=metric,
    )


__all__ = ["LedgerNoise", "ledger_noise", "run_results"]
