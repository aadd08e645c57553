"""The ledger's tables, declared once as migrations, and the chains they hold.

Rows are only ever appended. An entry is a sequence of revisions (a resolution or an edit is a
new revision); a run is a start row plus an end row. Only ``chain_heads`` is updated in place,
and it is itself checked against the chains it describes. JSON values are stored as text and
timestamps as ISO-8601 UTC text, so both databases return exactly what was hashed.
"""

from __future__ import annotations

import json

from labcoat.ledger.store.chain import GENESIS, ChainSpec
from labcoat.ledger.store.connection import Tx
from labcoat.ledger.store.migrations import Migrations

ENTRY_REVISIONS = ChainSpec.of(
    "entry_revisions",
    id=int,
    entry_id=int,
    revision=int,
    recorded_at=str,
    change=str,
    title=str,
    prediction=str,
    experiment=str,
    result=str,
    verdict=str,
    conclusion=str,
    tags=str,
    parents=str,
    runs=str,
    author=str,
)
RUNS = ChainSpec.of(
    "runs",
    id=int,
    name=str,
    started_at=str,
    command=str,
    cwd=str,
    host=str,
    user_name=str,
    pid=int,
    git_root=str,
    git_commit=str,
    git_branch=str,
    git_dirty=int,
    diff_hash=str,
    untracked_skipped=str,
    config=str,
    config_hash=str,
    data=str,
    data_hash=str,
    env=str,
    env_hash=str,
    seeds=str,
)
RUN_ENDS = ChainSpec.of(
    "run_ends",
    id=int,
    run_id=int,
    ended_at=str,
    status=str,
    exit_status=int,
    error=str,
    output_hash=str,
    output_bytes=int,
    duration_s=float,
    seeds=str,
)
FINDINGS = ChainSpec.of(
    "findings",
    id=int,
    run_id=int,
    entry_id=int,
    source=str,
    recorded_at=str,
    check_id=str,
    layer=str,
    status=str,
    severity=int,
    message=str,
    evidence=str,
    falsifies=str,
    predicts=str,
    step=int,
    rank=int,
    duration_s=float,
)
EVENTS = ChainSpec.of(
    "events",
    id=int,
    run_id=int,
    source=str,
    recorded_at=str,
    time=float,
    step=int,
    rank=int,
    kind=str,
    severity=str,
    value=float,
    message=str,
    data=str,
)
#: a hypothesis' pre-registered plan, one row per revision, sealed with the entry revision
#: it was written beside (``entry_hash``)
ENTRY_PLANS = ChainSpec.of(
    "entry_plans",
    id=int,
    entry_id=int,
    revision=int,
    recorded_at=str,
    plan=str,
    review=str,
    entry_hash=str,
    author=str,
)
#: a verdict the ledger computed from a plan, sealed with the entry revision it resolved
ENTRY_VERDICTS = ChainSpec.of(
    "entry_verdicts",
    id=int,
    entry_id=int,
    plan_revision=int,
    recorded_at=str,
    verdict=str,
    family=str,
    pvalue=float,
    n_paired=int,
    deviations=int,
    fingerprints=str,
    result=str,
    entry_hash=str,
)
CHAINS: tuple[ChainSpec, ...] = (
    ENTRY_REVISIONS,
    RUNS,
    RUN_ENDS,
    FINDINGS,
    EVENTS,
    ENTRY_PLANS,
    ENTRY_VERDICTS,
)

LEDGER_MIGRATIONS = Migrations("ledger")


