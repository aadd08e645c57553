"""Read per-item eval results into named columns.

Plain tables (CSV, TSV, JSONL, JSON records, Parquet) and the two harness formats people
actually have on disk: lm-eval-harness ``samples_<task>_<time>.jsonl`` (written with
``--log_samples``) and Inspect eval logs (``.json``, or the zipped ``.eval``). Columns keep
their raw values; :meth:`Table.scores` and :meth:`Table.labels` convert on demand and say
exactly which file, column and row is wrong.
"""

from __future__ import annotations

import csv
import json
import math
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from labcoat.errors import InputError

#: Inspect's letter grades as numbers (CORRECT, INCORRECT, PARTIAL, NOANSWER)
INSPECT_GRADES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
_TRUE = {"true", "yes", "correct"}
_FALSE = {"false", "no", "incorrect"}


@dataclass(frozen=True)
class Table:
    """Named columns of equal length read from ``source``."""

    source: str
    columns: dict[str, list[Any]]

    def __len__(self) -> int:
        return len(next(iter(self.columns.values()), []))

    @property
    def names(self) -> list[str]:
        return list(self.columns)

    def column(self, name: str) -> list[Any]:
        if name not in self.columns:
            shown = ", ".join(self.names[:20]) + (", ..." if len(self.names) > 20 else "")
            hint = ""
            if len(self.names) == 1 and (sep := next((c for c in ";\t|" if c in self.names[0]), None)):
                hint = f" The header is one column; is the file separated by {sep!r}? .csv is read comma-separated, .tsv tab-separated."
            raise InputError(f"{self.source}: no column {name!r}; columns are: {shown}.{hint}")
        return self.columns[name]

    def scores(self, name: str) -> np.ndarray:
        """Column ``name`` as finite floats; booleans and Inspect grades become 1/0."""
        raw = self.column(name)
        out = np.empty(len(raw))
        for i, value in enumerate(raw):
            number = _as_number(value)
            if number is None or not math.isfinite(number):
                what = "missing" if value in (None, "") else f"{value!r}"
                raise InputError(
                    f"{self.source}: column {name!r} row {i + 1} is {what}, not a finite score; "
                    "drop or score that item first."
                )
            out[i] = number
        return out

    def labels(self, name: str) -> np.ndarray:
        """Column ``name`` as strings (ids, clusters), so ``1`` in JSON matches ``"1"`` in CSV."""
        raw = self.column(name)
        missing = [i for i, v in enumerate(raw) if v is None or v == ""]
        if missing:
            raise InputError(f"{self.source}: column {name!r} is empty in {len(missing)} row(s), first row {missing[0] + 1}.")
        return np.array([_label(v) for v in raw], dtype=object)


def read_table(path: str | Path) -> Table:
    """Read ``path`` by its suffix: .csv, .tsv, .jsonl/.ndjson, .json, .parquet, .eval."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such file.")
    suffix = p.suffix.lower()
    reader = _READERS.get(suffix)
    if reader is None:
        raise InputError(f"{p}: unknown file type {suffix or '(none)'}; use one of {', '.join(sorted(_READERS))}.")
    try:
        table = reader(p)
    except InputError:
        raise
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, csv.Error, zipfile.BadZipFile, KeyError, TypeError) as exc:
        raise InputError(f"{p}: could not be read as {suffix[1:]} ({type(exc).__name__}: {exc}).") from None
    if len(table) == 0:
        raise InputError(f"{p}: has no rows.")
    return table


def _read_delimited(path: Path) -> Table:
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh, delimiter=delimiter)
        if not reader.fieldnames:
            raise InputError(f"{path}: no header row; the first line must name the columns.")
        rows = list(reader)
    columns: dict[str, list[Any]] = {name: [] for name in reader.fieldnames}
    for i, row in enumerate(rows):
        if None in row:  # more fields than the header has
            raise InputError(f"{path}: row {i + 1} has more fields than the header.")
        for name in columns:
            columns[name].append(row.get(name))
    return Table(str(path), columns)


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


def _read_json(path: Path) -> Table:
    data = json.loads(path.read_text(encoding="utf-8-sig"))
    if isinstance(data, dict) and "samples" in data and "eval" in data:
        return _inspect_table(path, data.get("samples") or [])
    if isinstance(data, list) and all(isinstance(r, dict) for r in data):
        return _records_table(path, data)
    raise InputError(
        f"{path}: expected an Inspect eval log (with 'eval' and 'samples') or a list of records."
    )


def _read_inspect_zip(path: Path) -> Table:
    with zipfile.ZipFile(path) as archive:
        names = sorted(n for n in archive.namelist() if n.startswith("samples/") and n.endswith(".json"))
        samples = [json.loads(archive.read(n)) for n in names]
    if not samples:
        raise InputError(f"{path}: this Inspect log holds no samples (was it written with samples?).")
    return _inspect_table(path, samples)


def _read_parquet(path: Path) -> Table:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(
            f"{path}: reading Parquet needs pyarrow; install it with `pip install 'labcoat[parquet]'`."
        ) from None
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
    return Table(str(path), {name: [r.get(name) for r in records] for name in names})


def _is_lm_eval_sample(record: dict[str, Any]) -> bool:
    return "doc_id" in record and "filtered_resps" in record and "metrics" in record


def _lm_eval_table(path: Path, records: list[dict[str, Any]]) -> Table:
    """One row per ``doc_id``; each metric as ``metric,filter`` (lm-eval's own naming) and, when
    the task has a single filter, also as plain ``metric``."""
    filters = list(dict.fromkeys(r.get("filter", "none") for r in records))
    rows: dict[Any, dict[str, Any]] = {}
    for r in records:
        row = rows.setdefault(r["doc_id"], {"doc_id": r["doc_id"]})
        for metric in r.get("metrics", []):
            row[f"{metric},{r.get('filter', 'none')}"] = r.get(metric)
            if len(filters) == 1:
                row[metric] = r.get(metric)
    return _records_table(path, list(rows.values()))


def _inspect_table(path: Path, samples: list[dict[str, Any]]) -> Table:
    """One row per sample and epoch: ``id``, ``epoch``, one column per scorer (``scorer.key``
    for scorers returning dicts) and scalar ``metadata.*`` fields for clustering."""
    records = []
    for i, s in enumerate(samples, 1):
        for what, value in (("sample", s), ("its 'scores'", s.get("scores") if isinstance(s, dict) else None),
                            ("its 'metadata'", s.get("metadata") if isinstance(s, dict) else None)):
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


def _as_number(value: Any) -> float | None:
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
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
