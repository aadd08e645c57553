"""One storage layer for the ledger: a SQLite file or a PostgreSQL server behind the same calls.

Everything above this module writes SQL once, with ``?`` placeholders and portable types, and
goes through two doors:

- :meth:`Store.write` is the only write path. SQLite takes the write lock up front with
  ``BEGIN IMMEDIATE`` (WAL mode, a busy timeout), so concurrent writers queue instead of failing
  half-way; PostgreSQL takes a transaction-scoped advisory lock, so appends to the hash chains
  are serial there too. The transaction commits when the block ends and rolls back on any error.
- :meth:`Store.read` hands out a read-only connection per thread (SQLite ``mode=ro``, or
  ``immutable`` on read-only media; a read-only session on PostgreSQL). Readers never wait.

A SQLite ledger is in WAL mode only while a writer has it open. :meth:`Store.close` (called on
exit too) checkpoints the WAL into the file and, as the last connection, turns WAL mode off, so
the file alone is the whole ledger: it can be copied, and it can be read from read-only media.

While a writer has it open, the ledger's chain heads after each commit are also kept beside it,
in ``ledger.db-heads`` (removed when the file is sealed). A writer killed before it sealed
leaves the file in WAL mode with it; if the ``-wal`` file is then gone, the heads tell a WAL
that another SQLite client checkpointed into the file (every head is in it: nothing lost) from
one that was lost (rows the writer committed are missing). Readers never create files: a
WAL-mode file with no ``-wal`` beside it is read as ``immutable`` (no writer is in it then),
so reading, and ``verify``, leave the disk as they found it.
Storage failures become :class:`LedgerError`, which the CLI prints as one line.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import stat
import threading
import time
from abc import ABC, abstractmethod
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from labcoat.errors import InputError, LabcoatError

#: ``PRAGMA application_id`` of a labcoat ledger ("LBCT"), so a foreign SQLite file is recognised
APPLICATION_ID = 0x4C424354
#: the PostgreSQL schema that holds the ledger's tables, apart from anything else on the server
PG_SCHEMA = "labcoat"
#: key of the PostgreSQL advisory lock that serialises writers (any fixed 64-bit number)
PG_WRITE_LOCK = 0x4C424354_4C454447
DEFAULT_BUSY_TIMEOUT_S = 60.0
READ_ONLY_FIX = (
    "the ledger is on read-only media or its file is not writable; copy it somewhere writable"
)

# Connections inherited through fork() must never be used or closed by the child: SQLite's
# locks are per process. The child opens its own and parks the inherited ones here.
_INHERITED: list[Any] = []


class LedgerError(LabcoatError):
    """The ledger's storage cannot be used: corrupt or foreign file, unreachable server, lock
    timeout."""


class ReadOnlyError(LedgerError):
    """A statement tried to change the ledger through a read-only door (``labcoat ledger sql``)."""


@dataclass(frozen=True)
class Dialect:
    """What differs between the two databases: column types and placeholder syntax."""

    name: str
    int: str
    real: str
    blob: str
    placeholder: str

    def ddl(self, template: str) -> str:
        """Fill ``{int}``, ``{real}``, ``{blob}`` in a CREATE statement."""
        return template.format(int=self.int, real=self.real, blob=self.blob)


SQLITE = Dialect("sqlite", int="INTEGER", real="REAL", blob="BLOB", placeholder="?")
POSTGRES = Dialect(
    "postgresql", int="BIGINT", real="DOUBLE PRECISION", blob="BYTEA", placeholder="%s"
)


class Tx:
    """A cursor inside one transaction, with the same calls on both databases."""

    def __init__(self, cursor: Any, dialect: Dialect):
        self._cur = cursor
        self.dialect = dialect

    def execute(self, sql: str, params: Sequence[Any] = ()) -> "Tx":
        # our own SQL never holds a literal ? or %, so the placeholders translate plainly
        self._cur.execute(sql.replace("?", self.dialect.placeholder), tuple(params))
        return self

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            self._cur.executemany(
                sql.replace("?", self.dialect.placeholder), [tuple(r) for r in rows]
            )

    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple | None:
        return self.execute(sql, params)._cur.fetchone()

    def value(self, sql: str, params: Sequence[Any] = ()) -> Any:
        row = self.one(sql, params)
        return None if row is None else row[0]

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        return self.execute(sql, params)._cur.fetchall()

    def columns(self) -> list[str]:
        """Names of the columns of the last statement's result."""
        return [d[0] for d in self._cur.description or ()]

    def dicts(
        self, sql: str, params: Sequence[Any] = (), *, batch: int = 2000
    ) -> Iterator[dict[str, Any]]:
        """Rows as dicts, streamed without holding the whole result in memory."""
        self.execute(sql, params)
        names = self.columns()
        while rows := self._cur.fetchmany(batch):
            for row in rows:
                yield dict(zip(names, row))


