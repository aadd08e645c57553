"""Summaries of a few training runs across tasks, as rliable recommends (Agarwal et al. 2021).

With three to ten seeds per task, a mean over runs is dominated by outliers, a median throws
most runs away, and a point estimate hides how much the ranking of two methods could flip. The
interquartile mean (IQM) is robust and still uses half the runs; the optimality gap counts how
far runs fall short of a target; stratified bootstrap intervals resample runs *within* each
task, so the task mix stays fixed; the probability of improvement says how often a run of X
beats a run of Y on a task, averaged over tasks.

``scores`` arrays are ``(runs, tasks)``; a 1-D array is one task.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from labcoat._validation import (
    PROBABILITY,
    Interval,
    Seed,
    deprecated_alias,
    renamed,
    validate_params,
)
from labcoat.errors import InputError
from labcoat.findings import Finding
from labcoat.result import Result
from labcoat.stats._results import BootstrapResult
from labcoat.stats._validation import (
    check_finite,
    check_random_state,
    check_scores,
)

#: resample cells (resamples x runs x tasks) built at once
_CHUNK_CELLS = 1 << 22


def iqm(scores: Any) -> float:
    """Interquartile mean over all runs and tasks: the mean of the middle 50 % of scores."""
    return float(_iqm(_check_runs(scores, "scores")[None])[0])


def optimality_gap(scores: Any, gamma: float = 1.0) -> float:
    """``gamma - mean(min(score, gamma))``: how far runs fall short of the target ``gamma``."""
    return float(
        _optimality_gap(_check_runs(scores, "scores")[None], check_finite(gamma, "gamma"))[0]
    )


def _iqm(x: np.ndarray) -> np.ndarray:
    from scipy import stats as sps

    return sps.trim_mean(x.reshape(x.shape[0], -1), 0.25, axis=1)


def _mean(x: np.ndarray) -> np.ndarray:
    return x.mean(axis=(1, 2))


def _median(x: np.ndarray) -> np.ndarray:
    """Median over tasks of the per-task mean (rliable's definition)."""
    return np.median(x.mean(axis=1), axis=1)


def _optimality_gap(x: np.ndarray, gamma: float) -> np.ndarray:
    return gamma - np.minimum(x, gamma).mean(axis=(1, 2))


#: aggregate name -> function of a (resamples, runs, tasks) array and gamma
AGGREGATES: dict[str, Callable[[np.ndarray, float], np.ndarray]] = {
    "iqm": lambda x, gamma: _iqm(x),
    "mean": lambda x, gamma: _mean(x),
    "median": lambda x, gamma: _median(x),
    "optimality_gap": _optimality_gap,
}


@dataclass(frozen=True)
class SeedsSummary(Result):
    """Aggregate scores of one method, each with its stratified-bootstrap interval."""

    engine = "stats"
    KIND = "stats.seeds"
    section = "labcoat.report.sections.stats:stats_section"

    aggregates: dict[str, BootstrapResult]
    n_runs: int
    n_tasks: int

    def __getitem__(self, name: str) -> BootstrapResult:
        return self.aggregates[name]

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_runs": self.n_runs,
            "n_tasks": self.n_tasks,
            "aggregates": {
                name: {"statistic": r.statistic, "ci": list(r.ci), "se": r.se}
                for name, r in self.aggregates.items()
            },
        }

    @property
    def findings(self) -> list[Finding]:
        """None: this result states numbers, it runs no check of its own."""
        return []


