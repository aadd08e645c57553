"""Read per-item eval results into named columns.

Plain tables (CSV, TSV, JSONL, JSON records, Parquet) and the two harness formats people
actually have on disk: lm-eval-harness ``samples_<task>_<time>.jsonl`` (written with
``--log_samples``; a directory or glob of them reads as one table with a ``task`` column, the
model named by the ``results_*.json`` beside them) and Inspect eval logs (``.json``, or the
zipped ``.eval``). Columns keep their raw values; :meth:`Table.scores` and
:meth:`Table.labels` convert on demand, column at a time, and say exactly which file, column
and row is wrong. CSV and TSV are parsed by pyarrow when it is installed (columnar, about
10x faster than the csv module at 100k rows), by the csv module otherwise.
"""

from __future__ import annotations

import csv
import glob
import json
import math
import re
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from labcoat.errors import InputError

#: Inspect's letter grades as numbers (CORRECT, INCORRECT, PARTIAL, NOANSWER)
INSPECT_GRADES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
_TRUE = {"true", "yes", "correct"}
_FALSE = {"false", "no", "incorrect"}


@dataclass(frozen=True)
class Table:
    """Named columns of equal length read from ``source``; ``model`` when the file names one
    (Inspect's ``eval.model``, lm-eval's ``results_*.json``)."""

    source: str
    columns: dict[str, Sequence[Any]]
    model: str | None = None
    #: columns left out, with why (``duplicates="mean"``: text that differs within an id)
    dropped: dict[str, str] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(next(iter(self.columns.values()), []))

    @property
    def names(self) -> list[str]:
        return list(self.columns)

    def column(self, name: str) -> Sequence[Any]:
        if name in self.dropped:
            raise InputError(f"{self.source}: column {name!r} {self.dropped[name]}.")
        if name not in self.columns:
            shown = ", ".join(self.names[:20]) + (", ..." if len(self.names) > 20 else "")
            hint = ""
            if len(self.names) == 1 and (
                sep := next((c for c in ";\t|" if c in self.names[0]), None)
            ):
                hint = (
                    f" The header is one column; is the file separated by {sep!r}? "
                    ".csv is read comma-separated, .tsv tab-separated."
                )
            raise InputError(f"{self.source}: no column {name!r}; columns are: {shown}.{hint}")
        return self.columns[name]

    def scores(self, name: str) -> np.ndarray:
        """Column ``name`` as finite floats; booleans and Inspect grades become 1/0."""
        raw = self.column(name)
        try:  # the whole column at once; cell by cell only to find or convert odd cells
            out = np.asarray(raw, dtype=float)
        except (TypeError, ValueError):
            out = np.array([_as_number_or_nan(v) for v in raw], dtype=float)
            _say_words(self.source, name, raw, out)
        bad = np.flatnonzero(~np.isfinite(out))
        if bad.size:
            i = int(bad[0])
            value = raw[i]
            what = "missing" if value is None or value == "" else f"{value!r}"
            raise InputError(
                f"{self.source}: column {name!r} row {i + 1} is {what}, not a finite score; "
                "drop or score that item first."
            )
        return out

    def ids(self, name: str) -> np.ndarray:
        """Column ``name`` as item ids (strings), each on one row only (else an
        :class:`InputError` naming the first few repeated ids)."""
        check_ids(Table(self.source, {name: self.column(name)}), name)
        return self.labels(name)

    def labels(self, name: str) -> np.ndarray:
        """Column ``name`` as strings (ids, clusters), so ``1`` in JSON matches ``"1"`` in CSV."""
        raw = self.column(name)
        if isinstance(raw, np.ndarray) and raw.dtype == object and _all_text(raw):
            labels = raw
        else:
            labels = np.array([_label(v) for v in raw], dtype=object)
        missing = np.flatnonzero(labels == "") if labels.size else np.array([], dtype=int)
        if missing.size:
            raise InputError(
                f"{self.source}: column {name!r} is empty in {missing.size} row(s), first row "
                f"{int(missing[0]) + 1}."
            )
        return labels


def _say_words(source: str, name: str, raw: Sequence[Any], out: np.ndarray) -> None:
    """A word read as a number ("yes" as 1) is said, never done silently: one
    :class:`~labcoat.errors.LabcoatNote` per column naming each word and what it became."""
    read: dict[str, tuple[float, int]] = {}
    for value, number in zip(raw, out.tolist()):
        if isinstance(value, str) and not _is_numeral(value) and math.isfinite(number):
            word = value.strip()
            read[word] = (number, read.get(word, (number, 0))[1] + 1)
    if read:
        import warnings

        from labcoat.errors import LabcoatNote

        shown = ", ".join(f"{w!r} as {n:g} ({k} rows)" for w, (n, k) in list(read.items())[:6])
        warnings.warn(f"{source}: column {name!r}: read {shown}", LabcoatNote, stacklevel=3)


