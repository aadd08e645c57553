"""``labcoat.Ledger``: the lab notebook's one entry point.

It opens (and, when asked, creates and migrates) the store, refuses files that are not
ledgers, and routes every write through the store's single write path. Reads use the
read-only connections, so reading never waits for a writer.
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Sequence

from labcoat.errors import InputError
from labcoat.findings import Finding
from labcoat.ledger import entries as _entries
from labcoat.ledger import events as _events
from labcoat.ledger import findings as _findings
from labcoat.ledger import runs as _runs
from labcoat.ledger.diff import RunDiff, diff_runs
from labcoat.ledger.entries import Entry, EntryFilter
from labcoat.ledger.events import Event
from labcoat.ledger.gitinfo import commit_stat
from labcoat.ledger.location import ENV_LEDGER, ENV_RUN_ID, resolve_location
from labcoat.ledger.migrations import TABLE as MIGRATIONS_TABLE
from labcoat.ledger.provenance import Provenance
from labcoat.ledger.runs import ActiveRun, Run
from labcoat.ledger.schema import LEDGER_MIGRATIONS
from labcoat.ledger.sql import SqlResult, run_sql
from labcoat.ledger.storage import (
    APPLICATION_ID,
    DEFAULT_BUSY_TIMEOUT_S,
    LedgerError,
    SQLiteStore,
    Store,
    is_postgres_url,
    open_store,
)
from labcoat.ledger.verify import VerifyResult, verify


class Ledger:
    """A ledger of hypotheses, runs, provenance, findings and events.

    ``path_or_url`` is a file path, ``sqlite:///PATH`` or ``postgresql://…``; None means
    ``$LABCOAT_LEDGER`` or ``.labcoat/ledger.db`` at the project root. A missing SQLite file is
    created unless ``create=False``.
    """

    def __init__(
        self,
        path_or_url: str | os.PathLike[str] | None = None,
        *,
        create: bool = True,
        busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
    ):
        self._target = resolve_location(path_or_url)
        self._active_runs: list[int] = []  # `with ledger.run()` blocks open in this process
        self._store: Store = open_store(self._target, busy_timeout_s=busy_timeout_s)
        try:
            self._open(create)
        except BaseException:
            self._store.close()
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
    def for_recording(cls, ledger: "Ledger | str | os.PathLike[str] | bool | None") -> "Ledger | None":
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
            f"ledger: expected a labcoat.Ledger (or an object with record_findings), a path or URL, "
            f"None (the default ledger if it exists) or False (nowhere); got {type(ledger).__name__}"
        )

    # ---- opening ----------------------------------------------------------------------

    def _open(self, create: bool) -> None:
        store = self._store
        # an empty file is no ledger either: a reading command must not turn it into one
        missing = isinstance(store, SQLiteStore) and (not store.exists() or store.path.stat().st_size == 0)
        if missing and not create:
            empty = " (the file is empty)" if store.exists() else ""
            raise LedgerError(
                f"ledger {store.location}: there is no ledger here yet{empty}; create one by recording "
                "an entry (`labcoat ledger add ...`) or pass another --ledger"
            )
        if missing:
            with store.write():
                pass  # creates the file in WAL mode with labcoat's application id
        self._refuse_foreign()
        if LEDGER_MIGRATIONS.pending(store):
            LEDGER_MIGRATIONS.apply(store)

    def _refuse_foreign(self) -> None:
        store = self._store
        tables = store.table_names()
        foreign = bool(tables) and MIGRATIONS_TABLE not in tables
        if isinstance(store, SQLiteStore):
            app_id = store.application_id()
            foreign = foreign or app_id not in (0, APPLICATION_ID)
        if foreign:
            shown = ", ".join(sorted(tables)[:6]) + (", …" if len(tables) > 6 else "")
            raise LedgerError(
                f"ledger {store.location}: this database is not a labcoat ledger (it holds: {shown or 'no tables'}); "
                "point --ledger or LABCOAT_LEDGER at a ledger file, or at a path that does not exist yet"
            )

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
        self._store.close()

    def __enter__(self) -> "Ledger":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Ledger({self.location!r})"

    # ---- entries ----------------------------------------------------------------------

    def _own(self, entry: Entry) -> Entry:
        entry._ledger = self
        return entry

    def hypothesis(
        self,
        title: str,
        *,
        predict: str | None,
        tags: Iterable[str] | str = (),
        experiment: str | None = None,
        parents: Iterable[int | Entry] = (),
        runs: Iterable[int | Run | ActiveRun] = (),
    ) -> Entry:
        """Record a suspected cause and its prediction now, before the experiment; returns the entry."""
        with self._store.write() as tx:
            entry = _entries.create(
                tx, title=title, prediction=predict, experiment=experiment, tags=tags, parents=parents, runs=runs
            )
        return self._own(entry)

    def entry(self, entry_id: int) -> Entry:
        with self._store.read() as tx:
            entry = _entries.current(tx, int(entry_id))
        if entry is None:
            raise InputError(f"entry {entry_id}: there is no such entry; `labcoat ledger list` shows the ids")
        return self._own(entry)

    def history(self, entry_id: int) -> list[Entry]:
        """Every revision of an entry, oldest first."""
        with self._store.read() as tx:
            revisions = _entries.history(tx, int(entry_id))
        if not revisions:
            raise InputError(f"entry {entry_id}: there is no such entry; `labcoat ledger list` shows the ids")
        return [self._own(e) for e in revisions]

    def resolve(
        self,
        entry_id: int | Entry,
        *,
        result: str,
        verdict: str,
        conclusion: str | None = None,
        experiment: str | None = None,
    ) -> Entry:
        """Record the result and verdict of an entry as its next revision."""
        with self._store.write() as tx:
            entry = _entries.resolve(
                tx, int(getattr(entry_id, "id", entry_id)), result=result, verdict=verdict,
                conclusion=conclusion, experiment=experiment,
            )
        return self._own(entry)

    def revise(self, entry_id: int | Entry, **changes: Any) -> Entry:
        """Change fields of an entry in a new revision (the earlier ones are kept)."""
        with self._store.write() as tx:
            entry = _entries.revise(tx, int(getattr(entry_id, "id", entry_id)), "revised", **changes)
        return self._own(entry)

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
        limit: int | None = None,
    ) -> list[Entry]:
        """Entries as of their latest revision. A list for one filter means any of them; the
        filters are combined with AND (``match="all"``) or OR (``match="any"``). ``since`` and
        ``until`` are dates or times the entry was created (a bare ``until`` date is inclusive)."""
        flt = EntryFilter.build(
            verdict=verdict, tag=tag, text=text, since=since, until=until,
            run=run, parent=parent, match=match, limit=limit,
        )
        with self._store.read() as tx:
            found = _entries.query(tx, flt)
        return [self._own(e) for e in found]

    # ---- runs -------------------------------------------------------------------------

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
    ) -> ActiveRun:
        """``with ledger.run(config=cfg, data=[path]) as run:`` records a run with its provenance.

        ``data`` is a path, array or tensor, a list of them, or a dict name -> one of them;
        large files are fingerprinted by sampling unless ``full_hash=True``.
        """
        return ActiveRun(
            self, name=name, config=config, data=data, seeds=seeds, command=command, full_hash=full_hash, git=git
        )

    def _start_run(self, provenance: Provenance, *, name: str | None = None) -> int:
        with self._store.write() as tx:
            return _runs.start(tx, provenance, name=name)

    def _finish_run(self, run_id: int, **end: Any) -> None:
        with self._store.write() as tx:
            _runs.finish(tx, run_id, **end)

    def get_run(self, run: int | Run | ActiveRun) -> Run:
        run_id = self._run_id(run)
        with self._store.read() as tx:
            found = _runs.get(tx, run_id)
        if found is None:
            raise InputError(f"run {run_id}: there is no such run; `labcoat ledger runs` shows the ids")
        return found

    def runs(self, *, limit: int | None = None, status: str | None = None) -> list[Run]:
        """Runs, oldest first (the latest ``limit`` when given)."""
        if status is not None and status not in _runs.RUN_STATUSES:
            raise InputError(f"status: must be one of {', '.join(_runs.RUN_STATUSES)}; got {status!r}")
        with self._store.read() as tx:
            return _runs.listing(tx, limit=limit, status=status)

    def run_diff_text(self, run: int | Run | ActiveRun) -> str:
        """The uncommitted diff recorded for a run ('' when the tree was clean)."""
        found = self.get_run(run)
        with self._store.read() as tx:
            return _runs.diff_text(tx, found)

    def run_output(self, run: int | Run | ActiveRun) -> str:
        """The output ``labcoat run`` captured for a run."""
        found = self.get_run(run)
        with self._store.read() as tx:
            return _runs.output_text(tx, found)

    def diff(self, run_a: int | Run | ActiveRun, run_b: int | Run | ActiveRun) -> RunDiff:
        """What changed in code, config, data, environment and seeds from ``run_a`` to ``run_b``."""
        a, b = self.get_run(run_a), self.get_run(run_b)
        with self._store.read() as tx:
            diff_a, diff_b = _runs.diff_text(tx, a), _runs.diff_text(tx, b)
        stat = commit_stat(b.git_root or a.git_root, a.git_commit, b.git_commit)
        return diff_runs(a, b, diff_a=diff_a, diff_b=diff_b, commit_stat=stat)

    def _run_id(self, run: int | Run | ActiveRun | None) -> int | None:
        if run is None:
            return None
        run_id = getattr(run, "id", run)
        if isinstance(run_id, bool) or not isinstance(run_id, int):
            raise InputError(f"run: expected a run id or a run; got {run!r}")
        return run_id

    def current_run_id(self) -> int | None:
        """The innermost ``with ledger.run()`` block open on this ledger, else the run
        ``labcoat run`` is recording around this process when it records into this ledger."""
        if self._active_runs:
            return self._active_runs[-1]
        run_id, target = os.environ.get(ENV_RUN_ID, ""), os.environ.get(ENV_LEDGER, "")
        if not run_id.isdigit() or not target:
            return None
        if open_store(target).location != self.location:
            return None
        return int(run_id)

    def _checked_run(self, tx: Any, run: Any) -> int | None:
        run_id = self._run_id(run) if run is not None else self.current_run_id()
        if run_id is not None and tx.value("SELECT 1 FROM runs WHERE id = ?", (run_id,)) is None:
            raise InputError(f"run {run_id}: there is no such run; `labcoat ledger runs` shows the ids")
        return run_id

    # ---- findings and events ----------------------------------------------------------

    def record_findings(
        self,
        findings: Iterable[Finding],
        *,
        run: int | Run | ActiveRun | None = None,
        source: str = "doctor",
        as_hypotheses: bool | None = None,
    ) -> list[int]:
        """Store findings against ``run``, all in one transaction; returns their row ids.

        Doctor findings (``as_hypotheses`` defaults to ``source == "doctor"``) also become
        resolved entries: the failure mode a check falsifies is the hypothesis, its healthy
        prediction the prediction, and pass/fail/warn/skip map to refuted/confirmed/
        inconclusive/inconclusive (see :mod:`labcoat.ledger.findings`). ``run=None`` means the
        innermost open ``with ledger.run()`` block, else the run ``labcoat run`` is recording
        around this process, if any.
        """
        if as_hypotheses is None:
            as_hypotheses = source == "doctor"
        with self._store.write() as tx:
            run_id = self._checked_run(tx, run)
            return _findings.record(tx, findings, run_id=run_id, source=source, as_hypotheses=as_hypotheses)

    def findings(
        self,
        run: int | Run | ActiveRun | None = None,
        source: str | None = None,
        status: str | Sequence[str] | None = None,
        *,
        entry: int | None = None,
    ) -> list[Finding]:
        """Stored findings as :class:`labcoat.Finding` objects, in the order they were recorded."""
        with self._store.read() as tx:
            return _findings.query(tx, run_id=self._run_id(run), source=source, status=status, entry_id=entry)

    def record_events(
        self, events: Iterable[Any], *, run: int | Run | ActiveRun | None = None, source: str = "watch"
    ) -> int:
        """Append many events in one transaction (the fast path for the watch); returns the count.

        Each event is a mapping or an object with ``to_dict()`` holding ``kind`` and any of
        step, rank, time, value, severity, message, data; other keys go into ``data``.
        """
        with self._store.write() as tx:
            run_id = self._checked_run(tx, run)
            return _events.record(tx, events, run_id=run_id, source=source)

    def record_event(
        self, kind: str, *, run: int | Run | ActiveRun | None = None, source: str = "watch", **fields: Any
    ) -> int:
        """Append one event; prefer :meth:`record_events` for many."""
        return self.record_events([{"kind": kind, **fields}], run=run, source=source)

    def events(
        self,
        run: int | Run | ActiveRun | None = None,
        kind: str | None = None,
        *,
        source: str | None = None,
        rank: int | None = None,
        min_step: int | None = None,
        max_step: int | None = None,
        limit: int | None = None,
    ) -> list[Event]:
        with self._store.read() as tx:
            return _events.query(
                tx, run_id=self._run_id(run), kind=kind, source=source, rank=rank,
                min_step=min_step, max_step=max_step, limit=limit,
            )

    # ---- trust, queries, export -------------------------------------------------------

    def verify(self) -> VerifyResult:
        """Check every hash chain, blob and index; truthy when nothing was changed behind labcoat's back."""
        return verify(self._store)

    def sql(self, query: str, params: Sequence[Any] = (), *, timeout_s: float = 30.0) -> SqlResult:
        """Run one read-only SQL statement; writes are refused."""
        return run_sql(self._store, query, params, timeout_s=timeout_s)

    def export(self, format: str = "md", **options: Any) -> str:
        """The ledger as a dated Markdown chronicle (``"md"``) or as JSON with everything (``"json"``)."""
        from labcoat.ledger.export import export

        return export(self, format, **options)
