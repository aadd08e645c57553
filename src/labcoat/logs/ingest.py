"""From sources to records in the ledger: every line gets its level, its failure signals and its
template, and is written with the run (``log_blocks``, ``log_templates``, ``log_sources``),
streaming: a run of millions of lines is never held in memory.

Most lines of a training log are a line seen before with other numbers in it, so everything
ingest works out for a line (its template, level and signals) is kept per digit-zeroed text
(:func:`labcoat.logs.templates.digit_key`): a repeat costs a dictionary look-up. Lines are
written a block of consecutive lines per row (a JSON array; SQLite's cost is per row, and a row
per line cost more than all the rest); the ledger's ``log_lines`` view unpacks them.

A traceback is read as one unit per process: its frames are ERROR lines of kind ``traceback``,
its last line (``RuntimeError: …``) is the ``exception`` a reader wants to see.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, Iterable

from labcoat.logs import classify
from labcoat.logs.sources import Source
from labcoat.logs.templates import CACHED, ZERO_DIGITS, Miner

#: lines per row of ``log_blocks``
BLOCK = 2048
#: blocks per write transaction (the write lock is not held for a whole run)
BLOCKS_PER_WRITE = 32
_RANK_PREFIX = re.compile(r"^\[rank\d+\]:\s?")
_ERRORISH = frozenset(k for k, v in classify.RANK_OF.items() if v >= classify.RANK_OF["ERROR"])
_PER_TEMPLATE = itemgetter(6, 1, 3, 7)  # (template id, source, level, kinds) of a stored line


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
        self.in_traceback: set[int] = set()
        self.facts: dict[str, tuple[str, tuple[str, ...]]] = {}

    def _facts(self, text: str, shape: str) -> tuple[str, tuple[str, ...]]:
        found = self.facts.get(shape)
        if found is None:
            level = classify.level_of(text)
            kinds = tuple(k for k in classify.signals(text, level) if k != "nonfinite")
            found = (level, kinds)
            if len(self.facts) < CACHED:
                self.facts[shape] = found
        return found

    def plain(self, text: str, shape: str) -> tuple[str, str, str]:
        """What a line outside a traceback says, whatever its digits: (the level its text shows,
        its kinds, its kinds when it was logged at ERROR or worse)."""
        level, kinds = self._facts(text, shape)
        tail = ("nonfinite",) if _maybe_nonfinite(text) and classify.nonfinite(text) else ()
        as_error = ("error", *(k for k in kinds if k != "error"))
        return level, ",".join((*kinds, *tail)), ",".join((*as_error, *tail))

    @staticmethod
    def special(text: str) -> bool:
        """The line may start or carry a traceback: read with :meth:`annotate`, never cached."""
        return text.startswith("[rank") or text.endswith(classify.TRACEBACK)

    def annotate(self, text: str, level: str, source: int, shape: str) -> tuple[str, str]:
        """(level, kinds comma-joined) of one line, in order within its source."""
        if text.startswith("[rank"):  # torch's distributed excepthook: "[rank1]: Traceback …"
            text = _RANK_PREFIX.sub("", text, count=1)
        if source in self.in_traceback:
            if (
                text.startswith((" ", "\t"))
                or not text.strip()
                or text.startswith(("During handling", "The above exception", classify.TRACEBACK))
            ):
                return "ERROR", "traceback"
            self.in_traceback.discard(source)
            if classify.exception_name(text):
                kinds = ["exception", *(k for k in self._facts(text, shape)[1] if k != "error")]
                if _maybe_nonfinite(text) and classify.nonfinite(text):
                    kinds.append("nonfinite")
                return "ERROR", ",".join(kinds)
        if text.endswith(classify.TRACEBACK):
            self.in_traceback.add(source)
            return level or "ERROR", "traceback"
        shown, kinds, as_error = self.plain(text, shape)
        if not level:
            return shown, kinds
        return level, as_error if level in _ERRORISH else kinds


def _maybe_nonfinite(text: str) -> bool:
    return "nan" in text or "inf" in text or "NaN" in text or "Inf" in text or "NAN" in text


class _Writer:
    """Blocks of stored lines, written a few at a time, with what the run's summary needs."""

    def __init__(self, store: Any, run_id: int, sources: int) -> None:
        self.store, self.run_id, self.sources = store, run_id, sources
        self.pending: list[tuple] = []
        self.blocks = 0
        self.lines = 0
        self.per_template: Counter[tuple] = Counter()  # (id, source, level, kinds) -> lines
        self.first_time: dict[int, str | None] = {}
        self.last_time: dict[int, str | None] = {}

    def add(self, rows: list[tuple]) -> None:
        self.per_template.update(map(_PER_TEMPLATE, rows))
        if len(self.first_time) < self.sources:
            for source, when in {r[1]: r[0] for r in reversed(rows)}.items():
                self.first_time.setdefault(source, when)
        last, seen = self.last_time, set()  # times as the file wrote them
        for r in reversed(rows):  # the last line of each source in the block: a few rows back
            if r[1] not in seen:
                seen.add(r[1])
                last[r[1]] = r[0]
                if len(seen) == self.sources:
                    break
        self.blocks += 1
        self.pending.append(
            (
                self.run_id,
                self.blocks,
                self.lines + 1,
                len(rows),
                json.dumps(rows, separators=(",", ":")),
            )
        )
        self.lines += len(rows)
        if len(self.pending) >= BLOCKS_PER_WRITE:
            self.flush()

    def flush(self, tx: Any = None) -> None:
        if not self.pending:
            return
        sql = (
            "INSERT INTO log_blocks (run_id, block, first_seq, lines, data) VALUES (?, ?, ?, ?, ?)"
        )
        if tx is not None:
            tx.executemany(sql, self.pending)
        else:
            with self.store.write() as tx:
                tx.executemany(sql, self.pending)
        self.pending = []


