"""``labcoat.Ledger``: the lab notebook's one entry point.

It opens (and, when asked, creates and migrates) the store, refuses files that are not
ledgers, and routes every write through the store's single write path; reads use read-only
connections, so reading never waits for a writer. The records it returns are plain data: to
change one, call the ledger (``ledger.resolve(entry, ...)``). The ledger is closed, and its
file sealed, by ``close()``, at the end of a ``with`` block, or when the process exits.
"""

from __future__ import annotations

import os
import time
import weakref
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping, Sequence

from labcoat._validation import OneOf, warn_deprecated
from labcoat.errors import InputError
from labcoat.findings import Finding
from labcoat.ledger.records import entries as _entries
from labcoat.ledger.records import events as _events
from labcoat.ledger.records import findings as _findings
from labcoat.ledger.records import plans as _plans
from labcoat.ledger.records import runs as _runs
from labcoat.ledger.records.entries import Entry
from labcoat.ledger.records.events import Event
from labcoat.ledger.records.plans import StoredPlan, StoredVerdict
from labcoat.ledger.records.runs import RUN_STATUSES, Run
from labcoat.ledger.store.connection import (
    APPLICATION_ID,
    DEFAULT_BUSY_TIMEOUT_S,
    LedgerError,
    SQLiteStore,
    Store,
    is_postgres_url,
    open_store,
)
from labcoat.ledger.store.location import ENV_LEDGER, ENV_RUN_ID, resolve_location
from labcoat.ledger.store.migrations import TABLE as MIGRATIONS_TABLE
from labcoat.ledger.store.schema import LEDGER_MIGRATIONS
from labcoat.ledger.store.sql import SqlResult, run_sql
from labcoat.ledger.store.verify import VerifyResult, verify
from labcoat.provenance import Provenance, capture_provenance
from labcoat.provenance.environment import automatic_seeds


@dataclass
class ActiveRun:
    """The run a ``with ledger.run(...) as run:`` block records: its id and provenance, and
    shortcuts that record into it through the ledger's public calls."""

    id: int
    provenance: Provenance
    ledger: "Ledger" = field(repr=False)
    started: float = field(default_factory=time.monotonic, repr=False)

    def hypothesis(self, title: str, *, predict: str | None, **kwargs: Any) -> Entry:
        """An entry linked to this run."""
        return self.ledger.hypothesis(
            title, predict=predict, runs=(*kwargs.pop("runs", ()), self.id), **kwargs
        )

    def record_findings(self, findings: Iterable[Finding], **kwargs: Any) -> list[int]:
        return self.ledger.record_findings(findings, run=self.id, **kwargs)

    def record_events(self, events: Iterable[Any], **kwargs: Any) -> int:
        return self.ledger.record_events(events, run=self.id, **kwargs)

    def record_event(self, kind: str, **kwargs: Any) -> int:
        return self.ledger.record_event(kind, run=self.id, **kwargs)

    def events(self, **kwargs: Any) -> list[Event]:
        return self.ledger.events(run=self.id, **kwargs)

    def stored(self) -> Run:
        """The run as stored now."""
        return self.ledger.get_run(self.id)

    def record(self) -> Run:
        """Deprecated: :meth:`stored` (``record`` is how a result is saved)."""
        warn_deprecated("ActiveRun.record()", "ActiveRun.stored()")
        return self.stored()


def _run_id(run: Any) -> int | None:
    if run is None:
        return None
    run_id = getattr(run, "id", run)
    if isinstance(run_id, bool) or not isinstance(run_id, int):
        raise InputError(f"run: expected a run id or a run; got {run!r}")
    return run_id


