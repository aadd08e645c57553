"""Entries: a suspected cause, the prediction written before the experiment, and what came of it.

An entry is append-only: creating it writes revision 1 at once, and resolving or editing it
writes the next revision; nothing is overwritten. The chain of revisions is what lets
``verify`` show that a prediction existed before its result. The functions here take an open
transaction; :class:`labcoat.ledger.Ledger` decides which.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from labcoat.errors import InputError
from labcoat.ledger.chain import append
from labcoat.ledger.environment import host_details
from labcoat.ledger.schema import ENTRY_REVISIONS
from labcoat.ledger.storage import Tx
from labcoat.ledger.timestamps import bound, now

if TYPE_CHECKING:
    from labcoat.ledger.ledger import Ledger

VERDICTS = ("open", "confirmed", "refuted", "inconclusive")
#: verdicts that close an entry (what ``resolve`` accepts)
CLOSING_VERDICTS = ("confirmed", "refuted", "inconclusive")
#: fields a revision may change
EDITABLE = ("title", "prediction", "experiment", "result", "verdict", "conclusion", "tags", "parents", "runs")


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
    _ledger: "Ledger | None" = field(default=None, repr=False, compare=False)

    @property
    def is_open(self) -> bool:
        return self.verdict == "open"

    def resolve(
        self, result: str, verdict: str, conclusion: str | None = None, *, experiment: str | None = None
    ) -> "Entry":
        """Record the observed result and the verdict (a new revision); returns this entry, updated."""
        return self._become(self._owner().resolve(self.id, result=result, verdict=verdict, conclusion=conclusion, experiment=experiment))

    def revise(self, **changes: Any) -> "Entry":
        """Change any of :data:`EDITABLE` in a new revision; the old one stays in the history."""
        return self._become(self._owner().revise(self.id, **changes))

    def history(self) -> list["Entry"]:
        return self._owner().history(self.id)

    def _owner(self) -> "Ledger":
        if self._ledger is None:
            raise InputError(f"entry {self.id} was not read from a ledger; use ledger.resolve({self.id}, ...)")
        return self._ledger

    def _become(self, other: "Entry") -> "Entry":
        for f in fields(self):
            setattr(self, f.name, getattr(other, f.name))
        return self

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}

    def __rich__(self):
        from labcoat.ledger.views import entry_view

        return entry_view(self)


# ---- validation -------------------------------------------------------------------------


def _text(value: Any, name: str, *, required: bool = False) -> str | None:
    if value is None:
        if required:
            raise InputError(f"{name}: is required; give a short sentence")
        return None
    if not isinstance(value, str):
        raise InputError(f"{name}: expected text; got a {type(value).__name__}")
    value = value.strip()
    if required and not value:
        raise InputError(f"{name}: is empty; give a short sentence")
    return value or None


def clean_tags(tags: Any) -> tuple[str, ...]:
    if tags is None:
        return ()
    if isinstance(tags, str):
        tags = (tags,)  # one tag, not its characters
    out: list[str] = []
    for tag in tags:
        if not isinstance(tag, str) or not tag.strip():
            raise InputError(f"tags: each tag must be non-empty text; got {tag!r}")
        if tag.strip() not in out:
            out.append(tag.strip())
    return tuple(out)


def clean_ids(values: Any, name: str) -> tuple[int, ...]:
    if values is None:
        return ()
    if isinstance(values, int) or hasattr(values, "id"):
        values = (values,)
    out: list[int] = []
    for v in values:
        v = getattr(v, "id", v)  # an Entry or a Run stands for its id
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise InputError(f"{name}: expected positive ids (or entries/runs); got {v!r}")
        if v not in out:
            out.append(v)
    return tuple(out)


def clean_verdict(verdict: Any, *, allowed: Sequence[str] = VERDICTS) -> str:
    if verdict not in allowed:
        raise InputError(f"verdict: must be one of {', '.join(allowed)}; got {verdict!r}")
    return verdict


def _check_links(tx: Tx, parents: tuple[int, ...], runs: tuple[int, ...], *, own_id: int | None = None) -> None:
    if own_id is not None and own_id in parents:
        raise InputError(f"parents: entry {own_id} cannot be its own parent")
    for pid in parents:
        if tx.value("SELECT 1 FROM entry_revisions WHERE entry_id = ? AND revision = 1", (pid,)) is None:
            raise InputError(f"parents: there is no entry {pid} in this ledger; `labcoat ledger list` shows the ids")
    for rid in runs:
        if tx.value("SELECT 1 FROM runs WHERE id = ?", (rid,)) is None:
            raise InputError(f"runs: there is no run {rid} in this ledger; `labcoat ledger runs` shows the ids")


# ---- writing ----------------------------------------------------------------------------


def _compact(values: Iterable[Any]) -> str:
    return json.dumps(list(values), separators=(",", ":"), ensure_ascii=False)


def _write_revision(tx: Tx, entry: Entry) -> Entry:
    row = {
        "entry_id": entry.id,
        "revision": entry.revision,
        "recorded_at": now(),
        "change": entry.change,
        "title": entry.title,
        "prediction": entry.prediction,
        "experiment": entry.experiment,
        "result": entry.result,
        "verdict": entry.verdict,
        "conclusion": entry.conclusion,
        "tags": _compact(entry.tags),
        "parents": _compact(entry.parents),
        "runs": _compact(entry.runs),
        "author": entry.author,
    }
    [revision_id] = append(tx, ENTRY_REVISIONS, [row])
    index = [(revision_id, entry.id, "tag", t) for t in entry.tags]
    index += [(revision_id, entry.id, "parent", str(p)) for p in entry.parents]
    index += [(revision_id, entry.id, "run", str(r)) for r in entry.runs]
    tx.executemany("INSERT INTO entry_index (revision_id, entry_id, kind, value) VALUES (?, ?, ?, ?)", index)
    stored = tx.one("SELECT recorded_at, hash FROM entry_revisions WHERE id = ?", (revision_id,))
    created = entry.created_at or stored[0]
    return replace(entry, recorded_at=stored[0], hash=stored[1], created_at=created)


def create(
    tx: Tx,
    *,
    title: str,
    prediction: str | None,
    experiment: str | None = None,
    tags: Any = (),
    parents: Any = (),
    runs: Any = (),
    author: str | None = None,
) -> Entry:
    """Write revision 1 of a new entry (verdict open)."""
    entry = Entry(
        id=0,
        title=_text(title, "title", required=True),
        prediction=_text(prediction, "predict"),
        experiment=_text(experiment, "experiment"),
        tags=clean_tags(tags),
        parents=clean_ids(parents, "parents"),
        runs=clean_ids(runs, "runs"),
        author=author if author is not None else host_details()["user"],
    )
    _check_links(tx, entry.parents, entry.runs)
    entry.id = int(tx.value("SELECT COALESCE(MAX(entry_id), 0) FROM entry_revisions")) + 1
    return _write_revision(tx, entry)


def revise(tx: Tx, entry_id: int, change: str, **changes: Any) -> Entry:
    """Write the next revision of ``entry_id`` with ``changes`` applied."""
    unknown = sorted(set(changes) - set(EDITABLE))
    if unknown:
        raise InputError(f"revise: cannot change {', '.join(unknown)}; editable fields are {', '.join(EDITABLE)}")
    base = current(tx, entry_id)
    if base is None:
        raise InputError(f"entry {entry_id}: there is no such entry; `labcoat ledger list` shows the ids")
    clean: dict[str, Any] = {}
    for key, value in changes.items():
        if key == "title":
            clean[key] = _text(value, "title", required=True)
        elif key == "verdict":
            clean[key] = clean_verdict(value)
        elif key == "tags":
            clean[key] = clean_tags(value)
        elif key in ("parents", "runs"):
            clean[key] = clean_ids(value, key)
        else:
            clean[key] = _text(value, key)
    _check_links(tx, clean.get("parents", ()), clean.get("runs", ()), own_id=entry_id)
    return _write_revision(tx, replace(base, revision=base.revision + 1, change=change, **clean))


def resolve(tx: Tx, entry_id: int, *, result: str, verdict: str, conclusion: str | None = None, experiment: str | None = None) -> Entry:
    changes: dict[str, Any] = {
        "result": _text(result, "result", required=True),
        "verdict": clean_verdict(verdict, allowed=CLOSING_VERDICTS),
    }
    if conclusion is not None:
        changes["conclusion"] = conclusion
    if experiment is not None:
        changes["experiment"] = experiment
    return revise(tx, entry_id, "resolved", **changes)


# ---- reading ----------------------------------------------------------------------------

_COLUMNS = (
    "r.id AS revision_id, r.entry_id, r.revision, r.recorded_at, r.change, r.title, r.prediction, "
    "r.experiment, r.result, r.verdict, r.conclusion, r.tags, r.parents, r.runs, r.author, r.hash, "
    "(SELECT f.recorded_at FROM entry_revisions f WHERE f.entry_id = r.entry_id AND f.revision = 1) AS created_at"
)


def from_row(row: dict[str, Any]) -> Entry:
    return Entry(
        id=int(row["entry_id"]),
        title=row["title"],
        prediction=row["prediction"],
        experiment=row["experiment"],
        result=row["result"],
        verdict=row["verdict"],
        conclusion=row["conclusion"],
        tags=tuple(json.loads(row["tags"])),
        parents=tuple(json.loads(row["parents"])),
        runs=tuple(json.loads(row["runs"])),
        revision=int(row["revision"]),
        change=row["change"],
        created_at=row["created_at"] or row["recorded_at"],
        recorded_at=row["recorded_at"],
        author=row["author"],
        hash=row["hash"],
    )


def current(tx: Tx, entry_id: int) -> Entry | None:
    rows = tx.dicts(
        f"SELECT {_COLUMNS} FROM entry_revisions r WHERE r.entry_id = ? ORDER BY r.revision DESC LIMIT 1",
        (entry_id,),
    )
    return from_row(rows[0]) if rows else None


def history(tx: Tx, entry_id: int) -> list[Entry]:
    rows = tx.dicts(f"SELECT {_COLUMNS} FROM entry_revisions r WHERE r.entry_id = ? ORDER BY r.revision", (entry_id,))
    return [from_row(r) for r in rows]


@dataclass(frozen=True)
class EntryFilter:
    """What ``list`` asks for. Values within one field are alternatives (OR); the fields are
    combined with AND, or with OR when ``match="any"``."""

    verdict: tuple[str, ...] = ()
    tag: tuple[str, ...] = ()
    text: tuple[str, ...] = ()
    since: str | None = None
    until: str | None = None
    run: tuple[int, ...] = ()
    parent: tuple[int, ...] = ()
    match: str = "all"
    limit: int | None = None

    @classmethod
    def build(
        cls,
        *,
        verdict: Any = None,
        tag: Any = None,
        text: Any = None,
        since: Any = None,
        until: Any = None,
        run: Any = None,
        parent: Any = None,
        match: str = "all",
        limit: int | None = None,
    ) -> "EntryFilter":
        def many(value: Any) -> tuple:
            if value is None:
                return ()
            return (value,) if isinstance(value, (str, int)) or hasattr(value, "id") else tuple(value)

        if match not in ("all", "any"):
            raise InputError(f"match: must be 'all' (AND) or 'any' (OR); got {match!r}")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise InputError(f"limit: expected a positive integer; got {limit!r}")
        return cls(
            verdict=tuple(clean_verdict(v) for v in many(verdict)),
            tag=clean_tags(many(tag)),
            text=tuple(t for t in (_text(t, "text") for t in many(text)) if t),
            since=bound(since, name="since"),
            until=bound(until, name="until", end=True),
            run=clean_ids(many(run), "run"),
            parent=clean_ids(many(parent), "parent"),
            match=match,
            limit=limit,
        )


def _like(text: str) -> str:
    escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


_SEARCHED = "LOWER(COALESCE(q.title, '') || ' ' || COALESCE(q.prediction, '') || ' ' || COALESCE(q.experiment, '') || ' ' || COALESCE(q.result, '') || ' ' || COALESCE(q.conclusion, ''))"


def query(tx: Tx, flt: EntryFilter) -> list[Entry]:
    conditions: list[str] = []
    params: list[Any] = []

    def alternatives(sql: str, values: Sequence[Any]) -> None:
        if values:
            conditions.append("(" + " OR ".join([sql] * len(values)) + ")")
            params.extend(values)

    alternatives("q.verdict = ?", flt.verdict)
    for kind, values in (("tag", flt.tag), ("run", [str(v) for v in flt.run]), ("parent", [str(v) for v in flt.parent])):
        if values:
            marks = ", ".join("?" * len(values))
            conditions.append(
                f"EXISTS (SELECT 1 FROM entry_index x WHERE x.revision_id = q.revision_id "
                f"AND x.kind = '{kind}' AND x.value IN ({marks}))"
            )
            params.extend(values)
    alternatives(f"{_SEARCHED} LIKE ? ESCAPE '\\'", [_like(t) for t in flt.text])
    if flt.since or flt.until:
        parts = []
        if flt.since:
            parts.append("q.created_at >= ?")
            params.append(flt.since)
        if flt.until:
            parts.append("q.created_at < ?")
            params.append(flt.until)
        conditions.append("(" + " AND ".join(parts) + ")")
    where = ""
    if conditions:
        where = "WHERE " + (" AND " if flt.match == "all" else " OR ").join(conditions)
    latest = (
        f"SELECT {_COLUMNS} FROM entry_revisions r WHERE r.revision = "
        "(SELECT MAX(m.revision) FROM entry_revisions m WHERE m.entry_id = r.entry_id)"
    )
    sql = f"SELECT * FROM ({latest}) q {where} ORDER BY q.entry_id"
    if flt.limit:
        sql += f" LIMIT {int(flt.limit)}"
    return [from_row(r) for r in tx.dicts(sql, params)]
