"""Runs: what was executed, with its provenance, and how it ended.

A run is two appended rows: the start (command, code, config, data, environment, seeds, host),
written as soon as the run begins so that a crash still leaves a record, and the end (time,
status, exit code, output). A run with no end row is reported as ``running`` (or as having died
without saying so). A run of a designed experiment also carries its factor levels
(``{"lr": "high", ...}``): an event of kind :data:`FACTORS_KIND` written in the start's
transaction, so the levels are chained with the run and cannot be added after its result.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from labcoat._validation import OneOf
from labcoat.errors import InputError
from labcoat.ledger.records import events as _events
from labcoat.ledger.store.blobs import get_blob, put_blob
from labcoat.ledger.store.chain import append
from labcoat.ledger.store.connection import Tx
from labcoat.ledger.store.schema import RUN_ENDS, RUNS
from labcoat.ledger.store.select import encode, record, rows_where, where
from labcoat.ledger.store.timestamps import now
from labcoat.provenance import Fingerprint, Provenance

#: how a run ended; "running" means no end was recorded (yet)
RUN_STATUSES = ("running", "ok", "failed", "interrupted", "killed")
_JSON = ("command", "untracked_skipped", "config", "data", "env", "seeds", "end_seeds")
#: the kind of the event that holds a run's factor levels
FACTORS_KIND = "factors"


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
    #: the factor levels of a designed experiment's run (``{}`` when none were given)
    factors: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.data = [
            d if isinstance(d, Fingerprint) else Fingerprint.from_dict(d) for d in self.data
        ]
        self.git_dirty = None if self.git_dirty is None else bool(self.git_dirty)

    #: the fields a listing of runs shows (``labcoat ledger runs --json``)
    SUMMARY = (
        "id",
        "name",
        "started_at",
        "ended_at",
        "status",
        "exit_status",
        "command",
        "git_commit",
        "git_dirty",
        "config_hash",
        "data_hash",
        "env_hash",
    )

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["data"] = [d.to_dict() for d in self.data]
        return out

    def summary(self) -> dict[str, Any]:
        """The fields of :data:`SUMMARY`: one row of a listing."""
        return {k: getattr(self, k) for k in self.SUMMARY}

    def __rich__(self):
        from labcoat.ledger.view import run_view

        return run_view(self)


def check_factors(factors: Any) -> dict[str, Any]:
    """``{name: level}``: each name an identifier, each level text, a number or a bool."""
    if not isinstance(factors, Mapping):
        raise InputError(
            f"factors: expected a mapping of factor name -> level; got {type(factors).__name__}"
        )
    out = {}
    for key, level in factors.items():
        if not isinstance(key, str) or not key.isidentifier():
            raise InputError(f"factors: {key!r} is not a factor name (an identifier)")
        if not isinstance(level, (str, int, float, bool)):
            raise InputError(f"factors: {key} = {level!r}: a level is text, a number or a bool")
        out[key] = level
    return out


def start(
    tx: Tx,
    provenance: Provenance,
    *,
    name: str | None = None,
    factors: Mapping[str, Any] | None = None,
) -> int:
    """Append a run's start row (its diff blob, and its factor levels when given); returns the
    run id."""
    checked = check_factors(factors) if factors else None
    git = provenance.git
    many = 10**9  # provenance is plain JSON already: keep every item
    row = {
        "name": name,
        "started_at": now(),
        "command": encode(provenance.command, max_items=many),
        "cwd": provenance.cwd,
        "host": provenance.host,
        "user_name": provenance.user,
        "pid": provenance.pid,
        "config": encode(provenance.config, max_items=many),
        "config_hash": provenance.config_hash,
        "data": encode([f.to_dict() for f in provenance.data], max_items=many),
        "data_hash": provenance.data_hash,
        "env": encode(provenance.env, max_items=many),
        "env_hash": provenance.env_hash,
        "seeds": encode(provenance.seeds, max_items=many),
    }
    if git is not None:
        row.update(
            git_root=git.root,
            git_commit=git.commit,
            git_branch=git.branch,
            git_dirty=int(git.dirty),
            diff_hash=put_blob(tx, git.diff) if git.diff else None,
            untracked_skipped=encode(list(git.untracked_skipped), max_items=many),
        )
    [run_id] = append(tx, RUNS, [row])
    if checked:
        _events.record_all(
            tx, [{"kind": FACTORS_KIND, "data": checked}], run_id=run_id, source="ledger"
        )
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
    OneOf(RUN_STATUSES[1:]).check(status, "status")
    exists(tx, run_id)
    if tx.value("SELECT 1 FROM run_ends WHERE run_id = ?", (run_id,)) is not None:
        raise InputError(f"run {run_id}: has already ended; a run's end is recorded once")
    end = {
        "run_id": run_id,
        "ended_at": now(),
        "status": status,
        "exit_status": exit_status,
        "error": error,
        "output_hash": put_blob(tx, output) if output else None,
        "output_bytes": None if output is None else len(output),
        "duration_s": None if duration_s is None else round(float(duration_s), 6),
        "seeds": encode(dict(seeds)) if seeds else None,
    }
    append(tx, RUN_ENDS, [end])


def exists(tx: Tx, run_id: int) -> int:
    if tx.value("SELECT 1 FROM runs WHERE id = ?", (run_id,)) is None:
        raise InputError(f"run {run_id}: there is no such run; `labcoat ledger runs` shows the ids")
    return run_id


#: a run's start and end rows, named as :class:`Run` fields
SOURCE = """(SELECT r.id, r.name, r.started_at, r.command, r.cwd, r.host, r.user_name AS user,
    r.pid, r.git_root, r.git_commit, r.git_branch, r.git_dirty, r.diff_hash, r.untracked_skipped, \
r.config,
    r.config_hash, r.data, r.data_hash, r.env, r.env_hash, r.seeds, e.ended_at,
    COALESCE(e.status, 'running') AS status, e.exit_status, e.error, e.output_hash, e.output_bytes,
    e.duration_s, e.seeds AS end_seeds
    FROM runs r LEFT JOIN run_ends e ON e.run_id = r.id) q"""


def listing(
    tx: Tx, *, run_id: int | None = None, status: str | None = None, limit: int | None = None
) -> list[Run]:
    """Runs, oldest first (the latest ``limit`` when given)."""
    rows = rows_where(tx, SOURCE, where(id=run_id, status=status), order_by="id DESC", limit=limit)
    found = [record(Run, row, json_columns=_JSON) for row in reversed(rows)]
    levels = _factors(tx, run_id)
    for run in found:
        run.factors = levels.get(run.id, {})
    return found


def _factors(tx: Tx, run_id: int | None) -> dict[int, dict[str, Any]]:
    """Run id -> its factor levels (the first factors event of each run)."""
    out: dict[int, dict[str, Any]] = {}
    for event in _events.query(tx, kind=FACTORS_KIND, source="ledger", run_id=run_id):
        if event.run_id is not None:
            out.setdefault(event.run_id, event.data)
    return out


def get(tx: Tx, run_id: int) -> Run:
    found = listing(tx, run_id=run_id)
    if not found:
        raise InputError(f"run {run_id}: there is no such run; `labcoat ledger runs` shows the ids")
    return found[0]


def blob_text(tx: Tx, key: str | None) -> str:
    """A stored diff or output as text ('' when there is none)."""
    data = get_blob(tx, key) if key else None
    return "" if data is None else data.decode(errors="replace")


def status_of(exc_type: type[BaseException] | None) -> tuple[str, int]:
    """(status, exit code) of a block that ended with ``exc_type`` (None: normally)."""
    if exc_type is None:
        return "ok", 0
    if issubclass(exc_type, KeyboardInterrupt):
        return "interrupted", 130
    return "failed", 1
