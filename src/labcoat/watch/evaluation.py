"""Evaluation during training, with error bars, that stops as soon as it knows enough.

Per-item scores stream into an anytime-valid :class:`labcoat.stats.ConfidenceSequence`, so the
evaluation may look at its interval after every batch and stop once it is narrower than
``width`` (or excludes ``threshold``) without the optional-stopping bias of re-checking a
fixed-n interval. A periodic eval over a large held-out set then costs only as many batches
as the current model's score needs. The model is put in eval mode, without gradients, for
the duration, and every module's own train/eval flag is restored afterwards.

What turns the scores into a number with an interval is an :class:`Estimator` (update, done,
point, compute), made fresh for each evaluation; the default, :class:`AnytimeMean`, is the
confidence sequence above. Another one plugs in through ``Evaluation(estimator=...)``:
``labcoat.evals.planned_evaluation`` brings one that scores a planned subset of a benchmark
and reports the full benchmark's estimated score with the plan's interval. With ``ids`` (a
function naming a batch's items) every item's score is kept on the result and recorded, one
``eval_item`` event per item (:data:`ITEM_KIND`), in the events file and the ledger: the
per-item results a later eval plan is made from.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Iterable, Iterator, Mapping, Protocol, Sequence

import numpy as np
import torch
from torch import nn

from labcoat._jsonable import jsonable
from labcoat._validation import POSITIVE_INT, deprecated_alias, renamed
from labcoat.errors import InputError
from labcoat.findings import Finding
from labcoat.interval import ConfidenceInterval
from labcoat.result import Result
from labcoat.watch.events import ITEM_KIND

#: a score function takes one batch and returns one score per item (tensor, array or list)
ScoreFn = Callable[[Any], Any]
#: an ids function takes one batch and returns its items' ids, one per score, in the same order
IdsFn = Callable[[Any], Sequence[Any]]


@dataclass(frozen=True)
class EvalSummary:
    """What an :class:`Estimator` reports when an evaluation ends."""

    n: int
    mean: float
    low: float
    high: float
    level: float
    #: how the interval is made, as the event's message says it ("anytime interval")
    basis: str = "anytime interval"
    #: the estimator's own result object (a ``labcoat.evals.Estimate``), when it has one
    estimate: Any = None
    #: JSON-able facts for the event's evidence
    details: Mapping[str, Any] = field(default_factory=dict)


class Estimator(Protocol):
    """One evaluation's running estimate: per-item scores in, a mean with an interval out.

    ``Evaluation(estimator=factory)``: ``factory(width=, threshold=, lower=, upper=, level=)``
    makes a fresh one at each evaluation (the class :class:`AnytimeMean` is the default).
    """

    #: items scored so far
    n: int

    def update(self, scores: np.ndarray, ids: list[str] | None) -> None:
        """Add one batch's per-item scores (and their ids, when the evaluation names items)."""

    def done(self) -> bool:
        """True once the evaluation may stop (before the batches run out)."""

    def point(self) -> tuple[int, float, float, float] | None:
        """(items, mean, low, high) now, for the evaluation's path; None to leave it out."""

    def compute(self) -> EvalSummary:
        """The result, once the evaluation stops or the batches run out."""


class AnytimeMean:
    """The default :class:`Estimator`: the mean of the scores and its anytime-valid interval
    (:class:`labcoat.stats.ConfidenceSequence`), done once narrower than ``width`` or excluding
    ``threshold``."""

    def __init__(
        self,
        *,
        width: float | None = 0.05,
        threshold: float | None = None,
        lower: float = 0.0,
        upper: float = 1.0,
        level: float = 0.95,
    ):
        from labcoat.stats import ConfidenceSequence

        if width is None and threshold is None:
            raise InputError(
                "evaluate needs `width`, `threshold` or both to know when to stop; got neither."
            )
        self.width, self.threshold = width, threshold
        self.cs = ConfidenceSequence(lower, upper, level)

    @property
    def n(self) -> int:
        return self.cs.n

    def update(self, scores: np.ndarray, ids: list[str] | None) -> None:
        self.cs.update(scores)

    def done(self) -> bool:
        return self.cs.done(width=self.width, threshold=self.threshold)

    def point(self) -> tuple[int, float, float, float] | None:
        if not self.cs.n:
            return None
        now = self.cs.interval
        return (self.cs.n, float(self.cs.mean), float(now.low), float(now.high))

    def compute(self) -> EvalSummary:
        ci = self.cs.interval
        return EvalSummary(self.cs.n, self.cs.mean, float(ci.low), float(ci.high), self.cs.level)


