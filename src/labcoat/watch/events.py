"""Structured events as JSON lines, one file per rank.

Every event is one line of strict JSON with at least ``step``, ``rank``, ``time``, ``kind``,
``value`` and ``message``. Each rank appends to its own file, so ranks never interleave
half-written lines; :func:`read_events` reads any number of these files back and
:func:`read_alerts` turns them into de-duplicated alerts.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from labcoat._jsonable import jsonable
from labcoat.errors import InputError
from labcoat.watch.alerts import Alert, merge_alerts

#: ``kind`` of the records of the sampled series: one per sampled step and rank, with ``loss``
#: (the step's loss; also ``value``), ``loss_min``/``loss_mean``/``loss_max``/``losses`` over
#: the losses seen since the previous record, ``grad_norm`` (total L2 norm of the gradients),
#: ``update_ratio`` (||update|| / ||weights|| of the step, estimated on a strided sample of
#: each tensor) and ``lr`` (the first param group's learning rate); absent values are null
SERIES_KIND = "series"
#: ``kind`` of the per-item records of an evaluation with ``ids`` (see
#: :class:`~labcoat.watch.evaluation.Evaluation`): one per item and evaluation, with ``step``,
#: ``rank``, ``value`` (the item's score), ``item`` (its id) and ``eval`` (the evaluation's
#: name); the ledger keeps ``item`` and ``eval`` under ``data``
ITEM_KIND = "eval_item"


def series_event(sample: Any, rank: int | None) -> dict[str, Any]:
    """The series record of one sampled step (a :class:`~labcoat.watch.sample.Sample`)."""
    losses = [v for _, v in sample.losses]
    finite = [v for v in losses if math.isfinite(v)]
    grads = sample.grad_norms
    return {
        "kind": SERIES_KIND,
        "step": sample.step,
        "rank": rank,
        "time": sample.time,
        "value": losses[-1] if losses else None,
        "message": None,
        "loss": losses[-1] if losses else None,
        "loss_min": min(finite) if finite else None,
        "loss_mean": sum(finite) / len(finite) if finite else None,
        "loss_max": max(finite) if finite else None,
        "losses": len(losses),
        "grad_norm": math.sqrt(sum(g * g for g in grads.values())) if grads else None,
        "update_ratio": sample.update_ratio,
        "lr": sample.lrs[0] if sample.lrs else None,
    }


def rank_path(path: str | os.PathLike[str], rank: int | None, world_size: int) -> Path:
    """The file one rank writes: ``{rank}`` in ``path`` is filled in; with several ranks and no
    placeholder, ``.rank<N>`` goes before the suffix (``events.jsonl`` ->
    ``events.rank1.jsonl``)."""
    text = os.fspath(path)
    if "{rank}" in text:
        return Path(text.replace("{rank}", str(0 if rank is None else rank)))
    p = Path(text)
    if world_size > 1 and rank is not None:
        return p.with_name(f"{p.stem}.rank{rank}{p.suffix}")
    return p


class EventLog:
    """Appends events to a JSON-lines file.

    Opened lazily on the first event, so a run that records nothing leaves no file behind.
    ``write(event)`` flushes at once (an alert must be on disk if the run crashes next);
    ``write(event, flush=False)`` (the sampled series) is buffered and written in batches of
    ``batch`` lines, or by the next flushed write, :meth:`flush` or :meth:`close`.
    """

    def __init__(self, path: str | os.PathLike[str], batch: int = 256):
        self.path = Path(path)
        self.batch = batch
        self._file = None
        self._lines: list[str] = []

    def write(self, event: Mapping[str, Any], flush: bool = True) -> None:
        self._lines.append(json.dumps(jsonable(dict(event)), allow_nan=False))
        if flush or len(self._lines) >= self.batch:
            self.flush()

    def flush(self) -> None:
        if not self._lines:
            return
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "a", encoding="utf-8")
        self._file.write("\n".join(self._lines) + "\n")
        self._file.flush()
        self._lines = []

    def close(self) -> None:
        self.flush()
        if self._file is not None:
            self._file.close()
            self._file = None


def _is(*types: type) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, types) and not isinstance(v, bool)


def _number_or_null(value: Any) -> bool:
    """A number, null, or a non-finite float as :func:`~labcoat._jsonable.jsonable` writes it."""
    return value is None or _is(int, float)(value) or value in ("nan", "inf", "-inf")


def _ranks(value: Any) -> bool:
    return value is None or (isinstance(value, list) and all(_is(int)(r) for r in value))


_NONE = type(None)
#: field -> (test of its JSON value, how to say what it must be); what readers of events rely on
EVENT_FIELDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "kind": (_is(str), "a string"),
    "step": (_is(int), "an integer"),
    "rank": (_is(int, _NONE), "an integer or null"),
    "time": (_number_or_null, 'a number, "nan", "inf", "-inf" or null'),
    "value": (_number_or_null, 'a number, "nan", "inf", "-inf" or null'),
    "message": (_is(str, _NONE), "a string"),
    "severity": (_is(str, _NONE), "a string"),
    "subject": (_is(str, _NONE), "a string"),
    "evidence": (_is(dict, _NONE), "an object"),
    "ranks": (_ranks, "a list of integers"),
}


def read_events(paths: Iterable[str | os.PathLike[str]]) -> Iterator[dict[str, Any]]:
    """Every event in ``paths``, file by file, line by line."""
    for path in paths:
        p = Path(path)
        if not p.is_file():
            found = "is a directory" if p.is_dir() else "does not exist"
            raise InputError(
                f"events file {str(p)!r} {found}; pass the JSON-lines files written by "
                "labcoat.watch(..., events=PATH) (one per rank)."
            )
        try:
            fh = open(p, encoding="utf-8")
        except OSError as exc:
            raise InputError(
                f"events file {str(p)!r} cannot be read ({exc.strerror or exc})."
            ) from None
        with fh:
            try:
                for lineno, line in enumerate(fh, 1):
                    if line.strip():
                        yield _parse_event(line, f"events file {str(p)!r}, line {lineno}")
            except UnicodeDecodeError:
                raise InputError(
                    f"events file {str(p)!r} is not UTF-8 text; pass the JSON-lines files written "
                    "by labcoat.watch(..., events=PATH)."
                ) from None


def _parse_event(line: str, where: str) -> dict[str, Any]:
    """One line as an event, its fields of the types :data:`EVENT_FIELDS` declares."""
    try:
        event = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{where}: not JSON ({exc.msg}); expected one JSON object per line as written by "
            "labcoat.watch."
        ) from None
    if not isinstance(event, dict) or "kind" not in event or "step" not in event:
        raise InputError(
            f"{where}: expected an object with 'kind' and 'step'; got {line.strip()[:80]!r}."
        )
    for name, (valid, what) in EVENT_FIELDS.items():
        if not valid(event.get(name)):
            raise InputError(
                f"{where}: '{name}' must be {what}; got {json.dumps(event.get(name))[:60]}."
            )
    return event


def read_series(paths: Iterable[str | os.PathLike[str]]) -> list[dict[str, Any]]:
    """The sampled-series records in ``paths`` (see :data:`SERIES_KIND`), sorted by step and
    rank."""
    rows = [e for e in read_events(paths) if e["kind"] == SERIES_KIND]
    return sorted(rows, key=lambda e: (e["step"], -1 if e["rank"] is None else e["rank"]))


def read_alerts(paths: Iterable[str | os.PathLike[str]]) -> list[Alert]:
    """The alerts in ``paths`` from all ranks, one per event (see :func:`merge_alerts`)."""
    return merge_alerts(Alert.from_event(e) for e in read_events(paths) if Alert.is_alert_event(e))
