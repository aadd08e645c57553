"""Evaluate items one batch at a time and stop as soon as the answer is known.

Items come in the plan's sequential order: independent uniform draws, with replacement, from
the whole benchmark (a repeated item reuses its cached result, so it costs nothing). Each draw's
score then has exactly the full-benchmark mean as its expectation, and the running interval is
the anytime-valid confidence sequence of :class:`labcoat.stats.sequential.ConfidenceSequence`
(betting, Waudby-Smith & Ramdas 2023): checking it after every batch and stopping when it is
narrow enough, or when it excludes a threshold or a baseline's score, keeps its level under
optional stopping.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar

from labcoat.errors import InputError
from labcoat.evals.plan import Plan, as_plan
from labcoat.findings import Finding
from labcoat.interval import ConfidenceInterval
from labcoat.result import Result


@dataclass(frozen=True, eq=False)
class SequentialEval(Result):
    """Where a sequential eval stopped, and why."""

    KIND = "evals.sequential"

    engine: ClassVar[str] = "evals"
    view: ClassVar[str] = "labcoat.evals.view:sequential_view"
    section: ClassVar[str] = "labcoat.report.sections.evals:evals_section"
    title: ClassVar[str] = "Sequential eval"

    mean: float
    ci: ConfidenceInterval
    n_draws: int
    n_items: int
    n_total: int
    stopped: bool
    reason: str
    level: float
    paired: bool = False
    threshold: float | None = None

    @property
    def decision(self) -> str:
        """Against the threshold (0 for a paired eval): ``"above"``, ``"below"`` or
        ``"undecided"``; ``"narrow"`` when only a width was asked for and reached."""
        ref = self.threshold if self.threshold is not None else (0.0 if self.paired else None)
        if ref is not None and self.ci.low > ref:
            return "above"
        if ref is not None and self.ci.high < ref:
            return "below"
        return "narrow" if self.stopped else "undecided"

    @property
    def findings(self) -> list[Finding]:
        from labcoat.evals.checks import findings_for

        return findings_for(self, ("evals.sequential.decided",))

    def to_dict(self) -> dict[str, Any]:
        return {
            "mean": self.mean,
            "ci": list(self.ci),
            "level": self.level,
            "n_draws": self.n_draws,
            "n_items": self.n_items,
            "n_total": self.n_total,
            "stopped": self.stopped,
            "reason": self.reason,
            "decision": self.decision,
            "paired": self.paired,
            "threshold": self.threshold,
            "findings": [f.to_dict() for f in self.findings],
        }


def _scorer(source: Any, name: str) -> Callable[[str], float]:
    if callable(source):
        return source
    from labcoat.evals.estimate import as_results

    lookup = as_results(source, name=name).lookup()

    def score(item: str) -> float:
        if item not in lookup:
            raise InputError(
                f"`{name}` has no result for item {item!r}, which the sequence drew; replaying "
                "needs results on the whole benchmark, or pass a function that evaluates an item."
            )
        return lookup[item]

    return score


def sequential(
    score: Any,
    plan: Plan | str | Path,
    *,
    width: float | None = None,
    threshold: float | None = None,
    baseline: Any = None,
    level: float | None = None,
    batch: int = 10,
    max_draws: int | None = None,
) -> SequentialEval:
    """Draw items in the plan's sequential order until the interval is narrower than ``width``
    or excludes ``threshold`` (with ``baseline``: the difference ``score - baseline``, whose
    threshold defaults to 0).

    ``score``/``baseline``: a function ``item_id -> score in [0, 1]`` that evaluates one item
    (called at most once per item), or full-benchmark results to replay (a file, a mapping or
    :class:`~labcoat.evals.history.Results`).
    """
    from labcoat._validation import Interval
    from labcoat.stats.sequential import ConfidenceSequence

    plan = as_plan(plan)
    if width is None and threshold is None and baseline is None:
        raise InputError(
            "sequential: give `width`, `threshold` or `baseline`: the condition that lets the eval "
            "stop."
        )
    level = plan.level if level is None else level
    Interval(float, 0.0, 1.0, low_open=True, high_open=True).check(level, "level")
    batch = Interval(int, 1).check(batch, "batch")
    paired = baseline is not None
    if paired and threshold is None:
        threshold = 0.0
    main = _scorer(score, "score")
    base = _scorer(baseline, "baseline") if paired else None
    cache: dict[str, float] = {}

    def value(item: str) -> float:
        if item not in cache:
            v = float(main(item)) - (float(base(item)) if base else 0.0)
            low = -1.0 if paired else 0.0
            if not (math.isfinite(v) and low <= v <= 1.0):
                raise InputError(
                    f"item {item!r} scored {v!r}; scores must lie in [0, 1] (differences in "
                    "[-1, 1])."
                )
            cache[item] = v
        return cache[item]

    cs = ConfidenceSequence(-1.0 if paired else 0.0, 1.0, level)
    limit = max_draws or 4 * plan.n_items
    order = plan.sequence(limit)
    stopped, drawn = False, 0
    for start in range(0, limit, batch):
        chunk = [value(str(plan.items[i])) for i in order[start : start + batch]]
        cs.update(chunk)
        drawn += len(chunk)
        if cs.done(width=width, threshold=threshold):
            stopped = True
            break
        if len(cache) == plan.n_items:
            break
    return sequential_result(
        cs, list(cache.values()), drawn=drawn, n_total=plan.n_items, stopped=stopped,
        width=width, threshold=threshold, level=level, paired=paired,
    )  # fmt: skip


def sequential_result(
    cs: Any,
    scores: list[float],
    *,
    drawn: int,
    n_total: int,
    stopped: bool,
    width: float | None,
    threshold: float | None,
    level: float,
    paired: bool = False,
) -> SequentialEval:
    """The result of a sequential eval from its confidence sequence ``cs`` and the scores of the
    distinct items drawn: why it stopped, and the exact score once every item is in. One place,
    for :func:`sequential` and the watch's planned evaluation."""
    n_items = len(scores)
    if stopped and threshold is not None and cs.excludes(threshold):
        side = "above" if cs.interval.low > threshold else "below"
        reason = f"{side} {threshold:g} after {drawn} draws ({n_items} distinct items)"
    elif stopped:
        reason = f"interval narrower than {width:g} after {drawn} draws ({n_items} items)"
    elif n_items == n_total:
        reason = f"every item evaluated ({drawn} draws): the full-benchmark score is exact"
        exact = sum(scores) / n_items
        return SequentialEval(
            exact, ConfidenceInterval(exact, exact), drawn, n_items, n_total, True,
            reason, float(level), paired, threshold,
        )  # fmt: skip
    else:
        reason = f"not decided after {drawn} draws ({n_items} distinct items)"
    mean = float(cs.mean) if cs.n else math.nan
    return SequentialEval(
        mean, cs.interval, drawn, n_items, n_total, stopped, reason,
        float(level), paired, threshold,
    )  # fmt: skip


__all__ = ["SequentialEval", "sequential", "sequential_result"]
