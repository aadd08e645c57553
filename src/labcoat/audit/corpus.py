"""A training corpus as a list of shards, read one document at a time.

Paths may be files, directories (walked) or globs. A ``.txt`` file is one document; in JSONL
each row's text column is one, read by byte range so one large file splits into several shards;
in Parquet each row group is read on its own. Nothing holds more than one document (or one row
group) in memory.
"""

from __future__ import annotations

import glob
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from labcoat.errors import InputError

TEXT_SUFFIXES = (".txt",)
JSONL_SUFFIXES = (".jsonl", ".ndjson")
PARQUET_SUFFIXES = (".parquet",)
SUFFIXES = TEXT_SUFFIXES + JSONL_SUFFIXES + PARQUET_SUFFIXES
#: bytes of corpus per shard; small enough that two workers share a corpus of a few MB
SHARD_BYTES = 4 << 20


@dataclass(frozen=True)
class Shard:
    """A piece of the corpus one task reads: whole text files, a JSONL byte range, or row groups."""

    kind: str  # "text" | "jsonl" | "parquet"
    paths: tuple[str, ...]
    start: int = 0
    end: int = -1
    row_groups: tuple[int, ...] = ()
    column: str = "text"
    size: int = 0  # bytes, for throughput figures

    def documents(self) -> Iterator[str]:
        if self.kind == "text":
            for path in self.paths:
                yield Path(path).read_text(encoding="utf-8", errors="replace")
        elif self.kind == "jsonl":
            yield from _jsonl_range(self.paths[0], self.start, self.end, self.column)
        else:
            yield from _parquet_groups(self.paths[0], self.row_groups, self.column)


def expand(paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """Files named by ``paths``: files as given, directories walked, globs expanded; sorted."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    found: list[Path] = []
    for item in paths:
        text = str(item)
        p = Path(text)
        if p.is_file():
            found.append(p)
        elif p.is_dir():
            found.extend(
                sorted(f for f in p.rglob("*") if f.is_file() and f.suffix.lower() in SUFFIXES)
            )
        elif glob.has_magic(text):
            matches = sorted(Path(m) for m in glob.glob(text, recursive=True))
            found.extend(m for m in matches if m.is_file() and m.suffix.lower() in SUFFIXES)
            if not matches:
                raise InputError(f"corpus: the pattern {text!r} matches no file")
        else:
            raise InputError(f"corpus: {text}: no such file or directory")
    for f in found:
        if f.suffix.lower() not in SUFFIXES:
            raise InputError(
                f"corpus: {f}: unknown file type {f.suffix or '(none)'}; use .txt, .jsonl or "
                ".parquet"
            )
    if not found:
        raise InputError(
            f"corpus: no .txt, .jsonl or .parquet files under {', '.join(map(str, paths))}"
        )
    return found


def shards(
    paths: Sequence[str | os.PathLike[str]], *, column: str = "text", shard_bytes: int | None = None
) -> list[Shard]:
    """Split the corpus into shards of about ``shard_bytes`` each (default :data:`SHARD_BYTES`)."""
    shard_bytes = shard_bytes or SHARD_BYTES
    out: list[Shard] = []
    texts: list[str] = []
    text_bytes = 0
    for f in expand(paths):
        size = f.stat().st_size
        suffix = f.suffix.lower()
        if suffix in TEXT_SUFFIXES:
            texts.append(str(f))
            text_bytes += size
            if text_bytes >= shard_bytes:
                out.append(Shard("text", tuple(texts), size=text_bytes))
                texts, text_bytes = [], 0
        elif suffix in JSONL_SUFFIXES:
            _check_jsonl_column(f, column)
            for start in range(0, max(size, 1), shard_bytes):
                end = min(start + shard_bytes, size)
                out.append(Shard("jsonl", (str(f),), start, end, column=column, size=end - start))
        else:
            out.extend(_parquet_shards(f, column, shard_bytes))
    if texts:
        out.append(Shard("text", tuple(texts), size=text_bytes))
    return out


def _check_jsonl_column(path: Path, column: str) -> None:
    """Fail early, on the first row, when the text column is missing."""
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if line.strip():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InputError(
                        f"{path}: line {lineno} is not valid JSON ({exc.msg})"
                    ) from None
                if not isinstance(record, dict) or column not in record:
                    keys = ", ".join(record) if isinstance(record, dict) else type(record).__name__
                    raise InputError(
                        f"{path}: no column {column!r} (found: {keys}); pass --corpus-column"
                    )
                return


def _jsonl_range(path: str, start: int, end: int, column: str) -> Iterator[str]:
    """Rows whose first byte lies in [start, end)."""
    with open(path, "rb") as fh:
        if start > 0:
            fh.seek(start - 1)
            fh.readline()  # finish the row that began before this range
        while fh.tell() < end:
            line = fh.readline()
            if not line:
                break
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(
                    f"{path}: a row near byte {fh.tell()} is not valid JSON ({exc.msg})"
                ) from None
            value = record.get(column) if isinstance(record, dict) else None
            if isinstance(value, str):
                yield value


def _parquet_shards(path: Path, column: str, shard_bytes: int) -> list[Shard]:
    pq = _pyarrow_parquet(path)
    meta = pq.ParquetFile(path)
    if column not in meta.schema_arrow.names:
        raise InputError(
            f"{path}: no column {column!r} (found: {', '.join(meta.schema_arrow.names)}); pass "
            "--corpus-column"
        )
    out, groups, size = [], [], 0
    for g in range(meta.num_row_groups):
        groups.append(g)
        size += meta.metadata.row_group(g).total_byte_size
        if size >= shard_bytes:
            out.append(
                Shard("parquet", (str(path),), row_groups=tuple(groups), column=column, size=size)
            )
            groups, size = [], 0
    if groups:
        out.append(
            Shard("parquet", (str(path),), row_groups=tuple(groups), column=column, size=size)
        )
    return out


def _parquet_groups(path: str, groups: tuple[int, ...], column: str) -> Iterator[str]:
    pq = _pyarrow_parquet(Path(path))
    reader = pq.ParquetFile(path)
    for g in groups:
        for value in reader.read_row_group(g, columns=[column]).column(0).to_pylist():
            if isinstance(value, str):
                yield value


def _pyarrow_parquet(path: Path):
    from labcoat.extras import import_module

    return import_module("pyarrow.parquet", "parquet", f"{path}: reading Parquet")
