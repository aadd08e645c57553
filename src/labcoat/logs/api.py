"""The logs engine's entry points: capture a command's logs as ``labcoat run`` runs it, ingest a
folder of log files, and read a run back (filtered, folded, or for its failure)."""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from labcoat.logs import sources as _sources
from labcoat.logs import store as _store
from labcoat.logs.analysis import MIN_SILENCE_S, analyse
from labcoat.logs.capture import ENV_DIR
from labcoat.logs.fold import fold
from labcoat.logs.ingest import Ingested, ingest
from labcoat.logs.result import TIMELINE_EVENT, LogsReport

SITE = str(Path(__file__).parent / "_site")


class CommandCapture:
    """The logs of one command that ``labcoat run`` runs: its ranks' capture files (through
    the ``sitecustomize`` in :data:`SITE`) and the launcher's own output (:meth:`tap`)."""

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="labcoat-logs-")
        self._file = open(
            os.path.join(self.folder, _sources.LAUNCHER),
            "w",
            encoding="utf-8",
            errors="replace",
            newline="\n",
            buffering=1 << 16,
        )
        self._partial: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def env(self) -> dict[str, str]:
        """What the command's environment gains: the capture folder and the startup hook."""
        path = os.environ.get("PYTHONPATH", "")
        return {ENV_DIR: self.folder, "PYTHONPATH": SITE + (os.pathsep + path if path else "")}

    def tap(self, stream: str, chunk: bytes) -> None:
        """The launcher's output as ``labcoat run`` pumps it (from its pump threads)."""
        when = time.time()
        with self._lock:
            data = self._partial.get(stream, b"") + chunk
            *complete, rest = data.split(b"\n")
            self._partial[stream] = rest
            for raw in complete:
                text = raw.decode("utf-8", "replace").rstrip("\r")
                self._file.write(f"{when:.6f}\t{stream}\t\t\t\t{text}\n")

    def ingest(self, ledger: Any, run_id: int) -> Ingested:
        with self._lock:
            for stream, rest in self._partial.items():
                if rest:
                    self._file.write(
                        f"{time.time():.6f}\t{stream}\t\t\t\t{rest.decode('utf-8', 'replace')}\n"
                    )
            self._partial.clear()
            self._file.close()
        found = _sources.discover(self.folder)
        return ingest(ledger, run_id, found, _sources.batches(found))

    def conclude(self, ledger: Any, run_id: int) -> LogsReport:
        """Read the ingested run for its failure and record the findings with the run."""
        report = why(run_id, ledger=ledger)
        ledger.record_findings(report.findings, run=run_id, source="logs")
        ledger.record_event(TIMELINE_EVENT, run=run_id, source="logs", data=report.timeline())
        return report

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def ingest_folder(
    ledger: Any,
    folder: str | os.PathLike[str],
    *,
    name: str | None = None,
    engine: str = "local",
) -> int:
    """Record a folder of log files (capture files, ``torchrun --log-dir``, ``rank<N>.log``) as
    a run of ``ledger`` and return the run's id. ``engine="ray"`` mines the files in parallel
    Ray tasks (:mod:`labcoat.logs.parallel`)."""
    from labcoat._validation import OneOf

    OneOf(("local", "ray")).check(engine, "engine")
    found = _sources.discover(folder)
    mined = None
    if engine == "ray":
        from labcoat.logs.parallel import mine_shards

        mined = mine_shards(found)
    run = ledger.start_run(name=name or f"logs {os.path.basename(os.fspath(folder))}", git=False)
    try:
        ingest(ledger, run.id, found, _sources.batches(found), mined=mined)
    except BaseException as exc:
        ledger.finish_run(run.id, status="failed", exit_status=None, error=repr(exc))
        raise
    ledger.finish_run(run.id, status="ok", exit_status=None)
    return run.id