class Ledger:
    """A ledger of hypotheses, runs, provenance, findings and events.

    ``path_or_url`` is a file path, ``sqlite:///PATH`` or ``postgresql://…``; None means
    ``$LABCOAT_LEDGER`` or ``.labcoat/ledger.db`` at the project root. A missing SQLite file is
    created unless ``create=False``. A file on read-only media opens read-only.
    """

    def __init__(
        self,
        path_or_url: str | os.PathLike[str] | None = None,
        *,
        create: bool = True,
        busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
    ):
        self._active_runs: list[int] = []  # `with ledger.run()` blocks open in this process
        self._store: Store = open_store(
            resolve_location(path_or_url), busy_timeout_s=busy_timeout_s
        )
        self._closer = weakref.finalize(self, self._store.close)  # at exit, if not before
        try:
            self._open(create)
        except BaseException:
            self.close()
            raise

    @classmethod
    def existing(cls, path_or_url: str | os.PathLike[str] | None = None) -> "Ledger | None":
        """The ledger at ``path_or_url`` (default location if None), or None if no SQLite ledger
        file exists there yet. Never creates anything: for code that records only when the user
        already keeps a ledger (``diagnose(ledger=None)``). A ``postgresql://`` ledger is assumed
        to exist once it is configured."""
        target = resolve_location(path_or_url)
        path = target.removeprefix("sqlite:///")
        if not is_postgres_url(target) and not (os.path.isfile(path) and os.path.getsize(path) > 0):
            return None
        return cls(target, create=False)

    @classmethod
    def for_recording(
        cls, ledger: "Ledger | str | os.PathLike[str] | bool | None"
    ) -> "Ledger | None":
        """Resolve the ``ledger=`` argument the doctor and the watch take.

        ``False``: record nowhere. ``None``: the default ledger only if it already exists (never
        create files the user did not ask for). A :class:`Ledger`: itself. A path or URL: that
        ledger, created if needed. Any other object with a ``record_findings`` method is used as
        it is (a team's own sink, or a test double).
        """
        if ledger is False:
            return None
        if ledger is None:
            return cls.existing()
        if isinstance(ledger, cls) or callable(getattr(ledger, "record_findings", None)):
            return ledger
        if isinstance(ledger, (str, os.PathLike)):
            return cls(ledger)
        raise InputError(
            "ledger: expected a labcoat.Ledger (or an object with record_findings), a path or "
            "URL, None (the default ledger if it exists) or False (nowhere); got "
            f"{type(ledger).__name__}"
        )

    def _open(self, create: bool) -> None:
        store = self._store
        # an empty file is no ledger either: a reading command must not turn it into one
        missing = isinstance(store, SQLiteStore) and (
            not store.exists() or store.path.stat().st_size == 0
        )
        if missing and not create:
            empty = " (the file is empty)" if store.exists() else ""
            raise LedgerError(
                f"ledger {store.location}: there is no ledger here yet{empty}; create one by "
                "recording an entry (`labcoat ledger add ...`) or a run (`labcoat run -- ...`), "
                "or pass another --ledger"
            )
        if missing:
            with store.write():
                pass  # creates the file in WAL mode with labcoat's application id
        tables = store.table_names()
        foreign = bool(tables) and MIGRATIONS_TABLE not in tables
        if isinstance(store, SQLiteStore):
            foreign = foreign or store.application_id() not in (0, APPLICATION_ID)
        if foreign:
            shown = ", ".join(sorted(tables)[:6]) + (", …" if len(tables) > 6 else "")
            raise LedgerError(
                f"ledger {store.location}: this database is not a labcoat ledger (it holds: {shown}"
                "); point --ledger or LABCOAT_LEDGER at a ledger file, or at a path that does not "
                "exist yet"
            )
        if LEDGER_MIGRATIONS.pending(store) and not store.read_only:  # read-only media: read as is
            LEDGER_MIGRATIONS.apply(store)

    @property
    def location(self) -> str:
        """Where the ledger lives (a PostgreSQL password is masked)."""
        return self._store.location

    @property
    def storage(self) -> Store:
        """The store under this ledger (its read and write transactions)."""
        return self._store

    @property
    def dialect(self) -> str:
        return self._store.dialect.name

    def close(self) -> None:
        """Close every connection; on SQLite, write the WAL into the file first."""
        self._closer()

    def __enter__(self) -> "Ledger":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Ledger({self.location!r})"

    # ---- entries ----------------------------------------------------------------------

    def hypothesis(
        self,
        title: str,
        *,
        predict: str | None,
        tags: Iterable[str] | str = (),
        experiment: str | None = None,
        parents: Iterable[int | Entry] = (),
        runs: Iterable[int | Run | ActiveRun] = (),
        sealed_plan: Mapping[str, Any] | None = None,
        review: Sequence[Mapping[str, Any]] = (),
        plan: Any = None,
        pilot_a: Any = None,
        pilot_b: Any = None,
    ) -> Entry:
        """Record a suspected cause and its prediction now, before the experiment.

        ``sealed_plan`` (plain JSON the ledger stores as it is, with ``review``: the design
        review's findings as dicts) is sealed into the hash chain in the same transaction as
        the entry; :func:`labcoat.verdicts.register` reviews a :class:`labcoat.Plan` and passes
        it here. ``plan=`` (with ``pilot_a``/``pilot_b``) is the deprecated way to do that.
        """
        if plan is None and (pilot_a is not None or pilot_b is not None):
            raise InputError("pilot_a/pilot_b: a pilot is reviewed with a plan; give plan= too")
        if plan is not None:
            warn_deprecated(
                "Ledger.hypothesis(plan=)",
                "labcoat.verdicts.register(ledger, title, predict=..., plan=...)",
            )
            if sealed_plan is not None:
                raise InputError("hypothesis: give plan= or sealed_plan=, not both")
            from labcoat.verdicts.judge import register

            return register(
                self,
                title,
                predict=predict,
                plan=plan,
                pilot_a=pilot_a,
                pilot_b=pilot_b,
                tags=tags,
                experiment=experiment,
                parents=parents,
                runs=runs,
            )
        with self._store.write() as tx:
            entry = _entries.create(
                tx,
                title=title,
                prediction=predict,
                experiment=experiment,
                tags=tags,
                parents=parents,
                runs=runs,
            )
            if sealed_plan is not None:
                _plans.seal_plan(
                    tx,
                    entry.id,
                    dict(sealed_plan),
                    [dict(f) for f in review],
                    entry.hash,
                    entry.author,
                )
            return entry

    # ---- plans and verdicts, stored as they are (labcoat.verdicts reads and judges them) ----

    def seal_plan(
        self,
        entry_id: int | Entry,
        plan: Mapping[str, Any],
        review: Sequence[Mapping[str, Any]] = (),
    ) -> StoredPlan:
        """Seal the next revision of an entry's plan (plain JSON, stored as it is) with a
        matching entry revision, in one transaction; the earlier revisions are kept."""
        entry_id = int(getattr(entry_id, "id", entry_id))
        with self._store.write() as tx:
            entry = _entries.revise(tx, entry_id, "plan revised")
            return _plans.seal_plan(
                tx, entry_id, dict(plan), [dict(f) for f in review], entry.hash, entry.author
            )

    def plans(self, entry_id: int | Entry | None = None) -> list[StoredPlan]:
        """The sealed plan revisions (of one entry, or of all), oldest first, as stored."""
        with self._store.read() as tx:
            if entry_id is None:
                return _plans.plans(tx)
            entry_id = int(getattr(entry_id, "id", entry_id))
            _entries.current(tx, entry_id)  # an unknown entry is an error, not "no plan"
            return _plans.plans(tx, entry_id)

    def record_verdict(
        self,
        entry_id: int | Entry,
        record: Mapping[str, Any],
        *,
        summary: str,
        plan_revision: int,
        family: str | None = None,
    ) -> StoredVerdict:
        """Resolve the entry with ``record["verdict"]`` (its result: ``summary``) and seal the
        verdict ``record`` (plain JSON, as :mod:`labcoat.verdicts` computed it) beside that
        revision, in one transaction."""
        entry_id = int(getattr(entry_id, "id", entry_id))
        with self._store.write() as tx:
            resolved = _entries.resolve(tx, entry_id, result=summary, verdict=record["verdict"])
            return _plans.record_verdict(
                tx,
                entry_id=entry_id,
                plan_revision=plan_revision,
                result=dict(record),
                family=family,
                entry_hash=resolved.hash,
            )

    def verdicts(self, entry_id: int | Entry | None = None) -> list[StoredVerdict]:
        """The verdicts recorded (of one entry, or all), oldest first, as stored."""
        with self._store.read() as tx:
            return _plans.verdicts(
                tx, None if entry_id is None else int(getattr(entry_id, "id", entry_id))
            )

    # deprecated delegates (one release): judging lives in labcoat.verdicts

    def plan_history(self, entry_id: int | Entry) -> list[Any]:
        """Deprecated: :func:`labcoat.verdicts.plan_history`."""
        warn_deprecated("Ledger.plan_history", "labcoat.verdicts.plan_history(ledger, entry)")
        from labcoat.verdicts.judge import plan_history

        return plan_history(self, entry_id)

    def plan(self, entry_id: int | Entry) -> Any:
        """Deprecated: :func:`labcoat.verdicts.current_plan`."""
        warn_deprecated("Ledger.plan", "labcoat.verdicts.current_plan(ledger, entry)")
        from labcoat.verdicts.judge import current_plan

        return current_plan(self, entry_id)

    def plan_review(self, entry_id: int | Entry) -> Any:
        """Deprecated: :func:`labcoat.verdicts.plan_review`."""
        warn_deprecated("Ledger.plan_review", "labcoat.verdicts.plan_review(ledger, entry)")
        from labcoat.verdicts.judge import plan_review

        return plan_review(self, entry_id)

    def revise_plan(self, entry_id: int | Entry, plan: Any = None, **kwargs: Any) -> Any:
        """Deprecated: :func:`labcoat.verdicts.revise_plan`."""
        warn_deprecated("Ledger.revise_plan", "labcoat.verdicts.revise_plan(ledger, entry, ...)")
        from labcoat.verdicts.judge import revise_plan

        return revise_plan(self, entry_id, plan, **kwargs)

    def verdict(self, entry_id: int | Entry, **kwargs: Any) -> Any:
        """Deprecated: :func:`labcoat.verdicts.verdict` (the ledger stores verdicts; it does not
        judge)."""
        warn_deprecated("Ledger.verdict", "labcoat.verdicts.verdict(ledger, entry, a=..., b=...)")
        from labcoat.verdicts.judge import verdict

        return verdict(self, entry_id, **kwargs)

    def plan_status(self, entries: Iterable[Entry]) -> dict[int, str]:
        """Per entry: ``planned``, ``deviating``, ``unplanned``, ``registered`` or ``""`` (see
        :func:`labcoat.ledger.records.plans.plan_status`)."""
        with self._store.read() as tx:
            return _plans.plan_status(tx, entries)

    def entry(self, entry_id: int | Entry) -> Entry:
        with self._store.read() as tx:
            return _entries.current(tx, int(getattr(entry_id, "id", entry_id)))

    def history(self, entry_id: int | Entry) -> list[Entry]:
        """Every revision of an entry, oldest first."""
        with self._store.read() as tx:
            return _entries.history(tx, int(getattr(entry_id, "id", entry_id)))

    def resolve(
        self,
        entry_id: int | Entry,
        *,
        result: str,
        verdict: str,
        conclusion: str | None = None,
        experiment: str | None = None,
    ) -> Entry:
        """Record the result and verdict of an entry as its next revision; returns it."""
        with self._store.write() as tx:
            return _entries.resolve(
                tx,
                int(getattr(entry_id, "id", entry_id)),
                result=result,
                verdict=verdict,
                conclusion=conclusion,
                experiment=experiment,
            )

    def revise(self, entry_id: int | Entry, **changes: Any) -> Entry:
        """Change fields of an entry in a new revision (the earlier ones are kept)."""
        with self._store.write() as tx:
            return _entries.revise(tx, int(getattr(entry_id, "id", entry_id)), **changes)

    def entries(
        self,
        verdict: str | Sequence[str] | None = None,
        tag: str | Sequence[str] | None = None,
        text: str | Sequence[str] | None = None,
        *,
        since: Any = None,
        until: Any = None,
        run: int | Sequence[int] | None = None,
        parent: int | Sequence[int] | None = None,
        match: str = "all",
        checks: bool = False,
        limit: int | None = None,
    ) -> list[Entry]:
        """The user's entries as of their latest revision. A list for one filter means any of
        them; filters combine with AND (``match="all"``) or OR (``match="any"``). ``since`` and
        ``until`` are dates or times the entry was created (a bare ``until`` date is inclusive).
        ``checks=True`` also returns the entries labcoat 0.1 made for each doctor check."""
        with self._store.read() as tx:
            return _entries.query(
                tx,
                verdict=verdict,
                tag=tag,
                text=text,
                since=since,
                until=until,
                run=run,
                parent=parent,
                match=match,
                checks=checks,
                limit=limit,
            )

    # ---- runs -------------------------------------------------------------------------

    def start_run(
        self,
        *,
        name: str | None = None,
        factors: Mapping[str, Any] | None = None,
        **capture: Any,
    ) -> ActiveRun:
        """Capture provenance (``capture``: config, data, seeds, command, full_hash, git) and
        write the run's start now, with its ``factors`` (a designed experiment's levels) when
        given; end it with :meth:`finish_run` (``with ledger.run()`` does both)."""
        if factors:
            _runs.check_factors(factors)  # before anything is captured or written
        provenance = capture_provenance(**capture, exclude=self._store.own_files())
        with self._store.write() as tx:
            run_id = _runs.start(tx, provenance, name=name, factors=factors)
            return ActiveRun(run_id, provenance, self)

    def finish_run(
        self, run: int | Run | ActiveRun, *, status: str, exit_status: int | None, **end: Any
    ) -> None:
        """Write a run's end (``end``: error, output bytes, duration_s, seeds); a run ends once."""
        with self._store.write() as tx:
            _runs.finish(tx, _run_id(run), status=status, exit_status=exit_status, **end)

    @contextmanager
    def run(
        self,
        config: Any = None,
        data: Any = None,
        *,
        seeds: Any = None,
        name: str | None = None,
        command: Sequence[str] | None = None,
        full_hash: bool = False,
        git: bool = True,
        factors: Mapping[str, Any] | None = None,
    ) -> Iterator[ActiveRun]:
        """``with ledger.run(config=cfg, data=[path]) as run:`` records a run with its provenance
        on entry and its end (status, duration, an exception's type and message) on exit.

        ``data`` is a path, array or tensor, a list of them, or a dict name -> one of them;
        large files are fingerprinted by sampling unless ``full_hash=True``. ``factors`` are
        the run's levels in a designed experiment (``{"lr": "high", "seed": 0}``, or a run of
        :attr:`labcoat.design.Design.runs` as it is). Findings, events and entries recorded
        inside the block join the run.
        """
        active = self.start_run(
            name=name,
            factors=factors,
            config=config,
            data=data,
            seeds=seeds,
            command=command,
            full_hash=full_hash,
            git=git,
        )
        self._active_runs.append(active.id)
        error: BaseException | None = None
        try:
            yield active
        except BaseException as exc:
            error = exc
            raise
        finally:
            self._active_runs.remove(active.id)
            status, code = _runs.status_of(None if error is None else type(error))
            self.finish_run(
                active,
                status=status,
                exit_status=code,
                error=None if error is None else f"{type(error).__name__}: {error}",
                duration_s=time.monotonic() - active.started,
                seeds=automatic_seeds(),  # a seed set inside the block shows up here
            )

    def get_run(self, run: int | Run | ActiveRun) -> Run:
        with self._store.read() as tx:
            return _runs.get(tx, _run_id(run))

    def runs(self, *, limit: int | None = None, status: str | None = None) -> list[Run]:
        """Runs, oldest first (the latest ``limit`` when given)."""
        OneOf(RUN_STATUSES, none=True).check(status, "status")
        with self._store.read() as tx:
            return _runs.listing(tx, limit=limit, status=status)

    def run_diff_text(self, run: int | Run | ActiveRun) -> str:
        """The uncommitted diff recorded for a run ('' when the tree was clean)."""
        found = self.get_run(run)
        with self._store.read() as tx:
            return _runs.blob_text(tx, found.diff_hash)

    def run_output(self, run: int | Run | ActiveRun) -> str:
        """The output ``labcoat run`` captured for a run."""
        found = self.get_run(run)
        with self._store.read() as tx:
            return _runs.blob_text(tx, found.output_hash)

    def diff(self, run_a: int | Run | ActiveRun, run_b: int | Run | ActiveRun):
        """Deprecated: :meth:`provenance_diff`, the name that says what it compares."""
        warn_deprecated("Ledger.diff(run_a, run_b)", "Ledger.provenance_diff(run_a, run_b)")
        return self.provenance_diff(run_a, run_b)

    def provenance_diff(self, run_a: int | Run | ActiveRun, run_b: int | Run | ActiveRun):
        """What changed in code, config, data, environment and seeds from ``run_a`` to ``run_b``."""
        from labcoat.provenance import commit_stat
        from labcoat.provenance.diff import diff_runs

        a, b = self.get_run(run_a), self.get_run(run_b)
        stat = commit_stat(b.git_root or a.git_root, a.git_commit, b.git_commit)
        return diff_runs(
            a, b, diff_a=self.run_diff_text(a), diff_b=self.run_diff_text(b), commit_stat=stat
        )

    def current_run_id(self) -> int | None:
        """The innermost ``with ledger.run()`` block open on this ledger, else the run
        ``labcoat run`` is recording around this process when it records into this ledger."""
        if self._active_runs:
            return self._active_runs[-1]
        run_id, target = os.environ.get(ENV_RUN_ID, ""), os.environ.get(ENV_LEDGER, "")
        if not run_id.isdigit() or not target or open_store(target).location != self.location:
            return None
        return int(run_id)

    # ---- findings and events ----------------------------------------------------------

    def record_findings(
        self,
        findings: Iterable[Finding],
        *,
        run: int | Run | ActiveRun | None = None,
        source: str,
    ) -> list[int]:
        """Store findings as rows of one run, under ``source`` (the engine that made them);
        returns their ids. A result is saved with :func:`labcoat.ledger.record`, which calls this.

        They join ``run``, else the innermost open ``with ledger.run()`` block, else the run
        ``labcoat run`` is recording around this process; with none of those, a run named
        ``source`` is recorded for them, with this process's provenance. All in one transaction.
        """
        items = [_findings.as_finding(f) for f in findings]
        run_id = _run_id(run) if run is not None else self.current_run_id()
        provenance = (
            None if run_id is not None else capture_provenance(exclude=self._store.own_files())
        )
        with self._store.write() as tx:
            if provenance is not None:
                run_id = _runs.start(tx, provenance, name=source)
            ids = _findings.record_all(tx, items, run_id=_runs.exists(tx, run_id), source=source)
            if provenance is not None:
                _runs.finish(tx, run_id, status="ok", exit_status=None)
        return ids

    def findings(
        self,
        run: int | Run | ActiveRun | None = None,
        source: str | None = None,
        status: str | Sequence[str] | None = None,
        *,
        check: str | Sequence[str] | None = None,
        entry: int | None = None,
    ) -> list[Finding]:
        """Stored findings as :class:`labcoat.Finding` objects, in the order they were recorded."""
        with self._store.read() as tx:
            return _findings.query(
                tx, run_id=_run_id(run), source=source, status=status, check=check, entry_id=entry
            )

    def record_events(
        self,
        events: Iterable[Any],
        *,
        run: int | Run | ActiveRun | None = None,
        source: str = "watch",
    ) -> int:
        """Append many events in one transaction (the watch's path); returns the count.

        Each event is a mapping, a dataclass or an object with ``to_dict()`` holding ``kind``
        and any of step, rank, time, value, severity, message, data; other keys go into
        ``data``. ``run=None`` means the current run (see :meth:`record_findings`), if any.
        """
        run_id = _run_id(run) if run is not None else self.current_run_id()
        with self._store.write() as tx:
            if run_id is not None:
                _runs.exists(tx, run_id)
            return _events.record_all(tx, events, run_id=run_id, source=source)

    def record_event(
        self,
        kind: str,
        *,
        run: int | Run | ActiveRun | None = None,
        source: str = "watch",
        **fields: Any,
    ) -> int:
        """Append one event; prefer :meth:`record_events` for many."""
        return self.record_events([{"kind": kind, **fields}], run=run, source=source)

    def events(
        self,
        run: int | Run | ActiveRun | None = None,
        kind: str | Sequence[str] | None = None,
        *,
        source: str | None = None,
        rank: int | None = None,
        min_step: int | None = None,
        max_step: int | None = None,
        limit: int | None = None,
    ) -> list[Event]:
        with self._store.read() as tx:
            return _events.query(
                tx,
                run_id=_run_id(run),
                kind=kind,
                source=source,
                rank=rank,
                min_step=min_step,
                max_step=max_step,
                limit=limit,
            )

    # ---- trust, queries, export -------------------------------------------------------

    def verify(self) -> VerifyResult:
        """Check every hash chain, blob and index, and that the file holds every commit; truthy
        when nothing was changed or lost behind labcoat's back."""
        return verify(self._store)

    def sql(self, query: str, params: Sequence[Any] = (), *, timeout_s: float = 30.0) -> SqlResult:
        """Run one read-only SQL statement; writes are refused."""
        return run_sql(self._store, query, params, timeout_s=timeout_s)

    def export(self, format: str = "md", **options: Any) -> str:
        """The ledger as a dated Markdown chronicle (``"md"``) or as JSON with everything."""
        from labcoat.ledger.export import export

        return export(self, format, **options)
