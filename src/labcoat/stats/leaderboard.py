"""A leaderboard with honest uncertainty: which models can be told apart, and where each ranks.

Every model is scored on the questions all of them answered. Pairs are compared with the
paired test of :func:`labcoat.stats.compare` and Holm-corrected over all pairs, since a
leaderboard of M models makes M(M-1)/2 comparisons at once. Groups are maximal runs of
adjacent models (by mean) no two of which differ significantly. A model's rank interval comes
from the same Holm-adjusted pairs, so the two never disagree: its best rank is one more than the
number of models significantly better than it, its worst the number of models less those
significantly worse ("rank 2, but anywhere from 1 to 4" is what a leaderboard should say). As
Holm's tests hold family-wise, the intervals hold together at ``1 - alpha``. The marginal
bootstrap interval of each rank (questions resampled, whole clusters when given, every model
re-ranked in each resample; no correction for the M models) is kept beside it as
``rank_ci_bootstrap``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from labcoat._validation import (
    PROBABILITY,
    Interval,
    OneOf,
    Seed,
    deprecated_alias,
    renamed,
    validate_params,
)
from labcoat.errors import InputError
from labcoat.stats._questions import per_question, question_scores
from labcoat.stats._results import ConfidenceInterval, StatsResult
from labcoat.stats._validation import check_random_state
from labcoat.stats.compare import compare
from labcoat.stats.mean import FORMULAS, cluster_codes, mean
from labcoat.stats.multiple import holm

_CHUNK_CELLS = 1 << 22


@dataclass(frozen=True)
class ModelEntry:
    """One model's row: mean and interval, rank (1 = best), its interval from the Holm-adjusted
    pairs (``rank_ci``, what the groups say) and its marginal bootstrap interval."""

    name: str
    mean: float
    se: float
    ci: ConfidenceInterval
    rank: int
    rank_ci: tuple[int, int]
    n_dropped: int
    rank_ci_bootstrap: tuple[int, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "mean": self.mean,
            "se": self.se,
            "ci": list(self.ci),
            "rank": self.rank,
            "rank_ci": list(self.rank_ci),
            "rank_ci_bootstrap": None
            if self.rank_ci_bootstrap is None
            else list(self.rank_ci_bootstrap),
            "n_dropped": self.n_dropped,
        }


@dataclass(frozen=True)
class PairEntry:
    """``a`` − ``b`` on the shared questions, its interval, p-value, Holm-adjusted p-value and
    the minimum detectable effect of the pair (80 % power)."""

    a: str
    b: str
    diff: float
    se: float
    ci: ConfidenceInterval
    pvalue: float
    pvalue_holm: float
    mde: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "diff": self.diff,
            "se": self.se,
            "ci": list(self.ci),
            "pvalue": self.pvalue,
            "pvalue_holm": self.pvalue_holm,
            "mde": self.mde,
        }


@dataclass(frozen=True)
class LeaderboardResult(StatsResult):
    """Models best first, every pair, and the groups that cannot be told apart at ``alpha``."""

    KIND = "stats.leaderboard"

    confidence = deprecated_alias("confidence", "level")

    view = "labcoat.stats.view:leaderboard_view"
    title = "Leaderboard"

    models: list[ModelEntry]
    pairs: list[PairEntry]
    groups: list[list[str]]
    n: int
    n_clusters: int | None
    level: float
    alpha: float
    n_resamples: int
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "models": [m.to_dict() for m in self.models],
            "pairs": [p.to_dict() for p in self.pairs],
            "groups": self.groups,
            "n": self.n,
            "n_clusters": self.n_clusters,
            "level": self.level,
            "alpha": self.alpha,
            "n_resamples": self.n_resamples,
            "warnings": list(self.notes),
        }


@renamed(confidence="level", random_state="seed")
@validate_params(
    {
        "level": PROBABILITY,
        "alpha": Interval(float, 0.0, 1.0, True, True, none=True),
        "n_resamples": Interval(int, 2),
        "seed": Seed(generator=True),
        "formula": OneOf(FORMULAS),
    }
)
def leaderboard(
    scores: Mapping[str, Any],
    ids: Mapping[str, Any] | None = None,
    cluster: Mapping[str, Any] | None = None,
    *,
    level: float = 0.95,
    alpha: float | None = None,
    n_resamples: int = 2000,
    seed: int | np.random.Generator | None = 0,
    formula: str = "cr1",
) -> LeaderboardResult:
    """Rank models with intervals, Holm-corrected pairwise tests and indistinguishable groups.

    Parameters
    ----------
    scores
        Model name -> scores (as for :func:`labcoat.stats.mean`; one answer per row with ids).
    ids
        Model name -> question id per row. Only questions every model answered are used; how
        many each model lost is ``n_dropped``. Without ids, position ``i`` is one question.
    cluster
        Model name -> cluster per row (only the first model's labels are used, per question).
    alpha
        Level of the Holm-corrected pairwise tests that form the groups (``1 - level``).
    """
    alpha = 1 - level if alpha is None else alpha
    names = list(scores)
    if len(names) < 2:
        raise InputError(f"a leaderboard needs at least 2 models; got {len(names)}.")
    matrix, codes, dropped = _common_questions(scores, ids, cluster, names)
    n = matrix.shape[0]
    fits = [
        mean(matrix[:, j], None if codes is None else codes, level, formula=formula)
        for j in range(len(names))
    ]
    means = matrix.mean(axis=0)
    order = np.argsort(-means, kind="stable")
    ranks = _ranks(means[None, :])[0]
    rank_draws = _bootstrap_ranks(matrix, codes, n_resamples, check_random_state(seed))
    low_q, high_q = (1 - level) / 2, (1 + level) / 2
    pairs, pvalues = [], []
    for i in range(len(order)):
        for j in range(i + 1, len(order)):
            a, b = order[i], order[j]
            res = compare(matrix[:, a], matrix[:, b], codes, level, formula=formula)
            pairs.append((names[a], names[b], res))
            pvalues.append(res.pvalue)
    holm_p = holm(np.asarray(pvalues)) if pvalues else np.array([])
    distinct = {frozenset((x, y)) for (x, y, _), p in zip(pairs, holm_p) if p <= alpha}
    better = {name: 0 for name in names}  # models significantly better than each
    worse = {name: 0 for name in names}
    for (x, y, r), p in zip(pairs, holm_p):
        if p <= alpha and r.diff != 0:
            winner, loser = (x, y) if r.diff > 0 else (y, x)
            better[loser] += 1
            worse[winner] += 1
    models = [
        ModelEntry(
            names[j],
            float(means[j]),
            fits[j].se,
            fits[j].ci,
            int(ranks[j]),
            (1 + better[names[j]], len(names) - worse[names[j]]),
            dropped[names[j]],
            (
                int(np.floor(np.quantile(rank_draws[:, j], low_q))),
                int(np.ceil(np.quantile(rank_draws[:, j], high_q))),
            ),
        )
        for j in order
    ]
    pair_rows = [
        PairEntry(x, y, r.diff, r.se, r.ci, r.pvalue, float(p), r.mde)
        for (x, y, r), p in zip(pairs, holm_p)
    ]
    notes = []
    if any(dropped.values()):
        lost = ", ".join(f"{k}: {v}" for k, v in dropped.items() if v)
        notes.append(f"only the {n} questions every model answered are used (left out: {lost})")
    n_clusters = None if codes is None else int(codes.max()) + 1
    notes.extend(w for w in fits[order[0]].notes if "Wilson" not in w)
    return LeaderboardResult(
        models,
        pair_rows,
        indistinguishable_groups([names[j] for j in order], distinct),
        n,
        n_clusters,
        level,
        alpha,
        n_resamples,
        tuple(notes),
    )


def indistinguishable_groups(ordered: list[str], distinct: set[frozenset]) -> list[list[str]]:
    """Maximal runs of adjacent models (best first) in which no pair is in ``distinct``."""
    groups: list[list[str]] = []
    last_end = -1
    for start in range(len(ordered)):
        end = start
        while end + 1 < len(ordered) and all(
            frozenset((ordered[k], ordered[end + 1])) not in distinct for k in range(start, end + 1)
        ):
            end += 1
        if end > last_end:
            groups.append(ordered[start : end + 1])
            last_end = end
    return groups


def _common_questions(scores, ids, cluster, names):
    """``(questions x models)`` score matrix on the shared questions, cluster codes, and the
    number of questions each model had that others lacked."""
    if ids is None:
        per_model = [question_scores(scores[m], name=m) for m in names]
        sizes = {q.n for q in per_model}
        if len(sizes) > 1:
            raise InputError(
                f"models score different numbers of questions ({sorted(sizes)}); pass ids to match "
                "them."
            )
        matrix = np.column_stack([q.means for q in per_model])
        first, rows = per_model[0], np.arange(matrix.shape[0])
        dropped = dict.fromkeys(names, 0)
    else:
        missing = [m for m in names if m not in ids]
        if missing:
            raise InputError(f"`ids` has no entry for model(s) {', '.join(map(repr, missing))}.")
        per_model = [question_scores(scores[m], ids[m], name=m) for m in names]
        shared = set(per_model[0].ids.tolist())
        for q in per_model[1:]:
            shared &= set(q.ids.tolist())
        if len(shared) < 2:
            raise InputError(
                f"the models share {len(shared)} question id(s); a leaderboard needs at least 2 "
                "questions every model answered. Check that the id column is the same in every "
                "file."
            )
        first = per_model[0]
        keep = [i for i, key in enumerate(first.ids.tolist()) if key in shared]
        order = [first.ids[i] for i in keep]
        columns = []
        for q in per_model:
            position = {key: i for i, key in enumerate(q.ids.tolist())}
            columns.append(q.means[[position[key] for key in order]])
        matrix = np.column_stack(columns)
        rows = np.asarray(keep, dtype=int)
        dropped = {m: int(q.n - len(shared)) for m, q in zip(names, per_model)}
    codes = None
    if cluster is not None:
        labels = cluster.get(names[0]) if isinstance(cluster, Mapping) else cluster
        codes = cluster_codes(per_question(labels, first, "cluster")[rows])
    return matrix, codes, dropped


def _ranks(means: np.ndarray) -> np.ndarray:
    """Competition ranks per row (1 = highest mean; ties share the better rank)."""
    return (means[:, None, :] > means[:, :, None]).sum(axis=2) + 1


def _bootstrap_ranks(
    matrix: np.ndarray, codes: np.ndarray | None, n_resamples: int, rng
) -> np.ndarray:
    """``(n_resamples, models)`` ranks over bootstrap resamples of questions (or clusters)."""
    if codes is None:
        unit_sums, unit_sizes = matrix, np.ones(matrix.shape[0])
    else:
        unit_sums = np.stack(
            [np.bincount(codes, weights=matrix[:, j]) for j in range(matrix.shape[1])], axis=1
        )
        unit_sizes = np.bincount(codes).astype(float)
    units = unit_sizes.size
    rows = max(1, _CHUNK_CELLS // units)
    out = []
    for start in range(0, n_resamples, rows):
        b = min(rows, n_resamples - start)
        weights = rng.multinomial(units, np.full(units, 1.0 / units), size=b).astype(float)
        means = (weights @ unit_sums) / (weights @ unit_sizes)[:, None]
        out.append(_ranks(means))
    return np.concatenate(out)