def _is_numeral(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _all_text(values: np.ndarray) -> bool:
    return all(type(v) is str for v in values.tolist())


def read_table(
    path: str | Path,
    *,
    id_column: str | None = None,
    duplicates: str = "error",
    remedy: str | None = None,
) -> Table:
    """Read ``path`` by its suffix: .csv, .tsv, .jsonl/.ndjson, .json, .parquet, .eval.

    A directory reads every lm-eval ``samples_*.jsonl`` under it, and a glob pattern
    (``out/samples_mmlu_*.jsonl``) every file it matches, as one table with ``task`` (the
    task from the file name) and ``task_doc_id`` (unique across tasks) columns.

    Ids are checked (:func:`check_ids`): an id (``id_column``, else the first of
    :data:`ID_COLUMNS` the table has) that appears on more than one row of the same task,
    epoch, seed or model is an error naming the first few, unless ``duplicates="mean"``:
    then the rows of each id are averaged into one. ``remedy``: what the error tells a caller
    without ``--duplicates`` to do instead.
    """
    table = _read_path(path)
    return check_ids(table, id_column, duplicates, remedy=remedy)


#: columns naming an item, checked for repeats when the caller names no id column
ID_COLUMNS = ("id", "question_id", "item_id", "sample_id", "doc_id")
#: columns under which one item is rightly found on several rows (once per task, epoch, ...)
CONTEXT_COLUMNS = ("task", "epoch", "seed", "model", "run", "attempt")
#: what to do with an id found on more than one row
DUPLICATES = ("error", "mean")


#: what the error on a repeated id suggests, where the command has --duplicates
AVERAGE_REMEDY = (
    "Remove the repeated rows, or pass --duplicates mean to average the rows of each id "
    "(duplicates='mean' in Python)."
)


def check_ids(
    table: Table,
    id_column: str | None = None,
    duplicates: str = "error",
    *,
    remedy: str | None = None,
) -> Table:
    """``table`` if no id repeats within its context (task, epoch, seed, model, run); else an
    :class:`InputError` naming the first few repeated ids, or with ``duplicates="mean"`` the
    table with the rows of each id averaged (numeric columns; a column that differs between
    the rows of one id and is not a number is an error). ``id_column`` None: the first of
    :data:`ID_COLUMNS` the table has, if any."""
    if duplicates not in DUPLICATES:
        raise InputError(
            f"`duplicates` must be one of {', '.join(map(repr, DUPLICATES))}; got {duplicates!r}."
        )
    column = id_column
    if column is None:
        column = next((c for c in ID_COLUMNS if c in table.columns), None)
        if column is None:
            return table
        # a column no one named is checked where it holds ids; its empty cells are no one's
        ids = np.array([_label(v) for v in table.columns[column]], dtype=object)
        if (ids == "").any():
            if duplicates == "error":
                return table
            return check_ids(table, column, duplicates, remedy=remedy)
    else:
        ids = table.labels(column)
    context = [c for c in CONTEXT_COLUMNS if c in table.columns and c != column]
    keys = ids
    if context:
        parts = [ids] + [
            np.array([_label(v) for v in table.columns[c]], dtype=object) for c in context
        ]
        keys = np.array(["\x1f".join(row) for row in zip(*parts)], dtype=object)
    uniq, first, inverse, counts = np.unique(
        keys.astype(str), return_index=True, return_inverse=True, return_counts=True
    )
    if uniq.size == keys.size:
        return table
    repeated = np.flatnonzero(counts > 1)
    if duplicates == "error":
        order = repeated[np.argsort(first[repeated])]
        shown = ", ".join(f"{ids[first[i]]!r} x{counts[i]}" for i in order[:5])
        more = ", ..." if order.size > 5 else ""
        within = f" within the same {'/'.join(context)}" if context else ""
        raise InputError(
            f"{table.source}: {order.size} id(s) in column {column!r} appear on more than one "
            f"row{within} ({shown}{more}); each row must be one item. {remedy or AVERAGE_REMEDY}"
        )
    return _mean_per_id(table, column, ids, first, inverse.reshape(-1))


def _mean_per_id(table: Table, column: str, ids, first, inverse) -> Table:
    """One row per id (in the order ids first appear): numbers averaged over the id's rows,
    other values kept where the rows agree; text that differs within an id (the answers
    themselves) is left out, and naming that column later says why."""
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    group = rank[inverse]
    heads = first[order]
    counts = np.bincount(group)
    columns: dict[str, Sequence[Any]] = {}
    dropped = dict(table.dropped)
    for name, raw in table.columns.items():
        values = np.asarray(raw, dtype=object)
        kept = values[heads]
        if name == column or all(_same(v, kept[g]) for v, g in zip(values.tolist(), group)):
            columns[name] = kept
            continue
        numbers = np.array([_as_number_or_nan(v) for v in values.tolist()], dtype=float)
        if not np.all(np.isfinite(numbers)):
            g = next(g for v, g in zip(values.tolist(), group) if not _same(v, kept[g]))
            dropped[name] = (
                f"differs between the rows of id {ids[heads[g]]!r} and is not a number, so "
                "--duplicates mean (averaging each id's rows) left it out; give one row per id "
                "to use it"
            )
            continue
        columns[name] = np.bincount(group, weights=numbers) / counts
    return replace(table, columns=columns, dropped=dropped)


def _same(a: Any, b: Any) -> bool:
    return a is b or a == b


def _read_path(path: str | Path) -> Table:
    text = str(path)
    p = Path(path)
    if p.is_dir():
        files = sorted(p.rglob("samples_*.jsonl"))
        if not files:
            raise InputError(
                f"{p}: is a directory with no lm-eval samples_*.jsonl files in it; give a file or "
                "a glob."
            )
        return concat_tables([_read_file(f) for f in files], text)
    if not p.exists() and any(ch in text for ch in "*?["):
        files = sorted(Path(f) for f in glob.glob(text, recursive=True) if Path(f).is_file())
        if not files:
            raise InputError(f"{text}: the pattern matches no files.")
        return concat_tables([_read_file(f) for f in files], text)
    return _read_file(p)


def _read_file(p: Path) -> Table:
    if not p.is_file():
        raise InputError(f"{p}: no such file.")
    suffix = p.suffix.lower()
    reader = _READERS.get(suffix)
    if reader is None:
        raise InputError(
            f"{p}: unknown file type {suffix or '(none)'}; use one of "
            f"{', '.join(sorted(_READERS))}."
        )
    try:
        table = reader(p)
    except InputError:
        raise
    except (
        OSError,
        UnicodeDecodeError,
        json.JSONDecodeError,
        csv.Error,
        zipfile.BadZipFile,
        KeyError,
        TypeError,
    ) as exc:
        raise InputError(
            f"{p}: could not be read as {suffix[1:]} ({type(exc).__name__}: {exc})."
        ) from None
    if len(table) == 0:
        raise InputError(f"{p}: has no rows.")
    return table


def concat_tables(tables: Sequence[Table], source: str) -> Table:
    """Stack tables row-wise; a column missing from one file is None in its rows."""
    if len(tables) == 1:
        return tables[0]
    names: dict[str, None] = {}
    for t in tables:
        names.update(dict.fromkeys(t.names))
    columns = {}
    for name in names:
        parts = []
        for t in tables:
            col = t.columns.get(name)
            parts.append(
                np.full(len(t), None, dtype=object)
                if col is None
                else np.asarray(col, dtype=object)
            )
        columns[name] = np.concatenate(parts)
    models = {t.model for t in tables if t.model}
    return Table(source, columns, models.pop() if len(models) == 1 else None)


def _read_delimited(path: Path) -> Table:
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    with path.open(newline="", encoding="utf-8-sig") as fh:
        header = next(csv.reader(fh, delimiter=delimiter), None)
    if not header:
        raise InputError(f"{path}: no header row; the first line must name the columns.")
    try:
        import pyarrow.csv as pacsv
    except ImportError:
        return _read_delimited_stdlib(path, delimiter, header)
    import pyarrow as pa

    try:
        arrow = pacsv.read_csv(
            path,
            parse_options=pacsv.ParseOptions(delimiter=delimiter),
            convert_options=pacsv.ConvertOptions(
                column_types={name: pa.string() for name in header}
            ),
        )
    except pa.ArrowInvalid as exc:
        raise InputError(f"{path}: could not be read as {path.suffix[1:]} ({exc}).") from None
    if len(set(header)) != len(header):
        raise InputError(f"{path}: the header repeats a column name ({', '.join(header)}).")
    columns = {}
    for name, col in zip(arrow.column_names, arrow.columns):
        values = np.array(col.to_pylist(), dtype=object)  # to_numpy would import pandas
        columns[name] = np.where(values == None, "", values) if col.null_count else values
    return Table(str(path), columns)


def _read_delimited_stdlib(path: Path, delimiter: str, header: list[str]) -> Table:
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.reader(fh, delimiter=delimiter)
        next(reader)
        rows = [row for row in reader if row]
    width = len(header)
    for i, row in enumerate(rows):
        if len(row) > width:
            raise InputError(f"{path}: row {i + 1} has more fields than the header.")
        if len(row) < width:
            rows[i] = row + [""] * (width - len(row))
    columns = zip(*rows) if rows else [() for _ in header]
    return Table(
        str(path), {name: np.array(col, dtype=object) for name, col in zip(header, columns)}
    )


def _read_jsonl(path: Path) -> Table:
    records = []
    with path.open(encoding="utf-8-sig") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}: line {lineno} is not valid JSON ({exc.msg}).") from None
            if not isinstance(record, dict):
                raise InputError(f"{path}: line {lineno} is not a JSON object.")
            records.append(record)
    if records and _is_lm_eval_sample(records[0]):
        return _lm_eval_table(path, records)
    return _records_table(path, records)


