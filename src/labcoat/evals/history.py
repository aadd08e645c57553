"""Per-item results in, as one items x models matrix (a history) or one model's scores.

Every file goes through :func:`labcoat.stats.readers.read_table`, so the formats are the ones
``labcoat stats`` reads: CSV/TSV/JSONL/JSON/Parquet tables, lm-eval ``--log_samples`` files (a
samples ``.jsonl``, a directory or a glob of them; the model named by ``results_*.json``) and
Inspect logs (``.json`` or ``.eval``). A history is either

* one wide matrix: a label column and one column per model (items as rows) or per item (models
  as rows); the longer side is taken for the items unless ``orient`` says otherwise;
* one long table with ``model``, item id and score columns;
* several files, one model each (lm-eval runs, Inspect logs, per-model CSVs), joined on ids.

Scores must lie in [0, 1]; a matrix coded +1/-1 (correct/incorrect, as in some IRT data) is
read as 1/0. Models that are one model under different settings (the prompt settings of a
MATH-500 row ``<org>_<model>_zero_shot`` / ``_one_shot``) share a *group*, and leave together
whenever a check holds models out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from labcoat.errors import InputError

#: a trailing prompt-setting suffix; models that differ only by it form one group
SETTING_SUFFIX = re.compile(r"[_\-. ](zero|one|few|\d+)[_\-]?shot$", re.IGNORECASE)
#: column names tried, in order, for an item id and for a score
ID_COLUMNS = ("item", "item_id", "id", "question_id", "doc_id", "task_doc_id", "uid")
SCORE_COLUMNS = ("score", "correct", "acc", "exact_match", "accuracy", "acc_norm", "pass", "em")
MODEL_COLUMNS = ("model", "model_name", "subject")


def model_group(name: str) -> str:
    """The group of a model name: the name without a trailing ``_zero_shot``-like suffix, in
    lower case (MATH-500 spells one model ``Phi_4_mini`` in one setting, ``phi_4_mini`` in the
    other)."""
    return (SETTING_SUFFIX.sub("", name) or name).lower()


@dataclass(frozen=True)
class History:
    """Scores ``(items, models)`` in [0, 1] of earlier models on every item of a benchmark."""

    items: np.ndarray
    models: np.ndarray
    scores: np.ndarray
    groups: np.ndarray
    source: str = "history"

    @classmethod
    def from_matrix(
        cls,
        scores: Any,
        items: Sequence[Any] | None = None,
        models: Sequence[Any] | None = None,
        groups: Sequence[Any] | None = None,
        *,
        source: str = "history",
    ) -> "History":
        """A history from an ``(items, models)`` array; ids default to positions, groups to
        :func:`model_group` of the model names."""
        try:
            y = np.asarray(scores, dtype=float)
        except (TypeError, ValueError):
            raise InputError(
                f"{source}: scores must be numbers in [0, 1]; got values that are not numbers."
            ) from None
        if y.ndim != 2:
            raise InputError(f"{source}: scores must be an items x models matrix; got {y.ndim}-D.")
        n_items, n_models = y.shape
        items = np.array([str(i) for i in (range(n_items) if items is None else items)], object)
        models = np.array(
            [str(m) for m in (range(n_models) if models is None else models)], dtype=object
        )
        if items.size != n_items or models.size != n_models:
            raise InputError(
                f"{source}: {items.size} item ids and {models.size} model names for a "
                f"{n_items} x {n_models} matrix; give one per row and column."
            )
        if np.isnan(y).any():
            i, m = np.argwhere(np.isnan(y))[0]
            raise InputError(
                f"{source}: item {items[i]!r} has no score for model {models[m]!r}; a history "
                "needs every model scored on every item (drop the model or the item)."
            )
        y = _as_unit(y, source)
        if groups is None:
            groups = [model_group(m) for m in models]
        groups = np.array([str(g) for g in groups], dtype=object)
        for what, ids in (("item", items), ("model", models)):
            uniq, counts = np.unique(ids, return_counts=True)
            if (counts > 1).any():
                raise InputError(
                    f"{source}: {what} {uniq[counts > 1][0]!r} appears twice; ids must be unique."
                )
        if np.unique(groups).size < 2:
            raise InputError(
                f"{source}: a history needs at least two models (that are not one model under "
                f"two settings); got {n_models} model(s) in {np.unique(groups).size} group(s). "
                "Add earlier models' or checkpoints' per-item results."
            )
        if n_items < 10:
            raise InputError(
                f"{source}: a history needs at least 10 items to plan a subset of; got {n_items}."
            )
        return cls(items, models, y, groups, source)

    @property
    def n_items(self) -> int:
        return int(self.scores.shape[0])

    @property
    def n_models(self) -> int:
        return int(self.scores.shape[1])

    def without(self, keep: np.ndarray) -> "History":
        """The history restricted to the models where ``keep`` is True."""
        return History(
            self.items, self.models[keep], self.scores[:, keep], self.groups[keep], self.source
        )


@dataclass(frozen=True)
class Results:
    """One model's scores on items named by ``ids``."""

    ids: np.ndarray
    scores: np.ndarray
    model: str
    source: str

    def lookup(self) -> dict[str, float]:
        return dict(zip(self.ids.tolist(), self.scores.tolist()))