@renamed(confidence="level", random_state="seed")
@validate_params(
    {
        "gamma": Interval(float),
        "n_resamples": Interval(int, 2),
        "level": PROBABILITY,
        "seed": Seed(generator=True),
    }
)
def aggregate(
    scores: Any,
    metrics: tuple[str, ...] = ("iqm", "mean", "median", "optimality_gap"),
    *,
    gamma: float = 1.0,
    n_resamples: int = 2000,
    level: float = 0.95,
    seed: int | np.random.Generator | None = None,
) -> SeedsSummary:
    """IQM, mean, median and optimality gap with stratified-bootstrap percentile intervals."""
    x = _check_runs(scores, "scores")
    unknown = [m for m in metrics if m not in AGGREGATES]
    if unknown or not metrics:
        raise InputError(
            f"`metrics` must name some of {', '.join(AGGREGATES)}; got {list(metrics)!r}."
        )
    rng = check_random_state(seed)
    values: dict[str, list[np.ndarray]] = {m: [] for m in metrics}
    for resample in stratified_resamples(x, n_resamples, rng):
        for m in metrics:
            values[m].append(AGGREGATES[m](resample, gamma))
    out = {}
    for m in metrics:
        dist = np.concatenate(values[m])
        out[m] = BootstrapResult(
            float(AGGREGATES[m](x[None], gamma)[0]),
            float(dist.std(ddof=1)),
            dist,
            m,
            x.shape[0],
            level,
        )
    return SeedsSummary(out, x.shape[0], x.shape[1])


@renamed(confidence="level", random_state="seed")
@validate_params(
    {"n_resamples": Interval(int, 2), "level": PROBABILITY, "seed": Seed(generator=True)}
)
def probability_of_improvement(
    x: Any,
    y: Any,
    *,
    n_resamples: int = 2000,
    level: float = 0.95,
    seed: int | np.random.Generator | None = None,
) -> BootstrapResult:
    """``P(X > Y)``: the chance a run of X beats a run of Y on a task, averaged over tasks.

    Per task it is the Mann-Whitney U statistic over all run pairs divided by their number
    (ties count one half); the interval resamples X's and Y's runs independently per task.
    """
    from scipy import stats as sps

    a, b = _check_runs(x, "x"), _check_runs(y, "y")
    if a.shape[1] != b.shape[1]:
        raise InputError(
            f"`x` and `y` must cover the same tasks; got {a.shape[1]} and {b.shape[1]} tasks."
        )
    rng = check_random_state(seed)
    point = float(
        np.mean(
            [
                sps.mannwhitneyu(a[:, t], b[:, t]).statistic / (a.shape[0] * b.shape[0])
                for t in range(a.shape[1])
            ]
        )
    )
    pair_cells = a.shape[0] * b.shape[0] * a.shape[1]  # the (N, K, T) comparison per resample
    chunks_a = stratified_resamples(a, n_resamples, rng, cells_per_resample=pair_cells)
    chunks_b = stratified_resamples(b, n_resamples, rng, cells_per_resample=pair_cells)
    dist = np.concatenate([_prob_improvement(ra, rb) for ra, rb in zip(chunks_a, chunks_b)])
    return BootstrapResult(
        point, float(dist.std(ddof=1)), dist, "probability_of_improvement", a.shape[0], level
    )


