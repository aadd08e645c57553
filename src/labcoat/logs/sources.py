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

import heapq
import json
import os
import re
from collections import Counter, deque
from dataclasses import dataclass
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
    template: str | None = None  # mined already (a shard mined in parallel)


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


def _read_capture(source: Source, index: int) -> Iterator[Line]:
    with open(source.path, encoding="utf-8", errors="replace", newline="\n") as f:
        for raw in f:
            if raw.startswith(HEADER):
                continue
            parts = raw.rstrip("\n").split("\t", 5)
            if len(parts) < 6:
                continue  # a line cut by a kill
            try:
                when = float(parts[0])
            except ValueError:
                continue
            step = parts[3]
            yield Line(
                when,
                source.rank,
                source.local_rank,
                source.node,
                int(step) if step else None,
                parts[2],
                parts[1],
                parts[4],
                parts[5],
                index,
            )


def _read_plain(source: Source, index: int) -> Iterator[Line]:
    with open(source.path, encoding="utf-8", errors="replace", newline="\n") as f:
        for raw in f:
            text = _TEE_PREFIX.sub("", raw.rstrip("\n").rstrip("\r"), count=1)
            yield Line(
                None,
                source.rank,
                source.local_rank,
                source.node,
                None,
                "",
                source.stream,
                "",
                text,
                index,
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


def reader(source: Source, index: int) -> Iterator[Line]:
    """The lines of one source, in file order."""
    if not source.timed:
        return _read_plain(source, index)
    return (_read_capture if source.depth >= 0 else _read_launcher)(source, index)


def _mined(lines: Iterator[Line], templates: tuple[dict[int, str], list[int]]) -> Iterator[Line]:
    names, ids = templates
    for line, tid in zip(lines, ids):
        line.template = names.get(tid, "")
        yield line


def lines(
    sources: list[Source], mined: dict[int, tuple[dict[int, str], list[int]]] | None = None
) -> Iterator[Line]:
    """Every line of ``sources``, in time order (untimed files one after another, by rank),
    each once: a line of a process that a captured process below it wrote first is dropped.
    ``mined``: source index -> (its templates, the template id of each of its lines), from
    shards mined in parallel."""

    def read(i: int, s: Source) -> Iterator[Line]:
        found = reader(s, i)
        return found if mined is None or i not in mined else _mined(found, mined[i])

    timed = [read(i, s) for i, s in enumerate(sources) if s.timed]
    for line in _dedup(heapq.merge(*timed, key=lambda l: l.time), sources):
        yield line
    plain = [(i, s) for i, s in enumerate(sources) if not s.timed]
    plain.sort(key=lambda p: (p[1].rank if p[1].rank is not None else -1, p[1].stream))
    for i, s in plain:
        yield from read(i, s)


def _read_launcher(source: Source, index: int) -> Iterator[Line]:
    for line in _read_capture(source, index):
        line.text = _TEE_PREFIX.sub("", line.text, count=1)
        yield line


def _dedup(merged: Iterator[Line], sources: list[Source]) -> Iterator[Line]:
    """Drop a line when a deeper source wrote the same text within :data:`PASS_THROUGH_S`."""
    depths = sorted({s.depth for s in sources})
    if len(depths) < 2:
        yield from merged
        return
    # for each depth, the texts deeper sources wrote lately (a count and the times to expire)
    pending: dict[int, Counter[str]] = {d: Counter() for d in depths}
    times: dict[int, deque[tuple[float, str]]] = {d: deque() for d in depths}
    for line in merged:
        depth = sources[line.source].depth
        window, order = pending[depth], times[depth]
        while order and order[0][0] < line.time - PASS_THROUGH_S:
            _, old = order.popleft()
            window[old] -= 1
            if window[old] <= 0:
                del window[old]
        if window.get(line.text, 0) > 0:
            window[line.text] -= 1
            continue  # a pass-through copy of a deeper process's line
        for d in depths:
            if d < depth:
                pending[d][line.text] += 1
                times[d].append((line.time, line.text))
        yield line


__all__ = ["LAUNCHER", "Line", "Source", "discover", "lines"]
