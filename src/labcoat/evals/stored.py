"""Per-item eval results stored in the ledger, read back as a history for the next plan.

A watched run with an evaluation that names its items (``labcoat.evals.planned_evaluation``,
or any ``labcoat.watch.Evaluation(ids=...)``) records one ``eval_item`` event per item and
checkpoint (``labcoat.watch.ITEM_KIND``): the run, the step, the evaluation's name, the item's
id and its score. They are read through the ledger's one events query
(:meth:`labcoat.Ledger.events`); each (run, step) is one model of the history, named
``run<id>/step<step>``. A history needs every model scored on every item, so only checkpoints
scored on every item of the benchmark are kept (a checkpoint scored on a planned subset alone
is left out, with a note): score some checkpoints on the whole benchmark
(``planned_evaluation(..., full=True)``) for the next plan.
"""

from __future__ import annotations

import ast
import os
import warnings
from typing import Any

import numpy as np

from labcoat.errors import InputError, LabcoatNote

#: the events' kind (``labcoat.watch.events.ITEM_KIND``)
ITEM_KIND = "eval_item"


def history_source(where: str, name: str) -> str:
    """A ledger history's ``source``: the ledger and the evaluation's name."""
    return f"ledger {where}, eval {name!r}"


def source_eval(source: str) -> str | None:
    """The evaluation's name in a :func:`history_source` (None for any other source)."""
    head, sep, tail = source.rpartition(", eval ")
    if not (sep and (head.startswith("ledger ") or " + ledger " in head)):
        return None
    try:
        name = ast.literal_eval(tail)
    except (ValueError, SyntaxError):
        return None
    return name if isinstance(name, str) else None


def checkpoint_name(run_id: int | None, step: int | None) -> str:
    """The history's name for a checkpoint: ``run3/step40``."""
    return f"run{'-' if run_id is None else run_id}/step{'-' if step is None else step}"


def _open(ledger: Any) -> tuple[Any, str]:
    from labcoat.ledger import Ledger

    if isinstance(ledger, Ledger) or callable(getattr(ledger, "events", None)):
        return ledger, str(getattr(ledger, "location", "ledger"))
    if isinstance(ledger, (str, os.PathLike)):
        return Ledger(ledger, create=False), str(ledger)
    raise InputError(
        f"ledger: expected a labcoat.Ledger or a ledger's path or URL; got {type(ledger).__name__}."
    )


def stored_items(
    ledger: Any, *, eval: str | None = None, run: int | None = None
) -> tuple[str, list[Any], str]:
    """The ``eval_item`` events of one evaluation: ``(its name, the events, the ledger's
    location)``; ``eval`` picks the evaluation when the ledger holds several, ``run`` one run."""
    led, where = _open(ledger)
    events = led.events(run=run, kind=ITEM_KIND)
    scope = f" of run {run}" if run is not None else ""
    if not events:
        raise InputError(
            f"ledger {where}: holds no per-item eval results{scope} (no {ITEM_KIND!r} events); "
            "record some with labcoat.watch(..., evaluation=labcoat.evals.planned_evaluation(...), "
            "ledger=...), or read the history from files."
        )
    names = sorted({str(e.data.get("eval", "eval")) for e in events})
    if eval is None and len(names) > 1:
        raise InputError(
            f"ledger {where}: holds per-item results of {len(names)} evaluations "
            f"({', '.join(map(repr, names[:6]))}); pick one with eval= (--eval)."
        )
    name = names[0] if eval is None else str(eval)
    if name not in names:
        raise InputError(
            f"ledger {where}: has no per-item results of an evaluation named {name!r}; it holds "
            f"{', '.join(map(repr, names[:6]))}."
        )
    return name, [e for e in events if str(e.data.get("eval", "eval")) == name], where


def stored_matrix(
    ledger: Any, *, eval: str | None = None, run: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    """``(scores (items, checkpoints), item ids, checkpoint names, source)`` of the checkpoints
    a ledger holds per-item results of (see the module): each (run, step) scored on every item
    is one model (``read_history(ledger=...)`` makes the history)."""
    name, events, where = stored_items(ledger, eval=eval, run=run)
    when = sorted({(e.run_id, e.step) for e in events}, key=lambda k: (_num(k[0]), _num(k[1])))
    rank = {checkpoint_name(*k): i for i, k in enumerate(when)}
    models = np.array([checkpoint_name(e.run_id, e.step) for e in events], dtype=object)
    ids = np.array([str(e.data.get("item")) for e in events], dtype=object)
    values = np.array([np.nan if e.value is None else e.value for e in events], dtype=float)
    model_names = np.array(sorted(rank, key=rank.__getitem__), dtype=object)
    m_idx = np.array([rank[m] for m in models.tolist()], dtype=int)
    item_names = _natural(set(ids.tolist()))
    position = {k: i for i, k in enumerate(item_names.tolist())}
    i_idx = np.array([position[k] for k in ids.tolist()], dtype=int)
    sums = np.zeros((item_names.size, model_names.size))
    counts = np.zeros_like(sums)
    np.add.at(sums, (i_idx, m_idx), values)  # ranks of one checkpoint: their mean
    np.add.at(counts, (i_idx, m_idx), 1.0)
    complete = (counts > 0).all(axis=0)
    source = history_source(where, name)
    if complete.sum() < 2:
        partial = int((~complete).sum())
        raise InputError(
            f"{source}: {int(complete.sum())} checkpoint(s) scored on all {item_names.size} items"
            + (f" ({partial} more on part of them, e.g. a planned subset)" if partial else "")
            + "; a history needs at least two models scored on every item. Score checkpoints on "
            "the whole benchmark (labcoat.evals.planned_evaluation(..., full=True)) or add a "
            "history file."
        )
    if not complete.all():
        warnings.warn(
            f"{source}: left out {int((~complete).sum())} checkpoint(s) scored on only part of "
            f"the {item_names.size} items (a planned subset); kept {int(complete.sum())}.",
            LabcoatNote,
            stacklevel=3,
        )
    with np.errstate(invalid="ignore", divide="ignore"):
        matrix = sums[:, complete] / counts[:, complete]
    return matrix, item_names, model_names[complete], source


def _num(value: int | None) -> int:
    return -1 if value is None else int(value)


def _natural(ids: set[str]) -> np.ndarray:
    """Ids in order: as numbers when every one is a whole number ("2" before "10")."""
    numeric = all(k.isdigit() for k in ids)
    return np.array(sorted(ids, key=(lambda k: (int(k), k)) if numeric else None), dtype=object)


__all__ = ["checkpoint_name", "stored_items", "stored_matrix"]