class Store(ABC):
    """A ledger database: one write path, read-only readers, and a read-only SQL door."""

    dialect: Dialect
    #: where the ledger lives, safe to print (a PostgreSQL password is masked)
    location: str
    #: what opens this store again, e.g. from a child process (may hold a password: never print)
    target: str
    #: nothing may be written: the file or its folder is not writable
    read_only = False

    def __init__(self, *, busy_timeout_s: float) -> None:
        self.busy_timeout_s = float(busy_timeout_s)
        self._lock = threading.RLock()  # one writer per process at a time; guards the lists
        self._writer: Any = None
        self._writer_pid = -1
        self._depth = 0  # nesting of write() blocks in the writing thread
        self._local = threading.local()
        self._readers: list[Any] = []

    @abstractmethod
    def write(self) -> "contextmanager[Tx]":
        """A transaction holding the ledger's write lock; commits at the end, rolls back on
        error."""

    @abstractmethod
    def read(self) -> "contextmanager[Tx]":
        """A read-only transaction (one consistent snapshot) on this thread's reader."""

    @abstractmethod
    def readonly_sql(
        self, sql: str, params: Sequence[Any] = (), *, timeout_s: float = 30.0
    ) -> tuple[list[str], list[tuple]]:
        """Run one statement that must not change anything; returns (column names, rows)."""

    @abstractmethod
    def table_names(self) -> set[str]:
        """Tables in the ledger's namespace (the file, or the ``labcoat`` schema)."""

    def exists(self) -> bool:
        return True

    def own_files(self) -> tuple[Path, ...]:
        """Files on disk that belong to this store (none for a server)."""
        return ()

    def check_integrity(self) -> list[str]:
        """The database engine's own consistency check; an empty list means healthy."""
        return []

    def storage_problems(self, *, sealed_on_close: bool = True) -> tuple[list[str], list[str]]:
        """(problems, notes) about how the ledger sits on disk, beyond its rows;
        ``sealed_on_close``: the ledger's migrations include the one that seals it on close
        (the caller, which knows the schema, says so: this module does not import it)."""
        return [], []

    def _writer_conn(self) -> Any:
        """This process's write connection, opened on first use and again after fork()."""
        if self._writer is not None and self._writer_pid == os.getpid():
            return self._writer
        if self._writer is not None:
            _INHERITED.append(self._writer)
        self._writer, self._writer_pid = self._connect_writer(), os.getpid()
        return self._writer

    @abstractmethod
    def _connect_writer(self) -> Any:
        """A new connection of this store's kind."""

    def _reader(self) -> Any:
        """This thread's read-only connection, opened on first use and again after fork()."""
        conn = getattr(self._local, "conn", None)
        if (
            conn is not None
            and getattr(self._local, "pid", None) == os.getpid()
            and self._usable(conn)
        ):
            return conn
        if conn is not None:
            _INHERITED.append(conn)
        conn = self._connect_reader()
        self._local.conn, self._local.pid = conn, os.getpid()
        with self._lock:
            self._readers.append(conn)
        return conn

    @abstractmethod
    def _connect_reader(self) -> Any:
        """A new connection of this store's kind."""

    def _usable(self, conn: Any) -> bool:
        return True

    def close(self) -> None:
        """Close every connection this process opened (readers first: the writer seals)."""
        with self._lock:
            for conn in self._readers:
                try:
                    conn.close()
                except Exception:  # owned by a finished thread, or already gone
                    pass
            self._readers.clear()
            self._local = threading.local()
            if self._writer is not None and self._writer_pid == os.getpid():
                self._close_writer(self._writer)
            self._writer = None

    def _close_writer(self, conn: Any) -> None:
        conn.close()