def _as_unit(y: np.ndarray, source: str) -> np.ndarray:
    values = np.unique(y)
    if values.size <= 2 and set(values.tolist()) <= {-1.0, 1.0} and -1.0 in values:
        return (y + 1.0) / 2.0  # +1/-1 coding
    if not np.isfinite(y).all() or y.min() < 0.0 or y.max() > 1.0:
        raise InputError(
            f"{source}: scores must lie in [0, 1] (or be coded +1/-1); got values from "
            f"{np.nanmin(y):g} to {np.nanmax(y):g}. Rescale them first."
        )
    return y


def _pick(table: Any, given: str | None, candidates: Sequence[str], what: str, flag: str) -> str:
    if given is not None:
        table.column(given)  # names the columns when it is missing
        return given
    names = table.names
    lower = {n.lower(): n for n in names}
    for c in candidates:
        if c in lower:
            return lower[c]
    shown = ", ".join(names[:15]) + (", ..." if len(names) > 15 else "")
    raise InputError(
        f"{table.source}: no {what} column found (tried {', '.join(candidates)}); columns are "
        f"{shown}. Name it with {flag}."
    )


def _only_scorer(table: Any, id_col: str) -> str | None:
    """An Inspect log's one scorer column (``choice``, ``match``, ...), when it has just one."""
    lower = {n.lower() for n in table.names}
    if any(c in lower for c in SCORE_COLUMNS):
        return None
    rest = [
        n
        for n in table.names
        if n not in (id_col, "epoch", "task", "task_doc_id", "doc_id")
        and not n.startswith(("metadata.", "doc."))
    ]
    return rest[0] if len(rest) == 1 else None


def read_results(
    path: str | Path,
    *,
    id: str | None = None,
    score: str | None = None,
    model: str | None = None,
    duplicates: str = "error",
) -> Results:
    """One model's per-item scores from a file.

    An id on more than one row of the same task, epoch, seed or run is an error naming it
    (:func:`labcoat.stats.readers.check_ids`), unless ``duplicates="mean"`` averages its rows;
    an item's rows under different epochs or seeds are averaged (the item's mean is the unit).
    """
    from labcoat.stats.readers import check_ids, read_table

    table = read_table(path, id_column=id, duplicates=duplicates)
    if id is None and "task" in table.columns and len(set(map(str, table.columns["task"]))) > 1:
        id = "task_doc_id"
    id_col = _pick(table, id, ID_COLUMNS, "item id", "--id")
    table = check_ids(table, id_col, duplicates)  # the column found here, not only the usual
    if score is None:
        score = _only_scorer(table, id_col)
    score_col = _pick(table, score, SCORE_COLUMNS, "score", "--score")
    ids = table.labels(id_col)
    values = table.scores(score_col)
    if values.min() < 0.0 or values.max() > 1.0:
        raise InputError(
            f"{table.source}: column {score_col!r} must lie in [0, 1]; got {values.min():g} to "
            f"{values.max():g}."
        )
    uniq, inverse = np.unique(ids, return_inverse=True)
    if uniq.size < ids.size:  # epochs or seeds: the item's mean is the unit
        values = np.bincount(inverse, weights=values) / np.bincount(inverse)
        ids = uniq
    name = model or table.model or Path(str(path)).stem
    return Results(np.asarray(ids, dtype=object), values, name, table.source)


