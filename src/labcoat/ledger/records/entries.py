"""Entries: a suspected cause, the prediction written before the experiment, and what came of it.

An entry is append-only: creating it writes revision 1 at once, and resolving or editing it
writes the next revision; nothing is overwritten. The chain of revisions is what lets
``verify`` show that a prediction existed before its result. An :class:`Entry` is plain data;
the functions here take an open transaction, and :class:`labcoat.Ledger` decides which.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Sequence

from labcoat._validation import OneOf, article
from labcoat.errors import InputError
from labcoat.ledger.store.chain import append
from labcoat.ledger.store.connection import Tx
from labcoat.ledger.store.schema import ENTRY_REVISIONS
from labcoat.ledger.store.select import Clause, encode, record, rows_where, where
from labcoat.ledger.store.timestamps import bound, now
from labcoat.provenance.environment import host_details

VERDICTS = ("open", "confirmed", "refuted", "inconclusive")
#: verdicts that close an entry (what ``resolve`` accepts)
CLOSING_VERDICTS = ("confirmed", "refuted", "inconclusive")
#: fields a revision may change
EDITABLE = (
    "title",
    "prediction",
    "experiment",
    "result",
    "verdict",
    "conclusion",
    "tags",
    "parents",
    "runs",
)
_LINKS = ("tags", "parents", "runs")


@dataclass
class Entry:
    """One hypothesis as of its latest revision (or of the revision it was read at)."""

    id: int
    title: str
    prediction: str | None = None
    experiment: str | None = None
    result: str | None = None
    verdict: str = "open"
    conclusion: str | None = None
    tags: tuple[str, ...] = ()
    parents: tuple[int, ...] = ()
    runs: tuple[int, ...] = ()
    revision: int = 1
    change: str = "created"
    created_at: str = ""
    recorded_at: str = ""  # when this revision was written
    author: str | None = None
    hash: str = ""

    def __post_init__(self) -> None:
        for name in _LINKS:
            setattr(self, name, tuple(getattr(self, name)))

    @property
    def is_open(self) -> bool:
        return self.verdict == "open"

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def __rich__(self):
        from labcoat.ledger.view import entry_view

        return entry_view(self)


# ---- validation -------------------------------------------------------------------------


def _text(value: Any, name: str, *, required: bool = False) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise InputError(
            f"{name}: expected text; got "
            + ("nothing" if value is None else article(type(value).__name__))
        )
    if required and not value.strip():
        raise InputError(f"{name}: is empty; give a short sentence")
    return value.strip() or None


def _many(value: Any) -> tuple:
    if value is None:
        return ()
    return (value,) if isinstance(value, (str, int)) or hasattr(value, "id") else tuple(value)


def clean_tags(tags: Any) -> tuple[str, ...]:
    out: list[str] = []
    for tag in _many(tags):  # a single string is one tag, not its characters
        if not isinstance(tag, str) or not tag.strip():
            raise InputError(f"tags: each tag must be non-empty text; got {tag!r}")
        if tag.strip() not in out:
            out.append(tag.strip())
    return tuple(out)


def clean_ids(values: Any, name: str) -> tuple[int, ...]:
    out: list[int] = []
    for v in _many(values):
        v = getattr(v, "id", v)  # an Entry or a Run stands for its id
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise InputError(f"{name}: expected positive ids (or entries/runs); got {v!r}")
        if v not in out:
            out.append(v)
    return tuple(out)


def clean_verdict(verdict: Any, *, allowed: Sequence[str] = VERDICTS) -> str:
    return OneOf(tuple(allowed)).check(verdict, "verdict")


def _clean(key: str, value: Any) -> Any:
    if key == "title":
        return _text(value, "title", required=True)
    if key == "verdict":
        return clean_verdict(value)
    if key == "tags":
        return clean_tags(value)
    if key in ("parents", "runs"):
        return clean_ids(value, key)
    return _text(value, key)


def _check_links(tx: Tx, entry: Entry) -> None:
    if entry.id in entry.parents:
        raise InputError(f"parents: entry {entry.id} cannot be its own parent")
    for pid in entry.parents:
        if (
            tx.value("SELECT 1 FROM entry_revisions WHERE entry_id = ? AND revision = 1", (pid,))
            is None
        ):
            raise InputError(
                f"parents: there is no entry {pid} in this ledger; `labcoat ledger list` shows the "
                "ids"
            )
    for rid in entry.runs:
        if tx.value("SELECT 1 FROM runs WHERE id = ?", (rid,)) is None:
            raise InputError(
                f"runs: there is no run {rid} in this ledger; `labcoat ledger runs` shows the ids"
            )


# ---- writing ----------------------------------------------------------------------------


def _write_revision(tx: Tx, entry: Entry) -> Entry:
    _check_links(tx, entry)
    row = {name: getattr(entry, name) for name in EDITABLE}
    row.update({name: encode(list(getattr(entry, name))) for name in _LINKS})
    row.update(
        entry_id=entry.id,
        revision=entry.revision,
        recorded_at=now(),
        change=entry.change,
        author=entry.author,
    )
    [revision_id] = append(tx, ENTRY_REVISIONS, [row])
    index = [(revision_id, entry.id, "tag", t) for t in entry.tags]
    index += [(revision_id, entry.id, "parent", str(p)) for p in entry.parents]
    index += [(revision_id, entry.id, "run", str(r)) for r in entry.runs]
    tx.executemany(
        "INSERT INTO entry_index (revision_id, entry_id, kind, value) VALUES (?, ?, ?, ?)", index
    )
    recorded_at, digest = tx.one(
        "SELECT recorded_at, hash FROM entry_revisions WHERE id = ?", (revision_id,)
    )
    return replace(
        entry, recorded_at=recorded_at, hash=digest, created_at=entry.created_at or recorded_at
    )


def create(
    tx: Tx, *, title: str, prediction: str | None, author: str | None = None, **links: Any
) -> Entry:
    """Write revision 1 of a new entry (verdict open); ``links``: experiment, tags, parents,
    runs."""
    unknown = sorted(set(links) - {"experiment", *_LINKS})
    if unknown:
        raise InputError(f"hypothesis: unknown field(s) {', '.join(unknown)}")
    clean = {key: _clean(key, value) for key, value in links.items()}
    next_id = int(tx.value("SELECT COALESCE(MAX(entry_id), 0) FROM entry_revisions")) + 1
    author = author if author is not None else host_details()["user"]
    entry = Entry(
        next_id,
        _clean("title", title),
        prediction=_text(prediction, "predict"),
        author=author,
        **clean,
    )
    return _write_revision(tx, entry)


def revise(tx: Tx, entry_id: int, change: str = "revised", **changes: Any) -> Entry:
    """Write the next revision of ``entry_id`` with ``changes`` applied."""
    unknown = sorted(set(changes) - set(EDITABLE))
    if unknown:
        raise InputError(
            f"revise: cannot change {', '.join(unknown)}; editable fields are {', '.join(EDITABLE)}"
        )
    base = current(tx, entry_id)
    clean = {key: _clean(key, value) for key, value in changes.items()}
    return _write_revision(tx, replace(base, revision=base.revision + 1, change=change, **clean))


def resolve(tx: Tx, entry_id: int, *, result: str, verdict: str, **more: Any) -> Entry:
    """Record the result and a closing verdict (``more``: conclusion, experiment)."""
    clean_verdict(verdict, allowed=CLOSING_VERDICTS)
    _text(result, "result", required=True)
    changes = {k: v for k, v in more.items() if v is not None}
    return revise(tx, entry_id, "resolved", result=result, verdict=verdict, **changes)


# ---- reading ----------------------------------------------------------------------------

#: every revision, named as :class:`Entry` fields, with the entry's creation time
REVISIONS = """(SELECT r.entry_id AS id, r.id AS revision_id, r.revision, r.recorded_at, r.change,
    r.title, r.prediction, r.experiment, r.result, r.verdict, r.conclusion, r.tags, r.parents,
    r.runs, r.author, r.hash, f.recorded_at AS created_at
    FROM entry_revisions r
    JOIN entry_revisions f ON f.entry_id = r.entry_id AND f.revision = 1) q"""
LATEST: Clause = (
    "q.revision = (SELECT MAX(m.revision) FROM entry_revisions m WHERE m.entry_id = q.id)",
    (),
)
#: entries that an older labcoat wrote for each doctor check (its findings point to them)
CHECK_ENTRY: Clause = ("EXISTS (SELECT 1 FROM findings x WHERE x.entry_id = q.id)", ())
_SEARCHED = " || ' ' || ".join(
    f"COALESCE(q.{c}, '')" for c in ("title", "prediction", "experiment", "result", "conclusion")
)


def _entries(rows: list[dict[str, Any]]) -> list[Entry]:
    return [record(Entry, row, json_columns=_LINKS) for row in rows]


def current(tx: Tx, entry_id: int) -> Entry:
    found = _entries(rows_where(tx, REVISIONS, [("q.id = ?", (entry_id,)), LATEST]))
    if not found:
        raise InputError(
            f"entry {entry_id}: there is no such entry; `labcoat ledger list` shows the ids"
        )
    return found[0]


def history(tx: Tx, entry_id: int) -> list[Entry]:
    found = _entries(rows_where(tx, REVISIONS, [("q.id = ?", (entry_id,))], order_by="q.revision"))
    if not found:
        raise InputError(
            f"entry {entry_id}: there is no such entry; `labcoat ledger list` shows the ids"
        )
    return found


def _linked(kind: str, values: tuple) -> Clause:
    marks = ", ".join("?" * len(values))
    return (
        "EXISTS (SELECT 1 FROM entry_index x WHERE x.revision_id = q.revision_id AND x.kind = '"
        f"{kind}' AND x.value IN ({marks}))",
        tuple(str(v) for v in values),
    )


def _like(text: str) -> str:
    return "%" + text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def query(
    tx: Tx,
    *,
    verdict: Any = None,
    tag: Any = None,
    text: Any = None,
    since: Any = None,
    until: Any = None,
    run: Any = None,
    parent: Any = None,
    match: str = "all",
    checks: bool = False,
    limit: int | None = None,
) -> list[Entry]:
    """Entries as of their latest revision; see :meth:`labcoat.Ledger.entries`."""
    if match not in ("all", "any"):
        raise InputError(f"match: must be 'all' (AND) or 'any' (OR); got {match!r}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise InputError(f"limit: expected a positive integer; got {limit!r}")
    verdicts = tuple(clean_verdict(v) for v in _many(verdict))
    texts = [t for t in (_text(t, "text") for t in _many(text)) if t]
    lo, hi = bound(since, name="since"), bound(until, name="until", end=True)
    filters = where(**{"q.verdict": verdicts or None})
    for kind, values in (
        ("tag", clean_tags(tag)),
        ("run", clean_ids(run, "run")),
        ("parent", clean_ids(parent, "parent")),
    ):
        if values:
            filters.append(_linked(kind, values))
    if texts:
        like = f"LOWER({_SEARCHED}) LIKE ? ESCAPE '\\'"
        filters.append((" OR ".join([like] * len(texts)), tuple(_like(t) for t in texts)))
    if lo or hi:
        filters.append(
            (
                " AND ".join(
                    c for c, v in (("q.created_at >= ?", lo), ("q.created_at < ?", hi)) if v
                ),
                tuple(v for v in (lo, hi) if v),
            )
        )
    always = [LATEST] if checks else [LATEST, (f"NOT {CHECK_ENTRY[0]}", ())]
    if match == "any":
        rows = rows_where(tx, REVISIONS, always, either=filters, order_by="q.id", limit=limit)
    else:
        rows = rows_where(tx, REVISIONS, always + filters, order_by="q.id", limit=limit)
    return _entries(rows)