@dataclass(frozen=True)
class Evaluation:
    """What to evaluate every ``every`` steps when passed to ``labcoat.watch(evaluation=...)``.

    ``batches`` is re-iterated at each evaluation (a DataLoader, a list) or is a function that
    returns a fresh iterable. ``score`` maps a batch to per-item scores in ``[lower, upper]``
    (accuracy: 0/1 per item). The evaluation stops once the interval is narrower than
    ``width`` or excludes ``threshold``, whichever comes first, or when the batches run out.
    ``ids`` (optional) maps a batch to its items' ids, one per score: each item's score is then
    kept and recorded (see :data:`ITEM_KIND`). ``estimator`` (optional) makes the
    :class:`Estimator` each evaluation streams its scores into (default :class:`AnytimeMean`).
    """

    batches: Iterable[Any] | Callable[[], Iterable[Any]]
    score: ScoreFn
    every: int
    width: float | None = 0.05
    threshold: float | None = None
    lower: float = 0.0
    upper: float = 1.0
    level: float = 0.95
    name: str = "eval"
    ids: IdsFn | None = None
    estimator: Callable[..., Estimator] | None = None
    confidence = deprecated_alias("confidence", "level")

    def settings(self) -> dict[str, Any]:
        """The keyword arguments of :func:`evaluate` this evaluation fixes (its stopping rule
        and name): every field but batches, score and every."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name not in ("batches", "score", "every")
        }

    def __post_init__(self) -> None:
        POSITIVE_INT.check(self.every, "every", hint="It counts steps.")
        for name, what in (("score", "batch -> per-item scores"), ("ids", "batch -> item ids")):
            value = getattr(self, name)
            if not callable(value) and (name == "score" or value is not None):
                raise InputError(
                    f"Evaluation `{name}` must be a function {what}; got {type(value).__name__}."
                )
        if self.estimator is not None and not callable(self.estimator):
            raise InputError(
                "Evaluation `estimator` must make an Estimator (a class or function taking width, "
                f"threshold, lower, upper and level); got {type(self.estimator).__name__}."
            )


@dataclass(frozen=True)
class EvalResult(Result):
    """One evaluation: the mean per-item score and its anytime-valid confidence interval."""

    engine = "watch"
    KIND = "watch.eval"
    section = "labcoat.report.sections.stats:stats_section"

    confidence = deprecated_alias("confidence", "level")

    name: str
    step: int | None
    n: int
    mean: float
    low: float
    high: float
    level: float
    #: True when the interval became tight enough before the batches ran out
    stopped_early: bool
    batches: int
    seconds: float
    #: (items, mean, low, high) after each batch, thinned to at most PATH_POINTS: how the
    #: interval narrowed until the evaluation stopped
    path: tuple[tuple[int, float, float, float], ...] = ()
    #: (item id, score) of every item scored, in order, when the evaluation names its items
    items: tuple[tuple[str, float], ...] = ()
    #: how the interval is made (the estimator's :attr:`EvalSummary.basis`)
    basis: str = "anytime interval"
    #: the estimator's own result (a ``labcoat.evals.Estimate`` for a planned evaluation)
    estimate: Any = None
    #: the estimator's facts, JSON-able, for the event's evidence
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def width(self) -> float:
        return self.high - self.low

    @property
    def ci(self) -> ConfidenceInterval:
        """The anytime-valid interval at :attr:`level`, as every engine's ``ci``."""
        return ConfidenceInterval(self.low, self.high)

    def to_dict(self) -> dict[str, Any]:
        return jsonable(
            {
                "name": self.name,
                "step": self.step,
                "n": self.n,
                "mean": self.mean,
                "ci": [self.low, self.high],
                "level": self.level,
                "stopped_early": self.stopped_early,
                "batches": self.batches,
                "seconds": self.seconds,
                "basis": self.basis,
                "path": [list(p) for p in self.path],
                "details": dict(self.details),
            }
        )

    def to_event(self, rank: int | None) -> dict[str, Any]:
        early = ", stopped early" if self.stopped_early else ""
        return {
            "step": self.step,
            "rank": rank,
            "time": time.time(),
            "kind": "eval",
            "value": self.mean,
            "message": (
                f"{self.name}: {self.mean:.4g} [{self.low:.4g}, {self.high:.4g}] ("
                f"{self.level:.0%} {self.basis}, n={self.n}{early})"
            ),
            "evidence": {
                "name": self.name,
                "n": self.n,
                "interval": [self.low, self.high],
                "level": self.level,
                "confidence": self.level,  # deprecated key (docs/deprecations.md): "level"
                "stopped_early": self.stopped_early,
                "batches": self.batches,
                "seconds": self.seconds,
                "path": [list(p) for p in self.path],
                **({"items": len(self.items)} if self.items else {}),
                **({"estimate": dict(self.details)} if self.details else {}),
            },
        }

    def item_events(self, rank: int | None) -> list[dict[str, Any]]:
        """One :data:`ITEM_KIND` event per item scored (none without ``ids``)."""
        now = time.time()
        return [
            {
                "kind": ITEM_KIND,
                "step": self.step,
                "rank": rank,
                "time": now,
                "value": score,
                "message": None,
                "item": item,
                "eval": self.name,
            }
            for item, score in self.items
        ]

    @property
    def findings(self) -> list[Finding]:
        """None: this result states numbers, it runs no check of its own."""
        return []


