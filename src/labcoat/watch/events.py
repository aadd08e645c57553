"""Structured events as JSON lines, one file per rank.

Every event is one line of strict JSON with at least ``step``, ``rank``, ``time``, ``kind``,
``value`` and ``message``. Each rank appends to its own file, so ranks never interleave
half-written lines; :func:`read_events` reads any number of these files back and
:func:`read_alerts` turns them into de-duplicated alerts.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from labcoat._jsonable import jsonable
from labcoat.errors import InputError
from labcoat.watch.alerts import Alert, merge_alerts


def rank_path(path: str | os.PathLike[str], rank: int | None, world_size: int) -> Path:
    """The file one rank writes: ``{rank}`` in ``path`` is filled in; with several ranks and no
    placeholder, ``.rank<N>`` goes before the suffix (``events.jsonl`` -> ``events.rank1.jsonl``)."""
    text = os.fspath(path)
    if "{rank}" in text:
        return Path(text.replace("{rank}", str(0 if rank is None else rank)))
    p = Path(text)
    if world_size > 1 and rank is not None:
        return p.with_name(f"{p.stem}.rank{rank}{p.suffix}")
    return p


class EventLog:
    """Appends events to a JSON-lines file, one flushed line per event.

    Opened lazily on the first event, so a run without alerts leaves no empty file behind
    unless :meth:`touch` is called.
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self._file = None

    def write(self, event: Mapping[str, Any]) -> None:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "a", encoding="utf-8")
        self._file.write(json.dumps(jsonable(dict(event)), allow_nan=False) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def read_events(paths: Iterable[str | os.PathLike[str]]) -> Iterator[dict[str, Any]]:
    """Every event in ``paths``, file by file, line by line."""
    for path in paths:
        p = Path(path)
        if not p.is_file():
            raise InputError(
                f"events file {str(p)!r} does not exist; pass the JSON-lines files written by "
                "labcoat.watch(..., events=PATH) (one per rank)."
            )
        with open(p, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    event = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InputError(
                        f"events file {str(p)!r}, line {lineno}: not JSON ({exc.msg}); "
                        "expected one JSON object per line as written by labcoat.watch."
                    ) from None
                if not isinstance(event, dict) or "kind" not in event or "step" not in event:
                    raise InputError(
                        f"events file {str(p)!r}, line {lineno}: expected an object with 'kind' "
                        f"and 'step'; got {line.strip()[:80]!r}."
                    )
                yield event


def read_alerts(paths: Iterable[str | os.PathLike[str]]) -> list[Alert]:
    """The alerts in ``paths`` from all ranks, one per event (see :func:`merge_alerts`)."""
    return merge_alerts(Alert.from_event(e) for e in read_events(paths) if Alert.is_alert_event(e))