def _prob_improvement(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Batched ``P(X > Y)`` for ``a`` (B, N, T) and ``b`` (B, K, T)."""
    diff = a[:, :, None, :] - b[:, None, :, :]
    wins = (diff > 0).mean(axis=(1, 2)) + 0.5 * (diff == 0).mean(axis=(1, 2))
    return wins.mean(axis=1)


def stratified_resamples(
    x: np.ndarray,
    n_resamples: int,
    rng: np.random.Generator,
    *,
    cells_per_resample: int | None = None,
) -> Iterator[np.ndarray]:
    """Chunks of ``(B, runs, tasks)`` resamples, each task's runs drawn with replacement on
    their own.

    Chunks hold ``_CHUNK_CELLS // cells_per_resample`` resamples (default: the array's size).
    """
    runs, tasks = x.shape
    rows = max(1, _CHUNK_CELLS // (cells_per_resample or runs * tasks))
    for start in range(0, n_resamples, rows):
        b = min(rows, n_resamples - start)
        idx = rng.integers(0, runs, size=(b, runs, tasks))
        yield np.take_along_axis(np.broadcast_to(x, (b, runs, tasks)), idx, axis=1)


def _check_runs(scores: Any, name: str) -> np.ndarray:
    arr = np.asarray(scores)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise InputError(f"`{name}` must be (runs, tasks); got shape {arr.shape}.")
    flat = check_scores(arr.reshape(-1), name)
    x = flat.reshape(arr.shape)
    if x.shape[0] < 2:
        raise InputError(f"`{name}` needs at least 2 runs per task to bootstrap; got {x.shape[0]}.")
    return x


@dataclass(frozen=True)
class MethodsSummary(Result):
    """Several methods' runs: each method's :class:`SeedsSummary`, and ``P(first > other)``
    for the first method against each other one (keys ``(first, other)``)."""

    engine = "stats"
    KIND = "stats.methods"
    view = "labcoat.stats.view:seeds_view"
    section = "labcoat.report.sections.stats:stats_section"

    confidence = deprecated_alias("confidence", "level")

    summaries: dict[str, SeedsSummary]
    improvements: dict[tuple[str, str], BootstrapResult]
    level: float
    n_resamples: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "methods": {m: s.to_dict() for m, s in self.summaries.items()},
            "probability_of_improvement": [
                {"x": x, "y": y, "statistic": r.statistic, "ci": list(r.ci), "se": r.se}
                for (x, y), r in self.improvements.items()
            ],
            "level": self.level,
            "n_resamples": self.n_resamples,
        }

    @property
    def findings(self) -> list[Finding]:
        """None: this result states numbers, it runs no check of its own."""
        return []


@renamed(confidence="level", random_state="seed")
@validate_params(
    {
        "gamma": Interval(float),
        "n_resamples": Interval(int, 2),
        "level": PROBABILITY,
        "seed": Seed(generator=True),
    }
)
def summarize_runs(
    scores: Any,
    tasks: Any = None,
    methods: Any = None,
    *,
    gamma: float = 1.0,
    n_resamples: int = 2000,
    level: float = 0.95,
    seed: int | np.random.Generator | None = None,
) -> MethodsSummary:
    """Long rows of runs (one score per run and task, labelled by ``tasks`` and ``methods``)
    to per-method :func:`aggregate` summaries and :func:`probability_of_improvement`.

    Every method needs runs on every task, and the same number of runs on each of its tasks.
    """
    values = check_scores(scores, "scores")
    tasks = (
        np.full(values.size, "all", dtype=object)
        if tasks is None
        else _labels(tasks, values, "tasks")
    )
    methods = (
        np.full(values.size, "runs", dtype=object)
        if methods is None
        else _labels(methods, values, "methods")
    )
    grids = {
        m: runs_by_task(values[methods == m], tasks[methods == m], m)
        for m in dict.fromkeys(methods.tolist())
    }
    if len({tuple(names) for _, names in grids.values()}) > 1:
        raise InputError("methods cover different tasks; every method needs runs on every task.")
    options = dict(n_resamples=n_resamples, level=level, seed=seed)
    summaries = {m: aggregate(grid, gamma=gamma, **options) for m, (grid, _) in grids.items()}
    names = list(grids)
    improvements = {
        (names[0], other): probability_of_improvement(
            grids[names[0]][0], grids[other][0], **options
        )
        for other in names[1:]
    }
    return MethodsSummary(summaries, improvements, level, n_resamples)


def runs_by_task(
    values: np.ndarray, tasks: np.ndarray, method: str = "runs"
) -> tuple[np.ndarray, list[str]]:
    """Long rows to a ``(runs, tasks)`` grid; every task must have the same number of runs."""
    names = list(dict.fromkeys(tasks.tolist()))
    columns = [values[tasks == t] for t in names]
    sizes = {t: c.size for t, c in zip(names, columns)}
    if len(set(sizes.values())) > 1:
        shown = ", ".join(f"{t}: {s}" for t, s in list(sizes.items())[:6])
        raise InputError(
            f"method {method!r} has unequal runs per task ({shown}); each task needs the same "
            "seeds."
        )
    return np.stack(columns, axis=1), names


def _labels(labels: Any, values: np.ndarray, name: str) -> np.ndarray:
    arr = np.asarray(labels, dtype=object)
    if arr.shape != values.shape:
        raise InputError(
            f"`{name}` must label every score; got {arr.size} labels for {values.size} scores."
        )
    return arr