def ingest(
    ledger: Any,
    run_id: int,
    sources: list[Source],
    batches: Iterable[list[tuple]],
    *,
    miner: Miner | None = None,
    mined: dict[int, tuple[dict[int, str], dict[int, int]]] | None = None,
) -> Ingested:
    """Write the row tuples of ``batches`` (:func:`labcoat.logs.sources.batches`) as the log
    records of run ``run_id`` (a run is ingested once) and return what was written.
    ``mined``: source index -> (its templates, line number -> template id), for sources mined
    in parallel shards: their templates join this run's."""
    miner = miner or Miner()
    t0 = time.perf_counter()
    writer = _Writer(ledger.storage, run_id, len(sources))
    annotator = Annotator()
    in_traceback = annotator.in_traceback
    cache: dict[bytes, tuple[int, str, str | None, str | None] | None] = {}
    first_seq: dict[int, int] = {}
    last_steps: dict[int, int] = {}  # source -> the last step it was told (lines or markers)
    steps: dict[str, int | None] = {"": None}
    mined = mined or {}
    rows: list[tuple] = []
    append = rows.append
    errorish, zeroed = _ERRORISH, ZERO_DIGITS
    for batch in batches:
        for _, source, n, stream, level, step, logger, text, when in batch:
            if stream == "step":  # a step began in silence: it only tells which step
                if step:
                    last_steps[source] = int(step)
                continue
            try:
                at = steps[step]
            except KeyError:
                at = steps[step] = int(step) if step.lstrip("-").isdigit() else None
            if at is not None:
                last_steps[source] = at
            key = text.encode("utf-8", "replace").translate(zeroed)  # digit_key, inlined
            hit = cache.get(key)
            if hit is None or in_traceback and source in in_traceback or mined and source in mined:
                if source in mined:
                    names, ids = mined[source]
                    shape = names.get(ids.get(n, 0), "")
                    template = miner.add_template(shape)
                else:
                    template, shape = miner.mine(text)
                first_seq.setdefault(template, writer.lines + len(rows) + 1)
                if (
                    hit is not None
                    or source in mined
                    or source in in_traceback
                    or Annotator.special(text)
                ):  # read in its order within its source; what it says holds for it alone
                    shown, kinds = annotator.annotate(text, level, source, shape)
                    hit, level = (template, shown, kinds or None, kinds or None), ""
                else:
                    shown, plain, as_error = annotator.plain(text, shape)
                    hit = (template, shown, plain or None, as_error or None)
                    if len(cache) < CACHED:
                        cache[key] = hit
            template, shown, plain, as_error = hit
            if level:
                kinds = as_error if level in errorish else plain
            else:
                level, kinds = shown, plain
            append((when, source, at, level or None, stream, logger or None, template, kinds, text))
        if len(rows) >= BLOCK:  # whole blocks out after each batch, not a test per line
            full = len(rows) - len(rows) % BLOCK
            for start in range(0, full, BLOCK):
                writer.add(rows[start : start + BLOCK])
            rows = rows[full:]
            append = rows.append
    if rows:
        writer.add(rows)
    texts = miner.templates()
    with ledger.storage.write() as tx:
        writer.flush(tx)
        _write_summary(tx, run_id, writer, texts, sources, last_steps, first_seq)
    return Ingested(
        run_id,
        writer.lines,
        len({k[0] for k in writer.per_template}),
        time.perf_counter() - t0,
        [s.to_dict() for s in sources],
    )


def _write_summary(
    tx: Any,
    run_id: int,
    writer: _Writer,
    texts: dict[int, str],
    sources: list[Source],
    last_steps: dict[int, int],
    first_seq: dict[int, int],
) -> None:
    """``log_templates`` (count, ranks, worst level, signals) and ``log_sources`` of the run."""
    worst = classify.RANK_OF
    per_template: dict[int, list[Any]] = {}  # id -> [count, ranks, worst level, kinds]
    per_source: Counter[int] = Counter()
    for (template, source, level, kinds), count in writer.per_template.items():
        t = per_template.get(template)
        if t is None:
            t = per_template[template] = [0, set(), level, set()]
        t[0] += count
        t[1].add(sources[source].rank)
        if worst.get(level or "", 0) > worst.get(t[2] or "", 0):
            t[2] = level
        if kinds:
            t[3].update(kinds.split(","))
        per_source[source] += count
    tx.executemany(
        "INSERT INTO log_templates (run_id, template_id, template, count, ranks, level, "
        "first_seq, kinds) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                run_id,
                tid,
                texts.get(tid, ""),
                count,
                json.dumps(sorted(r for r in ranks if r is not None)),
                level or None,
                first_seq.get(tid),
                ",".join(sorted(kinds)) or None,
            )
            for tid, (count, ranks, level, kinds) in per_template.items()
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
                per_source.get(i, 0),
                _time(writer.first_time.get(i)),
                _time(writer.last_time.get(i)),
                last_steps.get(i),
            )
            for i, s in enumerate(sources)
        ],
    )


def _time(written: str | None) -> float | None:
    return None if written is None else float(written)


def ingested(ledger: Any, run_id: int) -> bool:
    with ledger.storage.read() as tx:
        return tx.value("SELECT count(*) FROM log_sources WHERE run_id = ?", (run_id,)) > 0


__all__ = ["Ingested", "ingest", "ingested"]
