"""Where a run's lines come from, read as one stream in time order.

* a capture folder (what :mod:`labcoat.logs.capture` writes, one file per process, and the
  launcher's own output that ``labcoat run`` saw, ``launcher.log``);
* a folder of per-rank files, as ``torchrun --log-dir`` leaves it
  (``…/attempt_N/<local_rank>/stdout.log``, ``stderr.log``), or any ``*rank<N>*.log``/``.txt``
  files: their lines carry no time, so they are taken in file order, rank by rank.

A rank's line reaches the launcher's output too (the rank passes it through), so the launcher's
copy is dropped when the same text came from a captured process shortly before: every line is
kept once, from the process that wrote it.
"""

from __future__ import annotations

import bisect
import json
import math
import os
import re
from collections import Counter, deque
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import Iterator

from labcoat.errors import InputError
from labcoat.logs.capture import HEADER

#: the launcher's output in a capture folder
LAUNCHER = "launcher.log"
#: seconds within which a launcher line is the pass-through of a rank's line
PASS_THROUGH_S = 5.0
_TEE_PREFIX = re.compile(r"^\[[\w-]*\d+\]:\s?")  # torchrun --tee's and torch's "[rank1]: "


@dataclass(slots=True)
class Line:
    time: float | None
    rank: int | None
    local_rank: int | None
    node: str | None
    step: int | None
    level: str
    stream: str
    logger: str
    text: str
    source: int  # index of the file it came from


@dataclass
class Source:
    path: str
    rank: int | None = None
    local_rank: int | None = None
    group_rank: int | None = None
    node: str | None = None
    pid: int | None = None
    ppid: int | None = None
    depth: int = 0  # processes above it that were captured too (the launcher: -1)
    timed: bool = True
    stream: str = ""

    def to_dict(self) -> dict:
        return {
            "path": self.path,
            "rank": self.rank,
            "local_rank": self.local_rank,
            "group_rank": self.group_rank,
            "node": self.node,
            "pid": self.pid,
        }


#: what a reader hands on per line, a plain tuple (sorting on it is a C loop):
#: (time, source, n, stream, level, step, logger, text, the time as written); ``n`` counts the
#: source's lines, so lines of one source keep their order when they share a time; ``step`` is
#: the capture file's text ('' when none)
TIME, SOURCE, N, STREAM, LEVEL, STEP, LOGGER, TEXT, WRITTEN = range(9)
_BY_TIME = itemgetter(TIME)
#: characters read from a file at a time, and held at most for all files of a run together
CHUNK, HELD = 1 << 20, 1 << 26


def _chunks(path: str, size: int = CHUNK) -> Iterator[list[str]]:
    """The lines of a file (without their newline) a chunk at a time."""
    with open(path, encoding="utf-8", errors="replace", newline="\n") as f:
        rest = ""
        while True:
            data = f.read(size)
            if not data:
                break
            found = (rest + data).split("\n")
            rest = found.pop()
            yield found
        if rest:
            yield [rest]


def _capture_rows(source: Source, index: int, size: int = CHUNK) -> Iterator[list[tuple]]:
    n = 0
    for chunk in _chunks(source.path, size):
        if n == 0 and chunk and chunk[0].startswith(HEADER):
            chunk, n = chunk[1:], 1
        try:  # the common case as one comprehension; a line cut by a kill takes the slow loop
            rows = [
                (float(p[0]), index, i, p[1], p[2], p[3], p[4], p[5], p[0])
                for i, raw in enumerate(chunk, n)
                for p in (raw.split("\t", 5),)
            ]
        except (ValueError, IndexError):
            rows = []
            for i, raw in enumerate(chunk, n):
                p = raw.split("\t", 5)
                if len(p) < 6:
                    continue  # the header, or a line cut by a kill
                try:
                    when = float(p[0])
                except ValueError:
                    continue
                rows.append((when, index, i, p[1], p[2], p[3], p[4], p[5], p[0]))
        n += len(chunk)
        if source.depth < 0:  # the launcher's copy of a --tee'd line: "[rank1]: text"
            rows = [
                (*r[:TEXT], _TEE_PREFIX.sub("", r[TEXT], count=1), r[WRITTEN])
                if r[TEXT][:1] == "["
                else r
                for r in rows
            ]
        if rows:
            yield rows


def _plain_rows(source: Source, index: int, size: int = CHUNK) -> Iterator[list[tuple]]:
    n, stream = 0, source.stream
    for chunk in _chunks(source.path, size):
        rows = []
        for raw in chunk:
            text = raw[:-1] if raw.endswith("\r") else raw
            if text[:1] == "[":
                text = _TEE_PREFIX.sub("", text, count=1)
            rows.append((None, index, n, stream, "", "", "", text, None))
            n += 1
        yield rows


def _line(row: tuple, sources: list["Source"]) -> "Line":
    s = sources[row[SOURCE]]
    step = row[STEP]
    return Line(
        row[TIME],
        s.rank,
        s.local_rank,
        s.node,
        int(step) if step else None,
        row[LEVEL],
        row[STREAM],
        row[LOGGER],
        row[TEXT],
        row[SOURCE],
    )


def _capture_sources(folder: Path) -> list[Source]:
    out = []
    for path in sorted(folder.glob("p*.log")):
        with open(path, encoding="utf-8", errors="replace", newline="\n") as f:
            head = f.readline()
        if not head.startswith(HEADER):
            continue
        meta = json.loads(head[len(HEADER) :])
        out.append(
            Source(
                str(path),
                meta.get("rank"),
                meta.get("local_rank"),
                meta.get("group_rank"),
                meta.get("node"),
                meta.get("pid"),
                meta.get("ppid"),
            )
        )
    pids = {s.pid: s for s in out}
    for s in out:  # how many captured processes are above it
        seen, parent = set(), pids.get(s.ppid)
        while parent is not None and parent.pid not in seen:
            seen.add(parent.pid)
            s.depth += 1
            parent = pids.get(parent.ppid)
    launcher = folder / LAUNCHER
    if launcher.is_file():
        out.append(Source(str(launcher), depth=-1))
    return out


