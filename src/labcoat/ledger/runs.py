"""Runs: what was executed, with its provenance, and how it ended.

A run is two appended rows: the start (command, code, config, data, environment, seeds, host),
written as soon as the run begins so that a crash still leaves a record, and the end (time,
status, exit code, output). A run with no end row is reported as ``running`` (or as having died
without saying so). :class:`ActiveRun` is what ``with ledger.run(...) as run:`` yields.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from labcoat.errors import InputError
from labcoat.ledger.blobs import get_blob, put_blob
from labcoat.ledger.chain import append
from labcoat.ledger.environment import automatic_seeds
from labcoat.ledger.fingerprint import Fingerprint
from labcoat.ledger.provenance import Provenance, capture_provenance
from labcoat.ledger.schema import RUN_ENDS, RUNS
from labcoat.ledger.storage import Tx
from labcoat.ledger.timestamps import now

if TYPE_CHECKING:
    from labcoat.findings import Finding
    from labcoat.ledger.entries import Entry
    from labcoat.ledger.events import Event
    from labcoat.ledger.ledger import Ledger

#: how a run ended; "running" means no end was recorded (yet)
RUN_STATUSES = ("running", "ok", "failed", "interrupted", "killed")


@dataclass
class Run:
    """A recorded run with its provenance, as read back from the ledger."""

    id: int
    name: str | None
    command: list[str]
    cwd: str | None
    host: str | None
    user: str | None
    pid: int | None
    started_at: str
    git_root: str | None = None
    git_commit: str | None = None
    git_branch: str | None = None
    git_dirty: bool | None = None
    diff_hash: str | None = None
    untracked_skipped: list[str] = field(default_factory=list)
    config: Any = None
    config_hash: str | None = None
    data: list[Fingerprint] = field(default_factory=list)
    data_hash: str | None = None
    env: dict[str, Any] = field(default_factory=dict)
    env_hash: str | None = None
    seeds: dict[str, Any] = field(default_factory=dict)
    ended_at: str | None = None
    status: str = "running"
    exit_status: int | None = None
    error: str | None = None
    output_hash: str | None = None
    output_bytes: int | None = None
    duration_s: float | None = None
    end_seeds: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["data"] = [d.to_dict() for d in self.data]
        return out

    def __rich__(self):
        from labcoat.ledger.views import run_view

        return run_view(self)


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def start(tx: Tx, provenance: Provenance, *, name: str | None = None) -> int:
    """Append a run's start row (and its diff blob); returns the run id."""
    git = provenance.git
    diff_hash = put_blob(tx, git.diff) if git is not None and git.diff else None
    row = {
        "name": name,
        "started_at": now(),
        "command": _json(provenance.command),
        "cwd": provenance.cwd,
        "host": provenance.host,
        "user_name": provenance.user,
        "pid": provenance.pid,
        "git_root": git.root if git else None,
        "git_commit": git.commit if git else None,
        "git_branch": git.branch if git else None,
        "git_dirty": None if git is None else int(git.dirty),
        "diff_hash": diff_hash,
        "untracked_skipped": _json(list(git.untracked_skipped)) if git else None,
        "config": _json(provenance.config),
        "config_hash": provenance.config_hash,
        "data": _json([f.to_dict() for f in provenance.data]),
        "data_hash": provenance.data_hash,
        "env": _json(provenance.env),
        "env_hash": provenance.env_hash,
        "seeds": _json(provenance.seeds),
    }
    [run_id] = append(tx, RUNS, [row])
    return run_id


def finish(
    tx: Tx,
    run_id: int,
    *,
    status: str,
    exit_status: int | None,
    error: str | None = None,
    output: bytes | None = None,
    duration_s: float | None = None,
    seeds: Mapping[str, Any] | None = None,
) -> None:
    """Append the end row of ``run_id``; a run ends once."""
    if status not in RUN_STATUSES[1:]:
        raise InputError(f"status: must be one of {', '.join(RUN_STATUSES[1:])}; got {status!r}")
    if tx.value("SELECT 1 FROM runs WHERE id = ?", (run_id,)) is None:
        raise InputError(f"run {run_id}: there is no such run; `labcoat ledger runs` shows the ids")
    if tx.value("SELECT 1 FROM run_ends WHERE run_id = ?", (run_id,)) is not None:
        raise InputError(f"run {run_id}: has already ended; a run's end is recorded once")
    append(
        tx,
        RUN_ENDS,
        [
            {
                "run_id": run_id,
                "ended_at": now(),
                "status": status,
                "exit_status": exit_status,
                "error": error,
                "output_hash": put_blob(tx, output) if output else None,
                "output_bytes": None if output is None else len(output),
                "duration_s": None if duration_s is None else round(float(duration_s), 6),
                "seeds": _json(dict(seeds)) if seeds else None,
            }
        ],
    )


_SELECT = (
    "SELECT r.*, e.ended_at, e.status, e.exit_status, e.error, e.output_hash, e.output_bytes, "
    "e.duration_s, e.seeds AS end_seeds FROM runs r LEFT JOIN run_ends e ON e.run_id = r.id"
)