# --------------------------------------------------------------------------------------------
# SQLite


def _sqlite_message(exc: sqlite3.Error, location: str, busy_timeout_s: float) -> str:
    text = str(exc)
    if "locked" in text or "busy" in text:
        return (
            f"ledger {location}: the write lock stayed busy for more than {busy_timeout_s:g} s "
            "(another process holds it); retry, or raise the busy timeout"
        )
    if "not a database" in text or "malformed" in text or "corrupt" in text:
        return (
            f"ledger {location}: the file is not a readable SQLite database ({text}); point "
            "--ledger or LABCOAT_LEDGER at a labcoat ledger, or move this file away"
        )
    if "unable to open" in text or "readonly" in text:
        return (
            f"ledger {location}: cannot open the file ({text}); check the path and its permissions"
        )
    return f"ledger {location}: {text}"


def _says_wal_mode(path: Path) -> bool:
    """The file header's read/write versions are 2 in WAL mode (1 in rollback mode)."""
    try:
        with open(path, "rb") as f:
            return f.read(20)[18:20] == b"\x02\x02"
    except OSError:
        return False


def _writable(path: Path) -> bool:
    """Writable, and meant to be: a file or folder with no write bit counts as read-only even
    for root, whom the permission check itself never stops."""
    try:
        return os.access(path, os.W_OK) and bool(stat.S_IMODE(path.stat().st_mode) & 0o222)
    except OSError:
        return False


