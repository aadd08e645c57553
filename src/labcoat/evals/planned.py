"""Planned evals during training: the watch scores each checkpoint on a plan's items.

:func:`planned_evaluation` turns a :class:`~labcoat.evals.plan.SubsetPlan` and the benchmark's items
into a :class:`labcoat.watch.Evaluation`. The watch stays generic: it scores batches, names
their items (``ids``) and streams the scores into the estimator this module brings. The
estimate reported for each checkpoint is the full benchmark's, never the subset's mean:

* by default the plan's subset is scored (in the plan's order) and :func:`~labcoat.evals.estimate`
  gives the full-benchmark score with the plan's design-based interval. A design-based interval
  does not survive optional stopping, so this mode never stops early;
* with ``width`` or ``threshold``, items are drawn in the plan's sequential order (uniform
  draws from the whole benchmark, a repeat reusing its score) and the eval stops as
  :func:`~labcoat.evals.sequential` does, with the same anytime-valid interval, draws and
  result (a :class:`~labcoat.evals.sequential.SequentialEval`);
* ``full=True`` scores every item of the benchmark: the exact score, and a complete checkpoint
  for the next plan's history.

Every item's score is recorded by the watch (an ``eval_item`` event: the events file and, with
``ledger=``, the ledger), so :func:`labcoat.evals.read_history` with ``ledger=`` reads the
checkpoints back as a history for the next plan.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, NamedTuple, Sequence

import numpy as np

from labcoat._validation import Interval
from labcoat.errors import InputError
from labcoat.evals.history import Results
from labcoat.evals.plan import SubsetPlan, as_plan


class ItemBatch(NamedTuple):
    """What the watch iterates: the items' ids, and the batch the user's ``score`` receives."""

    ids: list[str]
    data: Any


def planned_evaluation(
    plan: SubsetPlan | str | Path,
    dataset: Any,
    score: Callable[[Any], Any],
    *,
    every: int,
    width: float | None = None,
    threshold: float | None = None,
    level: float | None = None,
    full: bool = False,
    batch_size: int = 32,
    collate: Callable[[list[Any]], Any] | None = None,
    name: str | None = None,
    max_draws: int | None = None,
) -> Any:
    """A :class:`labcoat.watch.Evaluation` that scores the plan's items every ``every`` steps.

    ``dataset``: the benchmark's items, as a mapping item id -> item, a sequence (a torch
    ``Dataset``, a list) indexed by the plan's ids (``"0"`` ... ``"N-1"``, and then it must hold
    exactly the plan's N items), or a function item id -> item. ``score(batch)`` returns one
    score in [0, 1] per item of a batch made by ``collate`` (default: torch's
    ``default_collate``) from ``batch_size`` items. ``width``/``threshold``: draw items in the
    plan's sequential order and stop once the anytime interval is this narrow or excludes the
    threshold (as :func:`~labcoat.evals.sequential`); without them the plan's subset is scored
    and the estimate has the plan's interval. ``full``: score every item (the exact score).
    ``name``: the evaluation's name, which the ledger's per-item results are filed under
    (default: the evaluation the plan's history was read from in a ledger, else the history
    file's stem, else ``"eval"``). ``max_draws``: with ``width``/``threshold``, the most draws
    (default: 4 x the benchmark's items, as :func:`~labcoat.evals.sequential`).
    """
    from labcoat.watch import Evaluation

    plan = as_plan(plan)
    batch_size = Interval(int, 1).check(batch_size, "batch_size")
    if max_draws is not None:
        max_draws = Interval(int, 1).check(max_draws, "max_draws")
    if level is None:
        level = plan.level
    Interval(float, 0.0, 1.0, low_open=True, high_open=True).check(level, "level")
    if not callable(score):
        raise InputError(
            f"`score` must be a function batch -> one score per item; got {type(score).__name__}."
        )
    sequential = width is not None or threshold is not None
    if full and sequential:
        raise InputError(
            "planned_evaluation: `full=True` scores every item; give it without `width` and "
            "`threshold`, or drop `full` to stop early."
        )
    mode = "full" if full else "sequential" if sequential else "subset"
    lookup = _lookup(plan, dataset, mode)
    if collate is None:
        collate = _tensor_rows(dataset) or _default_collate()
    limit = max_draws or 4 * plan.n_items
    if mode == "sequential":
        order = plan.sequence(limit)
        batches: Callable[[], Iterator[ItemBatch]] = lambda: _drawn_batches(  # noqa: E731
            plan, order, batch_size, lookup, collate
        )
    else:
        ids = plan.subset if mode == "subset" else [str(i) for i in plan.items.tolist()]
        batches = lambda: _batches(ids, batch_size, lookup, collate)  # noqa: E731

    def estimator(**settings: Any) -> Any:
        if mode == "subset":
            return SubsetEstimate(plan, level=settings["level"], name=name_)
        if mode == "full":
            return FullScore(plan, level=settings["level"])
        return SequentialDraws(
            plan,
            batch=batch_size,
            width=settings["width"],
            threshold=settings["threshold"],
            level=settings["level"],
            max_draws=limit,
        )

    name_ = name or default_name(plan)
    return Evaluation(
        batches,
        _ScoreData(score),
        every=every,
        width=width,
        threshold=threshold,
        level=float(level),
        name=name_,
        ids=_batch_ids,
        estimator=estimator,
    )


def default_name(plan: SubsetPlan) -> str:
    """The name a planned evaluation files its results under when none is given: the
    evaluation the plan's history came from (a ledger's), else its history file's stem."""
    from labcoat.evals.stored import source_eval

    found = source_eval(plan.source)
    if found is not None:
        return found
    path = Path(plan.source)
    return path.stem if plan.source and path.suffix else "eval"


class _ScoreData:
    """The user's score function applied to an :class:`ItemBatch`'s data."""

    def __init__(self, score: Callable[[Any], Any]):
        self.score = score

    def __call__(self, batch: ItemBatch) -> Any:
        return self.score(batch.data)


def _batch_ids(batch: ItemBatch) -> list[str]:
    return batch.ids


def _lookup(plan: SubsetPlan, dataset: Any, mode: str) -> Callable[[str], Any]:
    """``dataset`` as a function id -> item, checked against the ids the evaluation will ask
    for (all of the benchmark's, or the plan's subset's) before any training step."""
    needed = plan.subset if mode == "subset" else [str(i) for i in plan.items.tolist()]
    what = "planned subset's" if mode == "subset" else "benchmark's"
    if isinstance(dataset, Mapping):
        keys = {str(k): k for k in dataset}
        missing = [k for k in needed if k not in keys]
        if missing:
            raise InputError(
                f"dataset: {len(missing)} of the {what} {len(needed)} item ids are not among its "
                f"{len(keys)} keys (e.g. {missing[0]!r}; its keys look like "
                f"{next(iter(keys), None)!r}); key the items by the ids of the history the plan "
                "was made from."
            )
        return lambda item: dataset[keys[item]]
    if callable(getattr(dataset, "__getitem__", None)) and callable(
        getattr(dataset, "__len__", None)
    ):
        size = len(dataset)
        bad = [k for k in needed if not (k.isdigit() and int(k) < size)]
        if bad:
            raise InputError(
                f"dataset: the plan's item id {bad[0]!r} is not an index of its {size} items "
                f"({len(bad)} of the {what} {len(needed)} ids are not); a sequence is indexed by "
                "the plan's ids, so pass a mapping id -> item instead."
            )
        if size != plan.n_items:
            made = f" (made from {plan.source})" if plan.source else ""
            raise InputError(
                f"dataset: the plan{made} is over a benchmark of {plan.n_items} items, the dataset "
                f"holds {size}; a plan from another benchmark estimates that one, not this. Plan "
                "from per-item results on this dataset, or pass a mapping id -> item of the "
                "plan's benchmark."
            )
        return lambda item: dataset[int(item)]
    if callable(dataset):

        def fetch(item: str) -> Any:
            try:
                return dataset(item)
            except (KeyError, IndexError) as exc:
                raise InputError(
                    f"dataset: has no item {item!r}, which the plan asks for ({type(exc).__name__}"
                    f": {exc}); the lookup must know every id of the plan's benchmark."
                ) from None

        return fetch
    raise InputError(
        "dataset: must be a mapping item id -> item, a sequence indexed by the plan's ids (a "
        f"torch Dataset) or a function item id -> item; got {type(dataset).__name__}."
    )


def _default_collate() -> Callable[[list[Any]], Any]:
    from torch.utils.data import default_collate

    return default_collate


class _Rows:
    """A marker: the batch is made by indexing a TensorDataset's tensors at once."""

    def __init__(self, tensors: Sequence[Any]):
        self.tensors = tensors


def _tensor_rows(dataset: Any) -> _Rows | None:
    """A torch ``TensorDataset`` is batched by indexing its tensors (what ``default_collate``
    of its items gives: a list of the stacked tensors, without building each item)."""
    from torch.utils.data import TensorDataset

    return _Rows(dataset.tensors) if isinstance(dataset, TensorDataset) else None


def _collated(ids: list[str], lookup: Callable[[str], Any], collate: Any) -> Any:
    if isinstance(collate, _Rows):
        import torch

        rows = torch.tensor([int(k) for k in ids])
        return [t[rows] for t in collate.tensors]
    return collate([lookup(k) for k in ids])


def _batches(
    ids: Sequence[str], size: int, lookup: Callable[[str], Any], collate: Callable
) -> Iterator[ItemBatch]:
    for start in range(0, len(ids), size):
        chunk = list(ids[start : start + size])
        yield ItemBatch(chunk, _collated(chunk, lookup, collate))


def _drawn_batches(
    plan: SubsetPlan, order: np.ndarray, size: int, lookup: Callable[[str], Any], collate: Callable
) -> Iterator[ItemBatch]:
    """The items each chunk of ``size`` draws adds (a repeat is not scored again)."""
    asked: set[int] = set()
    for start in range(0, order.size, size):
        new = []
        for i in order[start : start + size].tolist():
            if i not in asked:
                asked.add(i)
                new.append(str(plan.items[i]))
        if new:
            yield ItemBatch(new, _collated(new, lookup, collate))


def _checked(scores: np.ndarray, ids: list[str] | None) -> list[str]:
    if ids is None:
        raise InputError("a planned evaluation's batches must name their items (`ids`).")
    if scores.size and (not np.isfinite(scores).all() or scores.min() < 0 or scores.max() > 1):
        bad = scores[~(np.isfinite(scores) & (scores >= 0) & (scores <= 1))][0]
        raise InputError(
            f"`score` gave {bad!r}; a planned evaluation needs scores in [0, 1] (accuracy: 0/1 "
            "per item)."
        )
    return ids


class _Collected:
    """An estimator that keeps every item's score and judges them at the end (it never stops
    early and draws no path)."""

    def __init__(self, plan: SubsetPlan, *, level: float, name: str = "eval"):
        self.plan, self.level, self.name = plan, level, name
        self.scores: dict[str, float] = {}

    @property
    def n(self) -> int:
        return len(self.scores)

    def update(self, scores: np.ndarray, ids: list[str] | None) -> None:
        self.scores.update(zip(_checked(scores, ids), scores.tolist()))

    def done(self) -> bool:
        return False

    def point(self) -> None:
        return None


class SubsetEstimate(_Collected):
    """The plan's subset scored, then :func:`~labcoat.evals.estimate`: the full benchmark's
    score with the plan's design-based interval (never stops early)."""

    def compute(self) -> Any:
        from labcoat.evals.estimate import estimate
        from labcoat.watch import EvalSummary

        ids = np.array(list(self.scores), dtype=object)
        values = np.array(list(self.scores.values()), dtype=float)
        est = estimate(Results(ids, values, self.name, f"evaluation {self.name!r}"), self.plan,
                       level=self.level)  # fmt: skip
        ci = est.ci
        return EvalSummary(
            n=est.n,
            mean=est.mean,
            low=float(ci.low),
            high=float(ci.high),
            level=est.level,
            basis=f"{est.method} plan's interval of the {est.n_total}-item score",
            estimate=est,
            details={
                "mode": "subset",
                "method": est.method,
                "n_total": est.n_total,
                "se": est.se,
                "refused": est.refused,
                **({"reason": est.reason} if est.reason else {}),
            },
        )


class FullScore(_Collected):
    """Every item of the benchmark scored: the exact score."""

    def compute(self) -> Any:
        from labcoat.watch import EvalSummary

        if self.n < self.plan.n_items:
            raise InputError(
                f"a full evaluation scored {self.n} of the benchmark's {self.plan.n_items} items; "
                "every item needs a score."
            )
        mean = float(np.mean(list(self.scores.values())))
        return EvalSummary(
            self.n, mean, mean, mean, self.level,
            basis=f"exact score: every one of the {self.n} items",
            details={"mode": "full", "n_total": self.plan.n_items},
        )  # fmt: skip


class SequentialDraws:
    """Draws in the plan's sequential order, chunk by chunk, into the anytime-valid confidence
    sequence: the same draws, stops and result as :func:`labcoat.evals.sequential` with
    ``batch`` = the evaluation's batch size."""

    def __init__(
        self,
        plan: SubsetPlan,
        *,
        batch: int,
        width: float | None,
        threshold: float | None,
        level: float,
        max_draws: int,
    ):
        from labcoat.stats.sequential import ConfidenceSequence

        self.plan, self.batch = plan, batch
        self.width, self.threshold, self.level = width, threshold, level
        self.order = plan.sequence(max_draws)
        self.index = plan.index()
        self.cs = ConfidenceSequence(0.0, 1.0, level)
        self.known: dict[int, float] = {}  # scored items (by index)
        self.fed: set[int] = set()  # distinct items among the draws fed so far
        self.pos = 0  # the next chunk's first draw
        self.stopped = False

    @property
    def n(self) -> int:
        return len(self.known)

    def update(self, scores: np.ndarray, ids: list[str] | None) -> None:
        for item, value in zip(_checked(scores, ids), scores.tolist()):
            self.known[self.index[item]] = float(value)
        self._advance()

    def _advance(self) -> None:
        while not self.finished and self.pos < self.order.size:
            chunk = self.order[self.pos : self.pos + self.batch].tolist()
            if any(i not in self.known for i in chunk):
                return
            self.cs.update([self.known[i] for i in chunk])
            self.fed.update(chunk)
            self.pos += len(chunk)
            if self.cs.done(width=self.width, threshold=self.threshold):
                self.stopped = True

    @property
    def exact(self) -> bool:
        return len(self.fed) == self.plan.n_items

    @property
    def finished(self) -> bool:
        return self.stopped or self.exact

    def done(self) -> bool:
        return self.finished

    def point(self) -> tuple[int, float, float, float] | None:
        if not self.cs.n:
            return None
        ci = self.cs.interval
        return (self.cs.n, float(self.cs.mean), float(ci.low), float(ci.high))

    def compute(self) -> Any:
        from labcoat.evals.sequential import sequential_result
        from labcoat.watch import EvalSummary

        drawn, total, level = self.pos, self.plan.n_items, float(self.level)
        result = sequential_result(
            self.cs, [self.known[i] for i in self.fed], drawn=drawn, n_total=total,
            stopped=self.stopped, width=self.width, threshold=self.threshold, level=level,
        )  # fmt: skip
        n_items, reason = result.n_items, result.reason
        return EvalSummary(
            n=n_items,
            mean=result.mean,
            low=float(result.ci.low),
            high=float(result.ci.high),
            level=level,
            basis=f"anytime interval of the {total}-item score",
            estimate=result,
            details={
                "mode": "sequential",
                "n_draws": drawn,
                "n_total": total,
                "decision": result.decision,
                "reason": reason,
            },
        )


__all__ = ["ItemBatch", "planned_evaluation"]