# Evaluation(confidence=...) keeps working one release
Evaluation.__init__ = renamed(confidence="level")(Evaluation.__init__)  # type: ignore[method-assign]


@renamed(confidence="level")
def evaluate(
    model: nn.Module,
    batches: Iterable[Any] | Callable[[], Iterable[Any]],
    score: ScoreFn,
    *,
    width: float | None = 0.05,
    threshold: float | None = None,
    lower: float = 0.0,
    upper: float = 1.0,
    level: float = 0.95,
    name: str = "eval",
    ids: IdsFn | None = None,
    estimator: Callable[..., Estimator] | None = None,
    step: int | None = None,
) -> EvalResult:
    """Score ``batches`` with ``score`` until the estimator is done; see the module doc."""
    est = (AnytimeMean if estimator is None else estimator)(
        width=width, threshold=threshold, lower=lower, upper=upper, level=level
    )
    start = time.perf_counter()
    seen = 0
    stopped = False
    path: list[tuple[int, float, float, float]] = []
    items: list[tuple[str, float]] = []
    iterable = batches() if callable(batches) else batches
    with torch.no_grad(), eval_mode(model):
        for batch in iterable:
            seen += 1
            values = _scores(score(batch), seen, batch)
            names = None
            if ids is not None:
                names = _ids(ids(batch), seen, values.size)
                items.extend(zip(names, values.tolist()))
            est.update(values, names)
            point = est.point()
            if point is not None:
                path.append(point)
            if est.done():
                stopped = True
                break
    if est.n == 0:
        raise InputError(
            f"evaluation {name!r} got no scores: `batches` yielded {seen} batches and `score` "
            "returned no items; pass a non-empty iterable (re-iterable, or a function returning "
            "one)."
        )
    summary = est.compute()
    return EvalResult(
        name=name,
        step=step,
        n=summary.n,
        mean=float(summary.mean),
        low=float(summary.low),
        high=float(summary.high),
        level=float(summary.level),
        stopped_early=stopped,
        batches=seen,
        seconds=time.perf_counter() - start,
        path=_thin(path),
        items=tuple(items),
        basis=summary.basis,
        estimate=summary.estimate,
        details=dict(summary.details),
    )


#: points of an evaluation's path kept for display
PATH_POINTS = 200


def _thin(path: list) -> tuple:
    """At most :data:`PATH_POINTS` points, evenly spread, the first and the last kept."""
    if len(path) <= PATH_POINTS:
        return tuple(path)
    picks = sorted({round(i * (len(path) - 1) / (PATH_POINTS - 1)) for i in range(PATH_POINTS)})
    return tuple(path[i] for i in picks)


def _scores(values: Any, number: int, batch: Any = None) -> np.ndarray:
    if isinstance(values, torch.Tensor):
        values = values.detach().to(torch.float64).cpu().numpy()
    arr = np.asarray(values, dtype=float)
    if arr.ndim > 1:
        raise InputError(
            f"`score` must return one score per item; batch {number} gave shape {arr.shape}. "
            "Return e.g. (logits.argmax(1) == y).float(), not a matrix."
        )
    if arr.ndim == 0:
        size = _batch_size(batch)
        if size is not None and size > 1:
            raise InputError(
                f"`score` must return one score per item; batch {number} holds {size} items and "
                "got one score. Return e.g. (logits.argmax(1) == y).float(), not its .mean()."
            )
    return arr.reshape(-1)


def _batch_size(batch: Any) -> int | None:
    """The leading dimension of a batch's first tensor (a tensor, or one in a tuple, list or
    dict), None when there is none to read."""
    if isinstance(batch, torch.Tensor):
        return int(batch.shape[0]) if batch.ndim else None
    if isinstance(batch, Mapping):
        batch = list(batch.values())
    if isinstance(batch, (tuple, list)):
        for part in batch:
            if isinstance(part, torch.Tensor) and part.ndim:
                return int(part.shape[0])
    return None


def _ids(values: Any, number: int, n_scores: int) -> list[str]:
    """A batch's item ids as strings, one per score (ints from a tensor stay ints: ``"17"``)."""
    if isinstance(values, torch.Tensor):
        values = values.tolist()
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        values = [values]
    names = [str(v) for v in values]
    if len(names) != n_scores:
        raise InputError(
            f"`score` returned {n_scores} score{'s' if n_scores != 1 else ''} for batch {number}, "
            f"whose `ids` name {len(names)} items; return one score per item (e.g. "
            "(logits.argmax(1) == y).float(), not its .mean())."
        )
    return names


@contextlib.contextmanager
def eval_mode(model: nn.Module) -> Iterator[None]:
    """``model.eval()`` for the block, then every module's own ``training`` flag restored."""
    flags = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        yield
    finally:
        for module, training in flags:
            module.training = training