@LEDGER_MIGRATIONS()
def m001_tables(tx: Tx) -> None:
    ddl = tx.dialect.ddl
    tx.execute(
        ddl(
            "CREATE TABLE chain_heads (name TEXT PRIMARY KEY, last_id {int} NOT NULL, hash TEXT "
            "NOT NULL)"
        )
    )
    tx.execute(
        ddl("""
        CREATE TABLE blobs (
            hash TEXT PRIMARY KEY, size {int} NOT NULL, encoding TEXT NOT NULL,
            content {blob} NOT NULL, created_at TEXT NOT NULL)""")
    )
    tx.execute(
        ddl("""
        CREATE TABLE entry_revisions (
            id {int} PRIMARY KEY, entry_id {int} NOT NULL, revision {int} NOT NULL,
            recorded_at TEXT NOT NULL, change TEXT NOT NULL, title TEXT NOT NULL,
            prediction TEXT, experiment TEXT, result TEXT, verdict TEXT NOT NULL, conclusion TEXT,
            tags TEXT NOT NULL, parents TEXT NOT NULL, runs TEXT NOT NULL, author TEXT,
            prev_hash TEXT NOT NULL, hash TEXT NOT NULL,
            UNIQUE (entry_id, revision))""")
    )
    # derived from each revision's tags, parents and runs so that filters are plain indexed SQL
    # on both databases; verify() checks that it still matches the chained JSON
    tx.execute(
        ddl("""
        CREATE TABLE entry_index (
            revision_id {int} NOT NULL REFERENCES entry_revisions (id), entry_id {int} NOT NULL,
            kind TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (revision_id, kind, value))""")
    )
    tx.execute(
        ddl("""
        CREATE TABLE runs (
            id {int} PRIMARY KEY, name TEXT, started_at TEXT NOT NULL, command TEXT NOT NULL,
            cwd TEXT, host TEXT, user_name TEXT, pid {int},
            git_root TEXT, git_commit TEXT, git_branch TEXT, git_dirty {int},
            diff_hash TEXT REFERENCES blobs (hash), untracked_skipped TEXT,
            config TEXT, config_hash TEXT, data TEXT, data_hash TEXT,
            env TEXT, env_hash TEXT, seeds TEXT,
            prev_hash TEXT NOT NULL, hash TEXT NOT NULL)""")
    )
    tx.execute(
        ddl("""
        CREATE TABLE run_ends (
            id {int} PRIMARY KEY, run_id {int} NOT NULL UNIQUE REFERENCES runs (id),
            ended_at TEXT NOT NULL, status TEXT NOT NULL, exit_status {int}, error TEXT,
            output_hash TEXT REFERENCES blobs (hash), output_bytes {int}, duration_s {real},
            seeds TEXT, prev_hash TEXT NOT NULL, hash TEXT NOT NULL)""")
    )
    tx.execute(
        ddl("""
        CREATE TABLE findings (
            id {int} PRIMARY KEY, run_id {int} REFERENCES runs (id), entry_id {int},
            source TEXT NOT NULL, recorded_at TEXT NOT NULL, check_id TEXT NOT NULL, layer TEXT,
            status TEXT NOT NULL, severity {int} NOT NULL, message TEXT, evidence TEXT,
            falsifies TEXT, predicts TEXT, step {int}, rank {int}, duration_s {real},
            prev_hash TEXT NOT NULL, hash TEXT NOT NULL)""")
    )
    tx.execute(
        ddl("""
        CREATE TABLE events (
            id {int} PRIMARY KEY, run_id {int} REFERENCES runs (id), source TEXT NOT NULL,
            recorded_at TEXT NOT NULL, time {real}, step {int}, rank {int}, kind TEXT NOT NULL,
            severity TEXT, value {real}, message TEXT, data TEXT,
            prev_hash TEXT NOT NULL, hash TEXT NOT NULL)""")
    )
    for spec in (ENTRY_REVISIONS, RUNS, RUN_ENDS, FINDINGS, EVENTS):  # the chains of 0.1
        tx.execute(
            "INSERT INTO chain_heads (name, last_id, hash) VALUES (?, 0, ?)", (spec.table, GENESIS)
        )


@LEDGER_MIGRATIONS()
def m002_indexes(tx: Tx) -> None:
    for statement in (
        "CREATE INDEX ix_entry_revisions_entry ON entry_revisions (entry_id, revision)",
        "CREATE INDEX ix_entry_revisions_recorded ON entry_revisions (recorded_at)",
        "CREATE INDEX ix_entry_index_value ON entry_index (kind, value, revision_id)",
        "CREATE INDEX ix_runs_started ON runs (started_at)",
        "CREATE INDEX ix_findings_run ON findings (run_id, source, status)",
        "CREATE INDEX ix_events_run_kind ON events (run_id, kind, step)",
        "CREATE INDEX ix_events_run_step ON events (run_id, step)",
    ):
        tx.execute(statement)


#: the migration after which a closed SQLite ledger is no longer left in WAL mode
SEALED_ON_CLOSE = "m003_sealed_on_close"