def _with_run(run: Any, ledger: Any, engine: str = "local") -> tuple[Any, int, Any]:
    """(ledger holding the run, run id, background ledger)."""
    from labcoat.ledger import Ledger

    if isinstance(run, (str, os.PathLike)) and os.path.isdir(run):
        # ledger=False: no background (nothing earlier to compare with)
        background = None if ledger is False else ledger or Ledger.existing()
        scratch = Ledger(os.path.join(tempfile.mkdtemp(prefix="labcoat-logs-"), "ledger.db"))
        return scratch, ingest_folder(scratch, run, engine=engine), background
    if engine != "local":
        from labcoat.errors import InputError

        raise InputError(
            f"logs: --engine {engine} mines the files of a folder of logs in parallel; run "
            f"{run} is in the ledger already, mined (give the folder, or leave --engine out)"
        )
    book = ledger if ledger is not None else Ledger(create=False)
    return book, _store.run_with_logs(book, run), book


def why(
    run: Any = "last",
    *,
    ledger: Any = None,
    min_silence_s: float = MIN_SILENCE_S,
    engine: str = "local",
) -> LogsReport:
    """Read run ``run`` (an id, ``"last"`` or a folder of log files) for its failure (a folder
    is judged against ``ledger``'s earlier healthy runs, or none with ``ledger=False``); a rank
    counts as silent after ``min_silence_s`` seconds without a line (and 10 of its usual
    gaps). ``engine="ray"`` mines a folder's files in parallel."""
    book, run_id, history = _with_run(run, ledger, engine)
    templates = _store.templates(book, run_id)
    if history is not None and history is book:
        known, n_runs = _store.background(book, run_id)
    elif history is not None:
        known, n_runs = _store.background(history, 1 << 62)
    else:
        known, n_runs = {}, 0
    analysis = analyse(
        _store.rows(book, run_id),
        templates,
        known,
        history_runs=n_runs,
        last_steps=_store.last_steps(book, run_id),
        min_silence_s=min_silence_s,
    )
    shown = run_id if not (isinstance(run, (str, os.PathLike)) and os.path.isdir(run)) else str(run)
    return LogsReport(shown, analysis)


def records(
    run: Any = "last", *, ledger: Any = None, engine: str = "local", **filters: Any
) -> Iterator[dict]:
    """The run's records, filtered by rank, level, step (``"A..B"``) and grep."""
    book, run_id, _ = _with_run(run, ledger, engine)
    templates = _store.templates(book, run_id)
    for row in _store.rows(book, run_id, **filters):
        row["template"] = templates.get(row["template_id"], {}).get("template", "")
        yield row


def folded(run: Any = "last", *, ledger: Any = None, engine: str = "local", **filters: Any) -> list:
    """The folded groups of the run's (filtered) records."""
    book, run_id, _ = _with_run(run, ledger, engine)
    return fold(_store.rows(book, run_id, **filters), _store.templates(book, run_id))


@dataclass(frozen=True)
class FoldedLog:
    """A run's (filtered) records folded: one group per template, with its ranks and count;
    what ``labcoat logs RUN --folded`` shows. ``run``: the run as it was named."""

    run: Any
    groups: list

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run, "groups": [g.to_dict() for g in self.groups]}


def fold_log(run: Any = "last", *, ledger: Any = None, engine: str = "local", **filters: Any):
    """:func:`folded` as one answer, :class:`FoldedLog`."""
    return FoldedLog(run, folded(run, ledger=ledger, engine=engine, **filters))


@dataclass(frozen=True)
class LogRecords:
    """The first records of a run (up to a limit), as ``labcoat logs RUN --json`` prints them;
    the terminal streams :func:`records` instead, line by line, however many there are."""

    run: Any
    records: list[dict]

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run, "count": len(self.records), "records": self.records}


def first_records(
    run: Any = "last",
    *,
    ledger: Any = None,
    engine: str = "local",
    limit: int | None = None,
    **filters: Any,
) -> LogRecords:
    """The first ``limit`` (``None``: all) of :func:`records` as :class:`LogRecords`."""
    rows = records(run, ledger=ledger, engine=engine, **filters)
    try:
        return LogRecords(run, list(itertools.islice(rows, limit)))
    finally:
        rows.close()  # before a ledger the caller closes goes away under the open read


__all__ = [
    "CommandCapture",
    "FoldedLog",
    "LogRecords",
    "first_records",
    "fold_log",
    "folded",
    "ingest_folder",
    "records",
    "why",
]