def _from_row(row: dict[str, Any]) -> Run:
    def load(key: str, default: Any) -> Any:
        value = row.get(key)
        return default if value is None else json.loads(value)

    return Run(
        id=int(row["id"]),
        name=row["name"],
        command=load("command", []),
        cwd=row["cwd"],
        host=row["host"],
        user=row["user_name"],
        pid=row["pid"],
        started_at=row["started_at"],
        git_root=row["git_root"],
        git_commit=row["git_commit"],
        git_branch=row["git_branch"],
        git_dirty=None if row["git_dirty"] is None else bool(row["git_dirty"]),
        diff_hash=row["diff_hash"],
        untracked_skipped=load("untracked_skipped", []),
        config=load("config", None),
        config_hash=row["config_hash"],
        data=[Fingerprint.from_dict(d) for d in load("data", [])],
        data_hash=row["data_hash"],
        env=load("env", {}),
        env_hash=row["env_hash"],
        seeds=load("seeds", {}),
        ended_at=row["ended_at"],
        status=row["status"] or "running",
        exit_status=row["exit_status"],
        error=row["error"],
        output_hash=row["output_hash"],
        output_bytes=row["output_bytes"],
        duration_s=row["duration_s"],
        end_seeds=load("end_seeds", {}),
    )


def get(tx: Tx, run_id: int) -> Run | None:
    rows = tx.dicts(f"{_SELECT} WHERE r.id = ?", (run_id,))
    return _from_row(rows[0]) if rows else None


def listing(tx: Tx, *, limit: int | None = None, status: str | None = None) -> list[Run]:
    sql, params = _SELECT, []
    if status == "running":
        sql += " WHERE e.run_id IS NULL"
    elif status is not None:
        sql += " WHERE e.status = ?"
        params.append(status)
    sql += " ORDER BY r.id DESC"
    if limit:
        sql += f" LIMIT {int(limit)}"
    return [_from_row(r) for r in tx.dicts(sql, params)][::-1]


def diff_text(tx: Tx, run: Run) -> str:
    if not run.diff_hash:
        return ""
    data = get_blob(tx, run.diff_hash)
    return "" if data is None else data.decode(errors="replace")


def output_text(tx: Tx, run: Run) -> str:
    if not run.output_hash:
        return ""
    data = get_blob(tx, run.output_hash)
    return "" if data is None else data.decode(errors="replace")


def status_of(exc_type: type[BaseException] | None) -> str:
    if exc_type is None:
        return "ok"
    if issubclass(exc_type, KeyboardInterrupt):
        return "interrupted"
    return "failed"


class ActiveRun:
    """``with ledger.run(...) as run:``: provenance is captured and the run written on entry;
    the end (status, duration, an exception's type and message) is written on exit.

    Inside the block, ``run.id`` is the run's id and the helpers below link records to it.
    """

    def __init__(self, ledger: "Ledger", *, name: str | None = None, **capture: Any):
        self.ledger = ledger
        self.name = name
        self._capture = capture
        self.id: int | None = None
        self.provenance: Provenance | None = None
        self._t0 = 0.0

    def __enter__(self) -> "ActiveRun":
        if self.id is not None:
            raise InputError("this run has already started; call ledger.run(...) again for a new run")
        self.provenance = capture_provenance(**self._capture, exclude=self.ledger.storage.own_files())
        self.id = self.ledger._start_run(self.provenance, name=self.name)
        self._t0 = time.monotonic()
        self.ledger._active_runs.append(self.id)  # records made inside the block join this run
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self.id in self.ledger._active_runs:
            self.ledger._active_runs.remove(self.id)
        error = None if exc is None else f"{exc_type.__name__}: {exc}"
        self.ledger._finish_run(
            self.id,
            status=status_of(exc_type),
            exit_status=0 if exc_type is None else (130 if issubclass(exc_type, KeyboardInterrupt) else 1),
            error=error,
            duration_s=time.monotonic() - self._t0,
            seeds=automatic_seeds(),  # a seed set inside the block shows up here
        )

    def _started(self) -> int:
        if self.id is None:
            raise InputError("the run has not started; use it as `with ledger.run(...) as run:`")
        return self.id

    def hypothesis(self, title: str, *, predict: str | None, **kwargs: Any) -> "Entry":
        """An entry linked to this run."""
        runs = (*kwargs.pop("runs", ()), self._started())
        return self.ledger.hypothesis(title, predict=predict, runs=runs, **kwargs)

    def record_findings(self, findings: Iterable["Finding"], **kwargs: Any) -> list[int]:
        return self.ledger.record_findings(findings, run=self._started(), **kwargs)

    def record_events(self, events: Iterable[Any], **kwargs: Any) -> int:
        return self.ledger.record_events(events, run=self._started(), **kwargs)

    def record_event(self, kind: str, **kwargs: Any) -> int:
        return self.ledger.record_event(kind, run=self._started(), **kwargs)

    def events(self, **kwargs: Any) -> list["Event"]:
        return self.ledger.events(run=self._started(), **kwargs)

    def record(self) -> Run:
        """The run as stored now."""
        return self.ledger.get_run(self._started())

    def __repr__(self) -> str:
        return f"ActiveRun(id={self.id}, ledger={self.ledger.location!r})"