@LEDGER_MIGRATIONS(name=SEALED_ON_CLOSE)
def m003_sealed_on_close(tx: Tx) -> None:
    """No table changes: it marks the ledgers that labcoat checkpoints and takes out of WAL mode
    when it closes them, so that ``verify`` may read a WAL-mode file with no ``-wal`` beside
    it as one separated from its commits (older ledgers were left in WAL mode when closed)."""


@LEDGER_MIGRATIONS()
def m004_findings_by_entry(tx: Tx) -> None:
    """``ledger list`` leaves out the entries labcoat 0.1 wrote per doctor check: those that a
    finding points to."""
    tx.execute("CREATE INDEX ix_findings_entry ON findings (entry_id)")


@LEDGER_MIGRATIONS()
def m005_plans_and_verdicts(tx: Tx) -> None:
    """Pre-registered plans and the verdicts computed from them (:mod:`labcoat.verdicts`), two
    more hash chains beside the entries'."""
    ddl = tx.dialect.ddl
    tx.execute(
        ddl("""
        CREATE TABLE entry_plans (
            id {int} PRIMARY KEY, entry_id {int} NOT NULL, revision {int} NOT NULL,
            recorded_at TEXT NOT NULL, plan TEXT NOT NULL, review TEXT, entry_hash TEXT NOT NULL,
            author TEXT, prev_hash TEXT NOT NULL, hash TEXT NOT NULL,
            UNIQUE (entry_id, revision))""")
    )
    tx.execute(
        ddl("""
        CREATE TABLE entry_verdicts (
            id {int} PRIMARY KEY, entry_id {int} NOT NULL, plan_revision {int} NOT NULL,
            recorded_at TEXT NOT NULL, verdict TEXT NOT NULL, family TEXT, pvalue {real},
            n_paired {int} NOT NULL, deviations {int} NOT NULL, fingerprints TEXT NOT NULL,
            result TEXT NOT NULL, entry_hash TEXT NOT NULL,
            prev_hash TEXT NOT NULL, hash TEXT NOT NULL)""")
    )
    tx.execute("CREATE INDEX ix_entry_verdicts_entry ON entry_verdicts (entry_id, id)")
    tx.execute("CREATE INDEX ix_entry_verdicts_family ON entry_verdicts (family, entry_id)")
    for spec in (ENTRY_PLANS, ENTRY_VERDICTS):
        tx.execute(
            "INSERT INTO chain_heads (name, last_id, hash) VALUES (?, 0, ?)", (spec.table, GENESIS)
        )


@LEDGER_MIGRATIONS()
def m006_logs(tx: Tx) -> None:
    """A run's log lines as records (:mod:`labcoat.logs`): one row per line, the templates mined
    from them and the processes that wrote them. Derived from the run's output, so not chained:
    millions of lines are written at ingest speed, and ``verify`` leaves them out."""
    ddl = tx.dialect.ddl
    tx.execute(
        ddl("""
        CREATE TABLE log_lines (
            id {int} PRIMARY KEY, run_id {int} NOT NULL REFERENCES runs (id),
            seq {int} NOT NULL, time {real}, rank {int}, local_rank {int}, node TEXT,
            step {int}, level TEXT, stream TEXT, logger TEXT, template_id {int}, kinds TEXT,
            text TEXT NOT NULL)""")
    )
    tx.execute(
        ddl("""
        CREATE TABLE log_templates (
            run_id {int} NOT NULL REFERENCES runs (id), template_id {int} NOT NULL,
            template TEXT NOT NULL, count {int} NOT NULL, ranks TEXT NOT NULL, level TEXT,
            first_seq {int}, kinds TEXT, PRIMARY KEY (run_id, template_id))""")
    )
    tx.execute(
        ddl("""
        CREATE TABLE log_sources (
            run_id {int} NOT NULL REFERENCES runs (id), source {int} NOT NULL, path TEXT,
            rank {int}, local_rank {int}, group_rank {int}, node TEXT, pid {int},
            lines {int} NOT NULL, first_time {real}, last_time {real}, last_step {int},
            PRIMARY KEY (run_id, source))""")
    )
    # one index: a run's lines in order (on SQLite the id is the row itself, no second tree)
    tx.execute("CREATE UNIQUE INDEX ix_log_lines_run ON log_lines (run_id, seq)")
    tx.execute("CREATE INDEX ix_log_templates_text ON log_templates (template)")