_RANK_FILE = re.compile(r"(?:rank|local_rank|worker)[_-]?(\d+)", re.I)


def _plain_sources(folder: Path) -> list[Source]:
    """torchrun ``--log-dir`` folders and folders of ``rank<N>`` files."""
    out = []
    for path in sorted(folder.rglob("*")):
        if not path.is_file() or path.suffix not in (".log", ".txt", ".out", ".err"):
            continue
        rel = path.relative_to(folder).parts
        rank = None
        if path.name in ("stdout.log", "stderr.log") and len(rel) >= 2 and rel[-2].isdigit():
            rank = int(rel[-2])  # torchrun: attempt_N/<local_rank>/std*.log
        else:
            m = _RANK_FILE.search(path.name)
            if m:
                rank = int(m.group(1))
        if rank is None:
            continue
        stream = "stderr" if "err" in path.name else "stdout"
        out.append(Source(str(path), rank, rank, None, None, timed=False, stream=stream))
    return out


def discover(folder: str | os.PathLike[str]) -> list[Source]:
    """The sources in ``folder``; an :class:`InputError` names what it expected when none."""
    path = Path(folder)
    if not path.is_dir():
        raise InputError(f"logs: {folder} is not a folder")
    found = _capture_sources(path)
    if not [s for s in found if s.depth >= 0]:
        found = _plain_sources(path) + [s for s in found if s.depth < 0]
    if not found:
        raise InputError(
            f"logs: {folder} holds no capture files (p<PID>.log) and no per-rank logs "
            "(torchrun --log-dir's attempt_N/<rank>/stdout.log, or rank<N>.log files)"
        )
    return found


def reader(source: Source, index: int, size: int = CHUNK) -> Iterator[list[tuple]]:
    """The lines of one source in file order, as row tuples (:data:`TIME` …), ``size``
    characters at a time."""
    return (_capture_rows if source.timed else _plain_rows)(source, index, size)


def batches(sources: list[Source]) -> Iterator[list[tuple]]:
    """Every line of ``sources`` as row tuples, in time order, a sorted batch at a time (untimed
    files after, one after another, by rank), each once: a line of a process that a captured
    process below it wrote first is dropped. Memory holds a chunk per source, not the run."""
    size = max(1 << 16, min(CHUNK, HELD // max(1, len(sources))))  # many files: smaller chunks
    timed = [reader(s, i, size) for i, s in enumerate(sources) if s.timed]
    merged = _merge(timed)
    depths = [s.depth for s in sources]
    yield from (merged if len(set(depths)) < 2 else _dedup(merged, depths))
    plain = [(i, s) for i, s in enumerate(sources) if not s.timed]
    plain.sort(key=lambda p: (p[1].rank if p[1].rank is not None else -1, p[1].stream))
    for i, s in plain:
        yield from reader(s, i)


def _merge(readers: list[Iterator[list[tuple]]]) -> Iterator[list[tuple]]:
    """Sorted chunks of many sorted streams as sorted batches: everything up to the earliest
    last time any stream's chunk reaches is complete, so it is cut there and sorted (runs that
    are sorted already: a C merge, on the time alone)."""
    held: dict[int, list[tuple]] = {}
    live = dict(enumerate(readers))
    while live or held:
        for k in list(live):
            if k not in held:
                chunk = next(live[k], None)
                if chunk is None:
                    del live[k]
                else:
                    held[k] = chunk
        if not held:
            return
        if not live:  # every stream is read to its end: what is held is the rest
            out = [row for k in sorted(held) for row in held[k]]
            held.clear()
        else:
            bound = (min(chunk[-1][TIME] for k, chunk in held.items() if k in live), math.inf)
            out = []
            for k in sorted(held):
                chunk = held[k]
                cut = bisect.bisect_right(chunk, bound)
                out.extend(chunk[:cut])
                if cut == len(chunk):
                    del held[k]
                else:
                    held[k] = chunk[cut:]
        out.sort(key=_BY_TIME)  # stable: lines of one time stay in source, then file, order
        yield out


def lines(sources: list[Source]) -> Iterator[Line]:
    """Every line of ``sources`` as a :class:`Line`, in the order :func:`batches` gives."""
    for batch in batches(sources):
        for row in batch:
            yield _line(row, sources)


def _dedup(merged: Iterator[list[tuple]], depths: list[int]) -> Iterator[list[tuple]]:
    """Drop a line when a deeper source wrote the same text within :data:`PASS_THROUGH_S`."""
    levels = sorted(set(depths))
    # for each depth, the texts deeper sources wrote lately (a count and the times to expire)
    pending: dict[int, Counter[str]] = {d: Counter() for d in levels}
    times: dict[int, deque[tuple[float, str]]] = {d: deque() for d in levels}
    for batch in merged:
        out = []
        for row in batch:
            when, text = row[TIME], row[TEXT]
            depth = depths[row[SOURCE]]
            window, order = pending[depth], times[depth]
            while order and order[0][0] < when - PASS_THROUGH_S:
                _, old = order.popleft()
                window[old] -= 1
                if window[old] <= 0:
                    del window[old]
            if window.get(text, 0) > 0:
                window[text] -= 1
                continue  # a pass-through copy of a deeper process's line
            for d in levels:
                if d < depth:
                    pending[d][text] += 1
                    times[d].append((when, text))
            out.append(row)
        yield out


__all__ = ["LAUNCHER", "Line", "Source", "batches", "discover", "lines"]
