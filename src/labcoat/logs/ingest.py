"""From sources to records in the ledger: every line gets its level, its failure signals and its
template, and is written with the run in batches (``log_lines``, ``log_templates``,
``log_sources``), streaming: a run of millions of lines is never held in memory.

A traceback is read as one unit per process: its frames are ERROR lines of kind ``traceback``,
its last line (``RuntimeError: …``) is the ``exception`` a reader wants to see.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from labcoat.logs import classify
from labcoat.logs.sources import Line, Source
from labcoat.logs.templates import Miner

BATCH = 20_000
_RANK_PREFIX = re.compile(r"^\[rank\d+\]:\s?")
_INSERT_LINE = (
    "INSERT INTO log_lines (id, run_id, seq, time, rank, local_rank, node, step, level, stream, "
    "logger, template_id, kinds, text) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


@dataclass
class Ingested:
    run_id: int
    lines: int
    templates: int
    seconds: float
    sources: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run_id,
            "lines": self.lines,
            "templates": self.templates,
            "seconds": round(self.seconds, 6),
            "lines_per_s": round(self.lines / self.seconds) if self.seconds > 0 else None,
        }


class Annotator:
    """Level and signals per line, with one traceback state per source.

    What a line's words say (its level, a timeout, an out-of-memory) is the same for every line
    of one masked shape, so it is worked out once per shape; only the traceback state and a
    non-finite value (masked like any number) are looked at per line, the latter with a
    substring test before any pattern."""

    def __init__(self) -> None:
        self.in_traceback: dict[int, bool] = {}
        self.facts: dict[str, tuple[str, tuple[str, ...]]] = {}

    def _facts(self, text: str, shape: str) -> tuple[str, tuple[str, ...]]:
        found = self.facts.get(shape)
        if found is None:
            level = classify.level_of(text)
            kinds = tuple(k for k in classify.signals(text, level) if k != "nonfinite")
            found = (level, kinds)
            if len(self.facts) < 1_000_000:
                self.facts[shape] = found
        return found

    def annotate(self, line: Line, shape: str) -> str:
        """Set ``line.level`` where the text shows one; return its kinds, comma-joined."""
        text = line.text
        if text.startswith("[rank"):  # torch's distributed excepthook: "[rank1]: Traceback …"
            text = _RANK_PREFIX.sub("", text, count=1)
        source = line.source
        if self.in_traceback.get(source):
            if (
                text.startswith((" ", "\t"))
                or not text.strip()
                or text.startswith(("During handling", "The above exception", classify.TRACEBACK))
            ):
                line.level = "ERROR"
                return "traceback"
            self.in_traceback[source] = False
            if classify.exception_name(text):
                line.level = "ERROR"
                kinds = ["exception", *(k for k in self._facts(text, shape)[1] if k != "error")]
                if _maybe_nonfinite(text) and classify.nonfinite(text):
                    kinds.append("nonfinite")
                return ",".join(kinds)
        if text.endswith(classify.TRACEBACK):
            self.in_traceback[source] = True
            line.level = line.level or "ERROR"
            return "traceback"
        level, kinds = self._facts(text, shape)
        if not line.level:
            line.level = level
        elif classify.RANK_OF.get(line.level, 0) >= classify.RANK_OF["ERROR"]:
            kinds = ("error", *(k for k in kinds if k != "error"))
        if _maybe_nonfinite(text) and classify.nonfinite(text):
            kinds = (*kinds, "nonfinite")
        return ",".join(kinds)


def _maybe_nonfinite(text: str) -> bool:
    return "nan" in text or "inf" in text or "NaN" in text or "Inf" in text or "NAN" in text


def _steps_apart(lines: Iterable[Line], last_steps: dict[int, int]) -> Iterator[Line]:
    """The lines, without the step markers a capture writes when a step begins in silence
    (they only tell which step a process was in)."""
    for line in lines:
        if line.stream == "step":
            if line.step is not None:
                last_steps[line.source] = line.step
            continue
        yield line


def records(lines: Iterable[Line], miner: Miner) -> Iterator[tuple[Line, int, str]]:
    """Each line with its template id and kinds."""
    annotator = Annotator()
    add, annotate = miner.add_shape, annotator.annotate
    for line in lines:
        if line.template is None:
            template, shape = add(line.text)
        else:  # mined in a shard: its template joins this run's
            template, shape = miner.add_template(line.template), line.template
        yield line, template, annotate(line, shape)


def ingest(
    ledger: Any, run_id: int, sources: list[Source], lines: Iterable[Line], *, miner=None
) -> Ingested:
    """Write ``lines`` as the log records of run ``run_id`` (replacing none: a run is ingested
    once) and return what was written."""
    miner = miner or Miner()
    store = ledger.storage
    t0 = time.perf_counter()
    # id -> [count, ranks set, worst level, first seq, kinds set]
    per_template: dict[int, list[Any]] = {}
    per_source: dict[int, list[Any]] = {}  # index -> [lines, first time, last time]
    batch: list[tuple] = []
    last_steps: dict[int, int] = {}  # source -> the last step it was told (lines or markers)
    seq = 0
    worst = classify.RANK_OF
    for line, template, kinds in records(_steps_apart(lines, last_steps), miner):
        seq += 1
        batch.append(
            (
                run_id,
                seq,
                line.time,
                line.rank,
                line.local_rank,
                line.node,
                line.step,
                line.level or None,
                line.stream,
                line.logger or None,
                template,
                kinds or None,
                line.text,
            )
        )
        t = per_template.get(template)
        if t is None:
            t = per_template[template] = [0, set(), line.level, seq, set()]
        t[0] += 1
        t[1].add(line.rank)
        if worst.get(line.level, 0) > worst.get(t[2], 0):
            t[2] = line.level
        if kinds:
            t[4].update(kinds.split(","))
        if line.step is not None:
            last_steps[line.source] = line.step
        s = per_source.get(line.source)
        if s is None:
            per_source[line.source] = [1, line.time, line.time]
        else:
            s[0] += 1
            s[2] = line.time
        if len(batch) >= BATCH:
            with store.write() as tx:
                _write_lines(tx, batch)
            batch = []
    texts = miner.templates()
    with store.write() as tx:
        if batch:
            _write_lines(tx, batch)
        tx.executemany(
            "INSERT INTO log_templates (run_id, template_id, template, count, ranks, level, "
            "first_seq, kinds) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    run_id,
                    tid,
                    texts.get(tid, ""),
                    count,
                    json.dumps(sorted((r for r in ranks if r is not None))),
                    level or None,
                    first,
                    ",".join(sorted(kinds)) or None,
                )
                for tid, (count, ranks, level, first, kinds) in per_template.items()
            ],
        )
        tx.executemany(
            "INSERT INTO log_sources (run_id, source, path, rank, local_rank, group_rank, node, "
            "pid, lines, first_time, last_time, last_step) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
            "?, ?)",
            [
                (
                    run_id,
                    i,
                    s.path,
                    s.rank,
                    s.local_rank,
                    s.group_rank,
                    s.node,
                    s.pid,
                    per_source.get(i, [0, None, None])[0],
                    per_source.get(i, [0, None, None])[1],
                    per_source.get(i, [0, None, None])[2],
                    last_steps.get(i),
                )
                for i, s in enumerate(sources)
            ],
        )
    return Ingested(
        run_id, seq, len(per_template), time.perf_counter() - t0, [s.to_dict() for s in sources]
    )


def _write_lines(tx: Any, batch: list[tuple]) -> None:
    """One batch of lines; ids follow the ledger's last line, read under the write lock, so two
    runs ingested at once never collide."""
    start = tx.value("SELECT coalesce(max(id), 0) FROM log_lines")
    tx.executemany(_INSERT_LINE, [(start + i, *row) for i, row in enumerate(batch, 1)])


def ingested(ledger: Any, run_id: int) -> bool:
    with ledger.storage.read() as tx:
        return tx.value("SELECT count(*) FROM log_sources WHERE run_id = ?", (run_id,)) > 0


__all__ = ["Ingested", "ingest", "ingested", "records"]