#: lm-eval names samples files ``samples_<task>_<ISO time>.jsonl``
_LM_EVAL_NAME = re.compile(r"^samples_(?P<task>.+?)(?:_(?P<time>\d{4}-\d{2}-\d{2}T[\d\-.:]+))?$")


def lm_eval_task(path: Path) -> str:
    """The task in an lm-eval samples file name (``samples_mmlu_anatomy_2024-...jsonl``)."""
    match = _LM_EVAL_NAME.match(path.stem)
    return match.group("task") if match else path.stem


def lm_eval_model(path: Path) -> str | None:
    """The model named by the newest ``results_*.json`` beside an lm-eval samples file."""
    for results in sorted(path.parent.glob("results_*.json"), reverse=True):
        try:
            data = json.loads(results.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        if not isinstance(data, dict):
            continue
        if isinstance(data.get("model_name"), str) and data["model_name"]:
            return data["model_name"]
        config = data.get("config") if isinstance(data.get("config"), dict) else {}
        args = config.get("model_args")
        if isinstance(args, str) and (found := re.search(r"(?:^|,)pretrained=([^,]+)", args)):
            return found.group(1)
        if isinstance(args, dict) and isinstance(args.get("pretrained"), str):
            return args["pretrained"]
    return None


def _read_json(path: Path) -> Table:
    data = json.loads(path.read_text(encoding="utf-8-sig"))
    if isinstance(data, dict) and "eval" in data and isinstance(data["eval"], dict):
        if not data.get("samples"):
            raise InputError(
                f"{path}: an Inspect log with no samples (a header-only log, or one written with "
                "--no-log-samples); rerun `inspect eval` with samples logged, or give the .eval "
                "file."
            )
        return replace(_inspect_table(path, data["samples"]), model=_inspect_model(data))
    if isinstance(data, list) and all(isinstance(r, dict) for r in data):
        return _records_table(path, data)
    raise InputError(
        f"{path}: expected an Inspect eval log (with 'eval' and 'samples') or a list of records."
    )


def _read_inspect_zip(path: Path) -> Table:
    with zipfile.ZipFile(path) as archive:
        names = sorted(
            n for n in archive.namelist() if n.startswith("samples/") and n.endswith(".json")
        )
        samples = [json.loads(archive.read(n)) for n in names]
        header = {}
        for meta in ("header.json", "_journal/start.json"):
            if meta in archive.namelist():
                header = json.loads(archive.read(meta))
                break
    if not samples:
        raise InputError(
            f"{path}: an Inspect log with no samples (a header-only log, or one written with "
            "--no-log-samples); rerun `inspect eval` with samples logged."
        )
    return replace(_inspect_table(path, samples), model=_inspect_model(header))


def _inspect_model(header: Any) -> str | None:
    spec = header.get("eval") if isinstance(header, dict) else None
    model = spec.get("model") if isinstance(spec, dict) else None
    return model if isinstance(model, str) and model else None


def _read_parquet(path: Path) -> Table:
    from labcoat.extras import import_module

    pa = import_module("pyarrow", "parquet", f"{path}: reading Parquet")
    pq = import_module("pyarrow.parquet", "parquet", f"{path}: reading Parquet")
    try:
        return Table(str(path), pq.read_table(path).to_pydict())
    except pa.ArrowException as exc:
        raise InputError(f"{path}: could not be read as parquet ({exc}).") from None


_READERS: dict[str, Callable[[Path], Table]] = {
    ".csv": _read_delimited,
    ".tsv": _read_delimited,
    ".jsonl": _read_jsonl,
    ".ndjson": _read_jsonl,
    ".json": _read_json,
    ".eval": _read_inspect_zip,
    ".parquet": _read_parquet,
}


def _records_table(path: Path, records: list[dict[str, Any]]) -> Table:
    names: dict[str, None] = {}
    for record in records:
        names.update(dict.fromkeys(record))
    return Table(
        str(path), {name: np.array([r.get(name) for r in records], dtype=object) for name in names}
    )


def _is_lm_eval_sample(record: dict[str, Any]) -> bool:
    return "doc_id" in record and "filtered_resps" in record and "metrics" in record


def _lm_eval_table(path: Path, records: list[dict[str, Any]]) -> Table:
    """One row per ``doc_id``; each metric as ``metric,filter`` (lm-eval's own naming) and, when
    the task has a single filter, also as plain ``metric``."""
    filters = list(dict.fromkeys(r.get("filter", "none") for r in records))
    task = lm_eval_task(path)
    rows: dict[Any, dict[str, Any]] = {}
    for r in records:
        row = rows.get(r["doc_id"])
        if row is None:
            row = rows[r["doc_id"]] = {
                "doc_id": r["doc_id"],
                "task": task,
                "task_doc_id": f"{task}/{_label(r['doc_id'])}",
            }
            doc = r.get("doc")
            for key, value in doc.items() if isinstance(doc, dict) else ():
                if isinstance(value, (str, int, float, bool)):
                    row[f"doc.{key}"] = value
        for metric in r.get("metrics", []):
            row[f"{metric},{r.get('filter', 'none')}"] = r.get(metric)
            if len(filters) == 1:
                row[metric] = r.get(metric)
    return replace(_records_table(path, list(rows.values())), model=lm_eval_model(path))


def _inspect_table(path: Path, samples: list[dict[str, Any]]) -> Table:
    """One row per sample and epoch: ``id``, ``epoch``, one column per scorer (``scorer.key``
    for scorers returning dicts) and scalar ``metadata.*`` fields for clustering."""
    records = []
    for i, s in enumerate(samples, 1):
        for what, value in (
            ("sample", s),
            ("its 'scores'", s.get("scores") if isinstance(s, dict) else None),
            ("its 'metadata'", s.get("metadata") if isinstance(s, dict) else None),
        ):
            if value is not None and not isinstance(value, dict):
                raise InputError(
                    f"{path}: sample {i}: {what} is a JSON {type(value).__name__}, not an object; "
                    "expected an Inspect eval log as `inspect eval` writes it."
                )
        row: dict[str, Any] = {"id": s.get("id"), "epoch": s.get("epoch", 1)}
        for scorer, score in (s.get("scores") or {}).items():
            value = score.get("value") if isinstance(score, dict) else score
            if isinstance(value, dict):
                for key, v in value.items():
                    row[f"{scorer}.{key}"] = _inspect_value(v)
            else:
                row[scorer] = _inspect_value(value)
        for key, v in (s.get("metadata") or {}).items():
            if isinstance(v, (str, int, float, bool)):
                row[f"metadata.{key}"] = v
        records.append(row)
    return _records_table(path, records)


def _inspect_value(value: Any) -> Any:
    if isinstance(value, str) and value in INSPECT_GRADES:
        return INSPECT_GRADES[value]
    return value


def _as_number_or_nan(value: Any) -> float:
    number = as_number(value)
    return math.nan if number is None else number


def as_number(value: Any) -> float | None:
    """A cell read as a number (booleans and numeric text included), or None."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in _TRUE:
            return 1.0
        if text.lower() in _FALSE:
            return 0.0
        try:
            return float(text)
        except ValueError:
            return None
    return None


def _label(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def read_id_list(path: str | Path) -> list[str]:
    """Ids from a JSON file: a list, or an object with an ``ids`` or ``issues`` list (as
    ``labcoat audit labels --json`` writes it). Ids come back as strings."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such file.")
    try:
        data = json.loads(p.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{p}: could not be read as JSON ({type(exc).__name__}: {exc}).") from None
    if isinstance(data, dict):
        key = next((k for k in ("ids", "issues") if k in data), None)
        if key is None:
            raise InputError(
                f"{p}: a JSON object needs an 'ids' or 'issues' list; its keys are "
                f"{', '.join(data) or 'none'}."
            )
        data = data[key]
    if not isinstance(data, list) or not all(
        isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in data
    ):
        raise InputError(
            f"{p}: expected a JSON list of ids (strings or numbers), or an object with one under "
            "'ids' or 'issues'."
        )
    return [_label(v) for v in data]