class SQLiteStore(Store):
    """A ledger in one SQLite file, in WAL mode while written, safe for many writer processes."""

    dialect = SQLITE

    def __init__(
        self, path: str | os.PathLike[str], *, busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S
    ):
        super().__init__(busy_timeout_s=busy_timeout_s)
        self.path = Path(path).expanduser().resolve()
        self.location = self.target = str(self.path)
        if self.path.is_dir():
            raise InputError(
                f"ledger {self.location}: is a directory; give the path of a database file, e.g. "
                ".labcoat/ledger.db"
            )
        self.wal = self.path.with_name(self.path.name + "-wal")
        #: the chain heads after the last commit, kept while the file is in WAL mode
        self.heads = self.path.with_name(self.path.name + "-heads")
        self.read_only = self.path.exists() and not (
            _writable(self.path) and _writable(self.path.parent)
        )
        # seen before any writer of ours can make a new -wal file beside it; an empty -wal
        # (left by an older labcoat's reader) holds no commits either
        self._cut_from_wal = _says_wal_mode(self.path) and not self._wal_bytes()
        self._immutable: set[int] = set()  # ids of readers opened with immutable=1

    def _wal_bytes(self) -> int:
        try:
            return self.wal.stat().st_size
        except OSError:
            return 0

    def exists(self) -> bool:
        return self.path.exists()

    def own_files(self) -> tuple[Path, ...]:
        """The database file and the journal files SQLite keeps beside it."""
        return (
            self.path,
            *(
                self.path.with_name(self.path.name + end)
                for end in ("-wal", "-shm", "-journal", "-heads")
            ),
        )

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.IntegrityError:
            raise  # a constraint we declared: a labcoat bug or a race we must see
        except sqlite3.DatabaseError as exc:
            raise LedgerError(_sqlite_message(exc, self.location, self.busy_timeout_s)) from exc

    def _connect_writer(self) -> sqlite3.Connection:
        if self.read_only:
            raise LedgerError(f"ledger {self.location}: cannot record anything: {READ_ONLY_FIX}")
        folder = self.path.parent
        try:
            if not folder.exists() and folder.name == ".labcoat":
                folder.mkdir(parents=True)  # the default place: keep it out of git, as pytest does
                (folder / ".gitignore").write_text(
                    "# created by labcoat: the ledger is not code\n*\n"
                )
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LedgerError(
                f"ledger {self.location}: cannot create its folder ({exc.strerror or exc})"
            ) from exc
        with self._errors():
            new = not self.path.exists() or self.path.stat().st_size == 0
            conn = sqlite3.connect(
                self.path,
                timeout=self.busy_timeout_s,
                isolation_level=None,
                check_same_thread=False,
            )
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
            if new:
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise LedgerError(
                    f"ledger {self.location}: SQLite refused WAL mode (journal_mode={mode}); put "
                    "the ledger on a local file system"
                )
            # WAL + NORMAL: a commit survives the process being killed; only an OS crash or
            # power loss can drop the last commits, and never corrupts the file.
            conn.execute("PRAGMA synchronous = NORMAL")
        return conn

    def _close_writer(self, conn: sqlite3.Connection) -> None:
        """Checkpoint the WAL into the file; as the last connection, leave WAL mode too, so the
        file alone holds every commit (another process still open keeps WAL mode on)."""
        try:
            conn.execute("PRAGMA busy_timeout = 0")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            mode = conn.execute("PRAGMA journal_mode = DELETE").fetchone()[0]
            if str(mode).lower() == "delete":  # sealed: the file alone is the whole ledger
                self.heads.unlink(missing_ok=True)
        except (sqlite3.Error, OSError):
            pass  # busy: another connection is open, and the last one to close seals the file
        finally:
            conn.close()

    def _keep_heads(self, conn: sqlite3.Connection) -> None:
        """After a commit: the chain heads, beside the file (see the module's docstring). Best
        effort and never ahead of the file: written after the commit, so a writer killed in
        between leaves heads that the file already holds."""
        try:
            rows = conn.execute("SELECT name, last_id FROM chain_heads").fetchall()
        except sqlite3.Error:
            return  # not migrated yet: nothing chained
        try:
            tmp = self.heads.with_name(f"{self.heads.name}.{os.getpid()}.{id(self):x}.tmp")
            tmp.write_text(json.dumps({n: int(i) for n, i in rows}), encoding="utf-8")
            os.replace(tmp, self.heads)
        except OSError:
            pass

    def _heads_kept(self) -> dict[str, int] | None:
        """The chain heads the last writer committed, or None when no writer left them."""
        try:
            data = json.loads(self.heads.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict):
            return None
        return {str(k): int(v) for k, v in data.items() if isinstance(v, int)}

    @contextmanager
    def write(self) -> Iterator[Tx]:
        with self._lock:
            conn = self._writer_conn()
            cur = conn.cursor()
            if self._depth:  # nested: a savepoint inside the open transaction
                name = f"labcoat_{self._depth}"
                self._depth += 1
                try:
                    with self._errors():
                        cur.execute(f"SAVEPOINT {name}")
                    yield Tx(cur, SQLITE)
                    with self._errors():
                        cur.execute(f"RELEASE {name}")
                except BaseException:
                    if conn.in_transaction:
                        cur.execute(f"ROLLBACK TO {name}")
                        cur.execute(f"RELEASE {name}")
                    raise
                finally:
                    self._depth -= 1
                return
            with self._errors():
                cur.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                with self._errors():
                    yield Tx(cur, SQLITE)
                    cur.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            finally:
                self._depth = 0
            self._keep_heads(conn)

    def _connect_reader(self) -> sqlite3.Connection:
        if not self.path.exists():
            raise LedgerError(f"ledger {self.location}: no such file")
        # With no -wal beside the file there is nothing but the file to read. A reader opened
        # with mode=ro on a WAL-mode file would create an empty -wal and -shm (changing the disk
        # it reads, and hiding a lost WAL from the next verify), and on read-only media it
        # cannot make them at all: such a file is opened as immutable, until a -wal appears.
        immutable = not self.wal.exists() and (self.read_only or _says_wal_mode(self.path))
        how = "immutable=1" if immutable else "mode=ro"
        with self._errors():
            conn = sqlite3.connect(
                f"{self.path.as_uri()}?{how}",
                uri=True,
                timeout=self.busy_timeout_s,
                isolation_level=None,
                check_same_thread=False,
            )
            conn.execute("PRAGMA query_only = ON")
            conn.set_authorizer(_deny_attach)
        if immutable:
            self._immutable.add(id(conn))
        return conn

    def _usable(self, conn: Any) -> bool:
        """An immutable reader sees no writer: once a -wal appears (a writer started), reopen."""
        if id(conn) in self._immutable and self.wal.exists():
            self._immutable.discard(id(conn))
            try:
                conn.close()
            except sqlite3.Error:
                pass
            return False
        return True

    @contextmanager
    def read(self) -> Iterator[Tx]:
        conn = self._reader()
        cur = conn.cursor()
        with self._errors():
            cur.execute("BEGIN")
            try:
                yield Tx(cur, SQLITE)
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")

    def readonly_sql(
        self, sql: str, params: Sequence[Any] = (), *, timeout_s: float = 30.0
    ) -> tuple[list[str], list[tuple]]:
        conn = self._reader()
        deadline = time.monotonic() + timeout_s
        conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
        try:
            cur = conn.execute(sql, tuple(params))
            rows = cur.fetchall()
            columns = [d[0] for d in cur.description or ()]
        except sqlite3.Error as exc:
            text = str(exc)
            if (
                "readonly" in text
                or "read-only" in text
                or "not authorized" in text
                or "query_only" in text
            ):
                raise ReadOnlyError(
                    f"ledger sql is read-only: the statement was refused ({text}); change the "
                    "ledger through labcoat's commands, which keep its hash chains"
                ) from exc
            if "interrupted" in text:
                raise LedgerError(
                    f"ledger sql: the query ran past {timeout_s:g} s and was stopped"
                ) from exc
            if isinstance(exc, sqlite3.DatabaseError) and not isinstance(
                exc, sqlite3.OperationalError
            ):
                raise LedgerError(_sqlite_message(exc, self.location, self.busy_timeout_s)) from exc
            raise InputError(f"ledger sql: {text}") from exc
        finally:
            conn.set_progress_handler(None, 0)
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        return columns, rows

    def table_names(self) -> set[str]:
        with self.read() as tx:
            rows = tx.all("SELECT name FROM sqlite_master WHERE type = 'table'")
        return {r[0] for r in rows} - {"sqlite_sequence"}

    def application_id(self) -> int:
        with self.read() as tx:
            return int(tx.value("PRAGMA application_id") or 0)

    def check_integrity(self) -> list[str]:
        with self.read() as tx:
            rows = [r[0] for r in tx.all("PRAGMA integrity_check")]
        return [] if rows == ["ok"] else rows

    def storage_problems(self, *, sealed_on_close: bool = True) -> tuple[list[str], list[str]]:
        """A file that says a writer has it open (WAL mode) but has no ``-wal`` beside it was
        copied or moved without the commits that lived there; a ``-wal`` holding commits means
        the file alone is not the whole ledger yet (a writer is open, or one died). Ledgers
        from before the seal-on-close migration (``sealed_on_close`` False) were left in WAL
        mode when closed, so a missing ``-wal`` is no problem there."""
        wal_bytes = self.wal.stat().st_size if self.wal.exists() else None
        if self._cut_from_wal and sealed_on_close:
            return self._without_wal()
        if wal_bytes and wal_bytes > 32 and self.wal.stat().st_mtime >= self.path.stat().st_mtime:
            return [], [
                f"{self.wal.name} holds {wal_bytes:,} bytes of commits not yet in {self.path.name} "
                "(a labcoat process is writing, or one died): copy both files, or copy after it "
                "ends"
            ]
        return [], []

    def _without_wal(self) -> tuple[list[str], list[str]]:
        """A WAL-mode file with no -wal: checkpointed by another client, or cut from its WAL."""
        kept = self._heads_kept()
        if kept is None:  # no heads beside it: copied alone, or the heads went with the WAL
            return [
                f"{self.path.name}: the file says a writer had it open, but its -wal file is "
                "missing: commits made since its last checkpoint are not in it (was it copied "
                "while labcoat was writing? copy its -wal file with it, or copy after every "
                "labcoat process ended)"
            ], []
        with self.read() as tx:
            in_file = {str(n): int(i) for n, i in tx.all("SELECT name, last_id FROM chain_heads")}
        lost = {t: (in_file.get(t, 0), n) for t, n in kept.items() if n > in_file.get(t, 0)}
        if lost:
            rows = ", ".join(f"{t} {a + 1}-{b}" for t, (a, b) in sorted(lost.items()))
            return [
                f"{self.path.name}: its -wal file is missing, and with it rows the last writer "
                f"committed ({rows}; {self.heads.name} lists them): restore "
                f"{self.wal.name} beside the file if you have it"
            ], []
        return [], [
            f"{self.path.name}: a writer stopped without sealing the file (killed?), and its WAL "
            f"was checkpointed into the file by another SQLite client: every row it committed "
            f"is in the file ({self.heads.name} agrees); nothing was lost"
        ]