def read_history(
    paths: str | Path | Sequence[str | Path] | None = None,
    *,
    orient: str = "auto",
    id: str | None = None,
    score: str | None = None,
    model: str | None = None,
    ledger: Any = None,
    eval: str | None = None,
    duplicates: str = "error",
) -> History:
    """A :class:`History` from one matrix or long table, or from one file per model, or from
    the per-item eval results a ledger stored (the checkpoints of watched runs), or both.

    ``orient``: ``"auto"`` (the longer side holds the items), ``"items"`` (items are rows) or
    ``"models"`` (models are rows) for a wide matrix. ``id``/``score``/``model``: column names
    in long tables and per-model files (found by name when not given). ``ledger``: a
    :class:`labcoat.Ledger` or its path; every checkpoint scored on every item is a model (see
    :mod:`labcoat.evals.stored`); ``eval`` names the evaluation when it holds several. With
    files too, the checkpoints join the files' models (on the same items). ``duplicates``: what
    an item found twice for one model is (``"error"``, or ``"mean"`` of its rows).
    """
    from labcoat._validation import OneOf

    OneOf(("auto", "items", "models")).check(orient, "orient")
    if ledger is not None:
        from labcoat.evals.stored import stored_matrix

        matrix, items, checkpoints, source = stored_matrix(ledger, eval=eval)
        # a checkpoint is its own group: a run's checkpoints differ as separate models do
        stored = History.from_matrix(matrix, items, checkpoints, checkpoints, source=source)
        if paths is None or (not isinstance(paths, (str, Path)) and not list(paths)):
            return stored
        files = read_history(
            paths, orient=orient, id=id, score=score, model=model, duplicates=duplicates
        )
        return combine(files, stored)
    if paths is None:
        raise InputError("history: give at least one file, or a ledger (--from-ledger).")
    if isinstance(paths, (str, Path)):
        paths = [paths]
    paths = list(paths)
    if not paths:
        raise InputError("history: give at least one file.")
    if len(paths) > 1:
        return _join(
            [read_results(p, id=id, score=score, duplicates=duplicates) for p in paths],
            "+".join(map(str, paths)),
        )
    from labcoat.stats.readers import read_table

    table = read_table(paths[0])  # repeats are the long table's to judge, per model
    lower = {n.lower(): n for n in table.names}
    if model is not None or any(c in lower for c in MODEL_COLUMNS):
        return _long(table, id, score, model, duplicates)
    for flag, given in (("--id", id), ("--score", score)):
        if given is not None:
            table.column(given)  # a column that does not exist is named, never ignored
            if flag == "--id" and given == table.names[0] and orient != "models":
                continue  # the matrix's label column: the item ids it names anyway
            raise InputError(
                f"{table.source}: {flag} {given} names a column of a long table (one row per "
                "model and item), but this file has no model column, so it is read as a wide "
                "matrix whose first column labels the rows; drop "
                f"{flag}, or name the model column with --model."
            )
    one_model = _one_model(table)
    if one_model:
        raise InputError(one_model)
    return _wide(table, orient)


def _one_model(table: Any) -> str:
    """Why ``table`` is one model's per-item results rather than a history (empty if it is
    not): an item id column and a score column, and no column per model."""
    lower = {n.lower(): n for n in table.names}
    id_col = next((lower[c] for c in ID_COLUMNS if c in lower), None)
    score_col = next((lower[c] for c in SCORE_COLUMNS if c in lower), None)
    if id_col is None or score_col is None:
        return ""
    return (
        f"{table.source}: holds one model's per-item results (column {id_col!r} names the "
        f"items, {score_col!r} scores them), and a history needs several models: give one "
        "such file per model (`labcoat evals plan base.csv instruct.csv ...`), or one long "
        "table with a model column."
    )