#: a log line inside ``log_blocks.data``: the fields of one JSON array, in this order (the time
#: as the capture file wrote it, a string: JSON's float formatting was a third of the cost)
LOG_LINE_FIELDS = (
    "time", "source", "step", "level", "stream", "logger", "template_id", "kinds", "text"
)  # fmt: skip


def _log_lines_view(tx: Tx) -> str:
    """``log_lines``: the blocks unpacked, a row per line with its process's rank and node."""
    if tx.dialect.name == "sqlite":
        field = "json_extract(j.value, '$[{i}]')"
        each, seq = "json_each(b.data) j", "b.first_seq + j.key"
    else:
        field = "(j.value ->> {i})"
        each = "LATERAL jsonb_array_elements(b.data::jsonb) WITH ORDINALITY AS j(value, n)"
        seq = "b.first_seq + j.n - 1"
    at = {name: field.format(i=i) for i, name in enumerate(LOG_LINE_FIELDS)}
    if tx.dialect.name == "sqlite":
        at["time"] = f"CAST({at['time']} AS REAL)"
    else:
        for name, cast in (("time", "double precision"), ("source", "bigint"), ("step", "bigint")):
            at[name] = f"{at[name]}::{cast}"
        at["template_id"] = f"{at['template_id']}::bigint"
    return (
        f"CREATE VIEW log_lines AS SELECT b.run_id AS run_id, {seq} AS seq, {at['time']} AS time, "
        "s.rank AS rank, s.local_rank AS local_rank, s.node AS node, "
        f"{at['step']} AS step, {at['level']} AS level, {at['stream']} AS stream, "
        f"{at['logger']} AS logger, {at['template_id']} AS template_id, {at['kinds']} AS kinds, "
        f"{at['text']} AS text FROM log_blocks b CROSS JOIN {each} LEFT JOIN log_sources s ON "
        f"s.run_id = b.run_id AND s.source = {at['source']}"
    )


@LEDGER_MIGRATIONS()
def m007_log_blocks(tx: Tx) -> None:
    """A run's log lines in blocks of consecutive lines, a row each (its lines a JSON array of
    :data:`LOG_LINE_FIELDS`): a row per line cost SQLite more than everything else an ingest
    does. ``log_lines`` stays, as a view that unpacks the blocks, for ``labcoat ledger sql``;
    the lines m006 stored are carried over."""
    ddl = tx.dialect.ddl
    tx.execute(
        ddl("""
        CREATE TABLE log_blocks (
            run_id {int} NOT NULL REFERENCES runs (id), block {int} NOT NULL,
            first_seq {int} NOT NULL, lines {int} NOT NULL, data TEXT NOT NULL,
            PRIMARY KEY (run_id, block))""")
    )
    for (run_id,) in tx.all("SELECT DISTINCT run_id FROM log_lines ORDER BY run_id"):
        source_of: dict[tuple, int] = {}
        for source, rank, local_rank, node in tx.all(
            "SELECT source, rank, local_rank, node FROM log_sources WHERE run_id = ? "
            "ORDER BY source DESC",
            (run_id,),
        ):
            source_of[(rank, local_rank, node)] = source  # the first process of each identity
        last, block = 0, 0
        while True:
            rows = tx.all(
                "SELECT seq, time, rank, local_rank, node, step, level, stream, logger, "
                "template_id, kinds, text FROM log_lines WHERE run_id = ? AND seq > ? "
                "ORDER BY seq LIMIT 2000",
                (run_id, last),
            )
            if not rows:
                break
            data = [
                [
                    None if t is None else repr(t),
                    source_of.get((r, lr, nd), -1),
                    st,
                    lv,
                    sm,
                    lg,
                    tid,
                    k,
                    x,
                ]
                for _, t, r, lr, nd, st, lv, sm, lg, tid, k, x in rows
            ]
            block += 1
            tx.execute(
                "INSERT INTO log_blocks (run_id, block, first_seq, lines, data) "
                "VALUES (?, ?, ?, ?, ?)",
                (run_id, block, rows[0][0], len(rows), json.dumps(data, separators=(",", ":"))),
            )
            last = rows[-1][0]
    tx.execute("DROP INDEX ix_log_lines_run")
    tx.execute("DROP TABLE log_lines")
    tx.execute(_log_lines_view(tx))