def _deny_attach(action: int, *_: Any) -> int:
    """Authorizer for readers: ATTACH could open (and create) another, writable file."""
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


# --------------------------------------------------------------------------------------------
# PostgreSQL


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def redact_url(url: str) -> str:
    """The URL with any password replaced by ``***``, for messages."""
    return re.sub(r"(://[^:/@]+:)[^@]*@", r"\1***@", url)


def _psycopg():
    from labcoat.extras import import_module

    return import_module("psycopg", "postgres", "ledger: a postgresql:// ledger")


def _read_only_refused(exc: BaseException) -> ReadOnlyError:
    return ReadOnlyError(
        f"ledger sql is read-only: the statement was refused ({_first_line(exc)}); change the "
        "ledger through labcoat's commands, which keep its hash chains"
    )


class PostgresStore(Store):
    """A team ledger on a PostgreSQL server, in its own ``labcoat`` schema."""

    dialect = POSTGRES

    def __init__(self, url: str, *, busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S):
        super().__init__(busy_timeout_s=busy_timeout_s)
        self.url = self.target = url
        self.location = redact_url(url)

    @contextmanager
    def _errors(self) -> Iterator[None]:
        psycopg = _psycopg()
        try:
            yield
        except psycopg.errors.ReadOnlySqlTransaction as exc:
            raise _read_only_refused(exc) from exc
        except psycopg.errors.IntegrityError:
            raise
        except psycopg.OperationalError as exc:
            raise LedgerError(f"ledger {self.location}: {_first_line(exc)}") from exc

    def _connect(self, *, read_only: bool) -> Any:
        psycopg = _psycopg()
        with self._errors():
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=10)
        conn.execute(f"SET search_path TO {PG_SCHEMA}, public")
        conn.execute(f"SET lock_timeout = {int(self.busy_timeout_s * 1000)}")
        if read_only:
            conn.execute("SET default_transaction_read_only = on")
        return conn

    def _connect_writer(self) -> Any:
        return self._connect(read_only=False)

    def _connect_reader(self) -> Any:
        return self._connect(read_only=True)

    def _usable(self, conn: Any) -> bool:
        return not conn.closed

    @contextmanager
    def write(self) -> Iterator[Tx]:
        with self._lock:
            if self._writer is not None and self._writer.closed:
                self._writer = None
            conn = self._writer_conn()
            outermost = self._depth == 0
            self._depth += 1
            try:
                with self._errors(), conn.transaction():  # nested blocks become savepoints
                    cur = conn.cursor()
                    if outermost:
                        cur.execute("SELECT pg_advisory_xact_lock(%s)", (PG_WRITE_LOCK,))
                    yield Tx(cur, POSTGRES)
            finally:
                self._depth -= 1

    @contextmanager
    def read(self) -> Iterator[Tx]:
        conn = self._reader()
        with self._errors(), conn.transaction():
            yield Tx(conn.cursor(), POSTGRES)

    def readonly_sql(
        self, sql: str, params: Sequence[Any] = (), *, timeout_s: float = 30.0
    ) -> tuple[list[str], list[tuple]]:
        psycopg = _psycopg()
        conn = self._reader()
        try:
            with conn.transaction(force_rollback=True):
                cur = conn.cursor(binary=True)  # binary: the extended protocol, one statement only
                cur.execute("SET TRANSACTION READ ONLY")
                cur.execute(f"SET LOCAL statement_timeout = {max(1, int(timeout_s * 1000))}")
                cur.execute("SELECT 1")  # takes the snapshot: read-write mode can no longer be set
                if params:  # our placeholders are ?; psycopg's are %s, and a literal % is %%
                    cur.execute(sql.replace("%", "%%").replace("?", "%s"), tuple(params))
                else:
                    cur.execute(sql)
                columns = [d.name for d in cur.description or ()]
                rows = [tuple(r) for r in cur.fetchall()] if cur.description else []
        except psycopg.errors.QueryCanceled as exc:
            raise LedgerError(
                f"ledger sql: the query ran past {timeout_s:g} s and was stopped"
            ) from exc
        except (psycopg.errors.ReadOnlySqlTransaction, psycopg.errors.InsufficientPrivilege) as exc:
            raise _read_only_refused(exc) from exc
        except psycopg.OperationalError as exc:
            raise LedgerError(f"ledger {self.location}: {_first_line(exc)}") from exc
        except psycopg.Error as exc:
            if "read-only" in _first_line(exc) or "read only" in _first_line(exc):
                raise _read_only_refused(exc) from exc
            raise InputError(f"ledger sql: {_first_line(exc)}") from exc
        return columns, rows

    def table_names(self) -> set[str]:
        with self.read() as tx:
            rows = tx.all(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = ?",
                (PG_SCHEMA,),
            )
        return {r[0] for r in rows}


def is_postgres_url(location: str) -> bool:
    return location.startswith(("postgresql://", "postgres://"))


def open_store(
    location: str | os.PathLike[str], *, busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S
) -> Store:
    """The store for a file path, ``sqlite:///path`` or ``postgresql://…`` URL."""
    text = os.fspath(location)
    if is_postgres_url(text):
        return PostgresStore(text, busy_timeout_s=busy_timeout_s)
    if "://" in text and not text.startswith("sqlite:///"):
        raise InputError(
            f"ledger: {redact_url(text)!r} is not a location labcoat can open; give a file path, "
            "sqlite:///PATH or postgresql://USER@HOST/DB"
        )
    if not text.strip():
        raise InputError("ledger: the location is empty; give a file path or a postgresql:// URL")
    return SQLiteStore(text.removeprefix("sqlite:///"), busy_timeout_s=busy_timeout_s)
