"""Turn rows of answers into one score per question.

Miller §3: when a question is answered K times, the question's mean is the unit of analysis.
Treating the K answers as independent questions understates the standard error, so every
function here averages them first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from labcoat.errors import InputError
from labcoat.stats._validation import check_scores


@dataclass(frozen=True)
class Questions:
    """Per-question scores: ``means[i]`` averages the ``counts[i]`` answers to question
    ``ids[i]``."""

    ids: np.ndarray
    means: np.ndarray
    counts: np.ndarray
    #: within-question variance of the answers (ddof 1); NaN where a question has one answer
    within_var: np.ndarray
    #: index of the question's first row, to carry per-question columns such as clusters along
    first_row: np.ndarray
    #: question index of every input row (None when the input was already one row per question)
    row_to_question: np.ndarray | None = None

    @property
    def n(self) -> int:
        return int(self.means.size)

    @property
    def k(self) -> float:
        """Answers per question (the mean when questions were answered unequally often)."""
        return float(self.counts.mean())


def question_scores(scores: Any, ids: Any = None, *, name: str = "scores") -> Questions:
    """Average answers per question.

    ``scores`` is ``(n,)`` (one answer per question unless ``ids`` repeat) or ``(n, K)`` (K
    answers per question in a row). ``ids`` labels the rows; rows sharing an id are answers to
    the same question.
    """
    arr = np.asarray(scores)
    if arr.ndim == 2:
        if ids is not None:
            raise InputError(
                f"`{name}` is 2-D (questions x answers) and ids were also given; pass one answer "
                "per row with ids, or a 2-D array without ids."
            )
        flat = check_scores(arr.reshape(-1), name)
        arr = flat.reshape(-1, arr.shape[1])
        k = arr.shape[1]
        within = arr.var(axis=1, ddof=1) if k > 1 else np.full(arr.shape[0], np.nan)
        rows = np.arange(arr.shape[0])
        return Questions(rows, arr.mean(axis=1), np.full(arr.shape[0], k), within, rows)
    values = check_scores(arr, name)
    if ids is None:
        rows = np.arange(values.size)
        return Questions(
            rows, values, np.ones(values.size, dtype=int), np.full(values.size, np.nan), rows
        )
    labels = np.asarray(ids)
    if labels.shape != values.shape:
        raise InputError(
            f"`ids` must label every row of `{name}`; got {labels.size} ids for {values.size} "
            "scores."
        )
    uniq, first, inverse, counts = np.unique(
        labels, return_index=True, return_inverse=True, return_counts=True
    )
    order = np.argsort(first)  # keep the order in which questions first appear
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    inverse = rank[inverse.reshape(-1)]
    sums = np.bincount(inverse, weights=values)
    counts = counts[order]
    means = sums / counts
    sq = np.bincount(inverse, weights=(values - means[inverse]) ** 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        within = np.where(counts > 1, sq / (counts - 1), np.nan)
    return Questions(uniq[order], means, counts, within, first[order], inverse)


def per_question(labels: Any, questions: Questions, name: str) -> np.ndarray:
    """A per-row column (e.g. clusters) as one value per question; it must not vary within one."""
    col = np.asarray(labels)
    if col.ndim != 1:
        raise InputError(f"`{name}` must be one label per row; got shape {col.shape}.")
    rows = questions.row_to_question
    if rows is None or col.size == questions.n and rows.size == questions.n:
        if col.size != questions.n:
            raise InputError(
                f"`{name}` must have one label per question; got {col.size} for {questions.n}."
            )
        return col
    if col.size != rows.size:
        raise InputError(
            f"`{name}` must have one label per row; got {col.size} labels for {rows.size} rows."
        )
    picked = col[questions.first_row]
    mismatch = np.flatnonzero(col != picked[rows])
    if mismatch.size:
        bad = questions.ids[rows[mismatch[0]]]
        raise InputError(
            f"`{name}` differs between answers to the same question (e.g. id {bad!r}); a "
            "question's "
            "answers must all belong to one cluster."
        )
    return picked


def match_ids(ids_a: np.ndarray, ids_b: np.ndarray) -> np.ndarray:
    """Index into ``ids_b`` for every id of ``ids_a``; an error naming the ids on one side only."""
    match = shared_ids(ids_a, ids_b)
    if match.only_a or match.only_b:
        raise InputError(
            f"question ids differ between A and B: {match.describe()}. A paired comparison needs "
            "the same questions on both sides: score the missing ones, or compare unpaired."
        )
    return match.index_b


@dataclass(frozen=True)
class IdMatch:
    """Positions of the ids both sides share (in A's order) and the ids found on one side only."""

    index_a: np.ndarray
    index_b: np.ndarray
    only_a: list[Any]
    only_b: list[Any]

    def describe(self) -> str:
        parts = []
        if self.only_a:
            parts.append(f"{len(self.only_a)} only in A ({_examples(self.only_a)})")
        if self.only_b:
            parts.append(f"{len(self.only_b)} only in B ({_examples(self.only_b)})")
        return "; ".join(parts) or "none missing"


def shared_ids(ids_a: np.ndarray, ids_b: np.ndarray) -> IdMatch:
    """Match two id columns: the ids on both sides, and those on one side only."""
    position = {key: i for i, key in enumerate(ids_b.tolist())}
    keys_a = ids_a.tolist()
    index_a = [i for i, key in enumerate(keys_a) if key in position]
    only_a = [key for key in keys_a if key not in position]
    seen = set(keys_a)
    only_b = [key for key in ids_b.tolist() if key not in seen]
    index_b = [position[keys_a[i]] for i in index_a]
    return IdMatch(np.array(index_a, dtype=int), np.array(index_b, dtype=int), only_a, only_b)


def _examples(keys: list[Any], limit: int = 5) -> str:
    shown = ", ".join(repr(k) for k in keys[:limit])
    return shown + (", ..." if len(keys) > limit else "")


def paired_questions(a: Any, b: Any, ids_a: Any, ids_b: Any, strict: bool):
    """Questions of both sides, the positions that line them up, and the counts left out."""
    if (ids_a is None) != (ids_b is None):
        raise InputError(
            "give both `ids_a` and `ids_b` to match questions by id, or neither to match by "
            "position."
        )
    qa = question_scores(a, ids_a, name="a")
    qb = question_scores(b, ids_b, name="b")
    if ids_a is None:
        if qa.n != qb.n:
            raise InputError(
                f"`a` and `b` must score the same questions for a paired comparison; got {qa.n} "
                "and "
                f"{qb.n} questions. Pass ids to match them, or compare unpaired (paired=False)."
            )
        index = np.arange(qa.n)
        return qa, qb, index, index, (0, 0)
    match = shared_ids(qa.ids, qb.ids)
    if strict and (match.only_a or match.only_b):
        raise InputError(
            f"question ids differ between A and B: {match.describe()}; without strict the "
            "comparison would use the shared questions only."
        )
    if match.index_a.size < 2:
        raise InputError(
            f"a paired comparison needs at least 2 questions on both sides; {match.index_a.size} "
            f"shared ({match.describe()}). Check that --on names the same ids in both files."
        )
    return qa, qb, match.index_a, match.index_b, (len(match.only_a), len(match.only_b))
