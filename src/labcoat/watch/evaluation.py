"""Evaluation during training, with error bars, that stops as soon as it knows enough.

Per-item scores stream into an anytime-valid :class:`labcoat.stats.ConfidenceSequence`, so the
evaluation may look at its interval after every batch and stop once it is narrower than
``width`` (or excludes ``threshold``) without the optional-stopping bias of re-checking a
fixed-n interval. A periodic eval over a large held-out set then costs only as many batches
as the current model's score needs. The model is put in eval mode, without gradients, for
the duration, and every module's own train/eval flag is restored afterwards.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, fields
from typing import Any, Callable, Iterable, Iterator

import numpy as np
import torch
from torch import nn

from labcoat._validation import POSITIVE_INT, deprecated_alias, renamed
from labcoat.errors import InputError
from labcoat.interval import ConfidenceInterval

#: a score function takes one batch and returns one score per item (tensor, array or list)
ScoreFn = Callable[[Any], Any]


@dataclass(frozen=True)
class Evaluation:
    """What to evaluate every ``every`` steps when passed to ``labcoat.watch(evaluation=...)``.

    ``batches`` is re-iterated at each evaluation (a DataLoader, a list) or is a function that
    returns a fresh iterable. ``score`` maps a batch to per-item scores in ``[lower, upper]``
    (accuracy: 0/1 per item). The evaluation stops once the interval is narrower than
    ``width`` or excludes ``threshold``, whichever comes first, or when the batches run out.
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
        if not callable(self.score):
            raise InputError(
                "Evaluation `score` must be a function batch -> per-item scores; got "
                f"{type(self.score).__name__}."
            )


@dataclass(frozen=True)
class EvalResult:
    """One evaluation: the mean per-item score and its anytime-valid confidence interval."""

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

    @property
    def width(self) -> float:
        return self.high - self.low

    @property
    def ci(self) -> ConfidenceInterval:
        """The anytime-valid interval at :attr:`level`, as every engine's ``ci``."""
        return ConfidenceInterval(self.low, self.high)

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
                f"{self.level:.0%} anytime interval, n={self.n}{early})"
            ),
            "evidence": {
                "name": self.name,
                "n": self.n,
                "interval": [self.low, self.high],
                "confidence": self.level,
                "stopped_early": self.stopped_early,
                "batches": self.batches,
                "seconds": self.seconds,
                "path": [list(p) for p in self.path],
            },
        }


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
    step: int | None = None,
) -> EvalResult:
    """Score ``batches`` with ``score`` until the interval is tight enough; see the module doc."""
    from labcoat.stats import ConfidenceSequence

    if width is None and threshold is None:
        raise InputError(
            "evaluate needs `width`, `threshold` or both to know when to stop; got neither."
        )
    cs = ConfidenceSequence(lower, upper, level)
    start = time.perf_counter()
    seen = 0
    stopped = False
    path: list[tuple[int, float, float, float]] = []
    iterable = batches() if callable(batches) else batches
    with torch.no_grad(), eval_mode(model):
        for batch in iterable:
            seen += 1
            cs.update(_scores(score(batch), seen))
            if cs.n:
                now = cs.interval
                path.append((cs.n, float(cs.mean), float(now.low), float(now.high)))
            if cs.done(width=width, threshold=threshold):
                stopped = True
                break
    if cs.n == 0:
        raise InputError(
            f"evaluation {name!r} got no scores: `batches` yielded {seen} batches and `score` "
            "returned no items; pass a non-empty iterable (re-iterable, or a function returning "
            "one)."
        )
    ci = cs.interval
    return EvalResult(
        name=name,
        step=step,
        n=cs.n,
        mean=cs.mean,
        low=float(ci.low),
        high=float(ci.high),
        level=cs.level,
        stopped_early=stopped,
        batches=seen,
        seconds=time.perf_counter() - start,
        path=_thin(path),
    )


#: points of an evaluation's path kept for display
PATH_POINTS = 200


def _thin(path: list) -> tuple:
    """At most :data:`PATH_POINTS` points, evenly spread, the first and the last kept."""
    if len(path) <= PATH_POINTS:
        return tuple(path)
    picks = sorted({round(i * (len(path) - 1) / (PATH_POINTS - 1)) for i in range(PATH_POINTS)})
    return tuple(path[i] for i in picks)


def _scores(values: Any, batch: int) -> np.ndarray:
    if isinstance(values, torch.Tensor):
        values = values.detach().to(torch.float64).cpu().numpy()
    arr = np.asarray(values, dtype=float)
    if arr.ndim > 1:
        raise InputError(
            f"`score` must return one score per item; batch {batch} gave shape {arr.shape}. Return "
            "e.g. (logits.argmax(1) == y).float(), not a matrix."
        )
    return arr.reshape(-1)


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