def combine(first: History, second: History) -> History:
    """One history of both's models, on the items they share: both must hold the same items."""
    order = {k: i for i, k in enumerate(first.items.tolist())}
    keys = second.items.tolist()
    extra = [k for k in keys if k not in order]
    missing = sorted(set(order) - set(keys))
    if extra or missing:
        example = (extra or missing)[0]
        raise InputError(
            f"{second.source}: its item ids do not match {first.source}'s ({len(missing)} missing, "
            f"{len(extra)} extra, e.g. {example!r}); a history's models must be scored on the "
            "same items."
        )
    where = {k: i for i, k in enumerate(keys)}
    rows = np.array([where[k] for k in first.items.tolist()])
    taken = set(first.models.tolist())
    names = [m if m not in taken else f"{m} ({second.source})" for m in second.models.tolist()]
    return History.from_matrix(
        np.column_stack([first.scores, second.scores[rows]]),
        first.items,
        [*first.models.tolist(), *names],
        [*first.groups.tolist(), *second.groups.tolist()],
        source=f"{first.source} + {second.source}",
    )


def _join(runs: list[Results], source: str) -> History:
    names = [r.model for r in runs]
    if len(set(names)) < len(names):  # two files naming one model: tell them apart by file
        names = [f"{r.model} ({Path(r.source).name})" for r in runs]
    first = runs[0]
    order = {k: i for i, k in enumerate(first.ids.tolist())}
    matrix = np.empty((first.ids.size, len(runs)))
    for j, r in enumerate(runs):
        keys = r.ids.tolist()
        extra = [k for k in keys if k not in order]
        missing = set(order) - set(keys)
        if extra or missing:
            example = (extra or sorted(missing))[0]
            raise InputError(
                f"{r.source}: its item ids do not match {first.source}'s ({len(missing)} missing, "
                f"{len(extra)} extra, e.g. {example!r}); every model in a history must be scored "
                "on the same items."
            )
        matrix[[order[k] for k in keys], j] = r.scores
    return History.from_matrix(matrix, first.ids, names, source=source)


def _long(
    table: Any, id: str | None, score: str | None, model: str | None, duplicates: str = "error"
) -> History:
    from labcoat.stats.readers import CONTEXT_COLUMNS

    model_col = _pick(table, model, MODEL_COLUMNS, "model", "--model")
    id_col = _pick(table, id, ID_COLUMNS, "item id", "--id")
    score_col = _pick(table, score, SCORE_COLUMNS, "score", "--score")
    models = table.labels(model_col)
    ids = table.labels(id_col)
    values = table.scores(score_col)
    model_names, m_idx = np.unique(models, return_inverse=True)
    if model_names.size == 1:
        raise InputError(
            f"{table.source}: its model column {model_col!r} names one model "
            f"({model_names[0]!r}), and a history needs several: add the other models' rows "
            "to this table, or give one file per model (`labcoat evals plan a.csv b.csv ...`)."
        )
    item_names, i_idx = np.unique(ids, return_inverse=True)
    sums = np.zeros((item_names.size, model_names.size))
    counts = np.zeros_like(sums)
    np.add.at(sums, (i_idx, m_idx), values)
    np.add.at(counts, (i_idx, m_idx), 1.0)
    repeats = [c for c in CONTEXT_COLUMNS if c in table.columns and c != model_col]
    if duplicates == "error" and not repeats and (counts > 1).any():
        i, m = np.argwhere(counts > 1)[0]
        raise InputError(
            f"{table.source}: item {item_names[i]!r} appears on {int(counts[i, m])} rows for "
            f"model {model_names[m]!r} ({int((counts > 1).sum())} such pairs); each row must be "
            "one model's score on one item. Remove the repeated rows, or pass --duplicates mean "
            "to average them (duplicates='mean' in Python)."
        )
    with np.errstate(invalid="ignore", divide="ignore"):
        matrix = np.where(counts > 0, sums / counts, np.nan)
    return History.from_matrix(matrix, item_names, model_names, source=table.source)


def _wide(table: Any, orient: str) -> History:
    names = table.names
    label_col = names[0]
    labels = table.labels(label_col)
    others = names[1:]
    if not others:
        raise InputError(
            f"{table.source}: a history matrix needs a label column and one column per model "
            "(or per item); found one column."
        )
    matrix = np.column_stack([table.scores(c) for c in others])  # rows x others
    if orient == "auto":
        orient = "items" if matrix.shape[0] >= matrix.shape[1] else "models"
    if orient == "items":
        return History.from_matrix(matrix, labels, others, source=table.source)
    return History.from_matrix(matrix.T, others, labels, source=table.source)


__all__ = ["History", "Results", "combine", "model_group", "read_history", "read_results"]
