"""Files the audit commands read: arrays (``.npy``, ``.pt``) and tables (through
:func:`labcoat.stats.readers.read_table`: CSV, TSV, JSONL, JSON, Parquet)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from labcoat._validation import article
from labcoat.errors import InputError

ARRAY_SUFFIXES = (".npy", ".pt", ".pth")


def read_array(path: str, name: str) -> np.ndarray:
    """An array from ``.npy`` or ``.pt`` (a tensor, or the first tensor of a tuple/list such as
    ``(X, y)``)."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{name} {path}: no such file")
    suffix = p.suffix.lower()
    if suffix == ".npy":
        try:
            return np.load(p, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise InputError(f"{name} {path}: could not be read as .npy ({exc})") from None
    if suffix in (".pt", ".pth"):
        import torch

        try:
            obj = torch.load(p, map_location="cpu", weights_only=True)
        except Exception as exc:  # noqa: BLE001 - any unpickling failure is the file's fault
            raise InputError(
                f"{name} {path}: could not be read with torch.load ({type(exc).__name__}: {exc})"
            ) from None
        if isinstance(obj, (tuple, list)) and obj and isinstance(obj[0], torch.Tensor):
            obj = obj[0]
        if not isinstance(obj, torch.Tensor):
            raise InputError(
                f"{name} {path}: holds {article(type(obj).__name__)}; save a tensor "
                "(or an (X, y) tuple of tensors)"
            )
        return obj.detach().cpu().numpy()
    raise InputError(f"{name} {path}: expected .npy or .pt; got {suffix or 'no suffix'}")


def read_labels(
    path: str, column: str | None, id_column: str | None
) -> tuple[np.ndarray, list[Any] | None]:
    """Labels from an array file, or from ``column`` of a table (with ids from ``id_column``)."""
    if Path(path).suffix.lower() in ARRAY_SUFFIXES:
        if column or id_column:
            raise InputError(
                f"--labels {path}: an array file has no columns; drop --label-column/--id-column"
            )
        return read_array(path, "--labels"), None
    from labcoat.stats.readers import read_table

    if column is None:
        raise InputError(f"--labels {path}: a table needs --label-column naming the label column")
    table = read_table(path)
    labels = table.scores(column)
    if not np.all(labels == np.round(labels)):
        raise InputError(
            f"--labels {path}: column {column!r} holds non-integer values; labels must be class "
            "indices 0..K-1"
        )
    ids = None if id_column is None else table.ids(id_column).tolist()  # one row per id
    return labels.astype(np.int64), ids


def read_rows(path: str, text_column: str | None) -> Any:
    """Rows to compare for duplicates: texts from ``text_column``, else numeric rows."""
    if Path(path).suffix.lower() in ARRAY_SUFFIXES:
        if text_column:
            raise InputError(f"{path}: an array file has no columns; drop --text-column")
        return read_array(path, "rows")
    from labcoat.stats.readers import read_table

    table = read_table(path)
    if text_column is not None:
        values = table.column(text_column)
        missing = [i for i, v in enumerate(values) if not isinstance(v, str)]
        if missing:
            raise InputError(f"{path}: column {text_column!r} row {missing[0] + 1} is not text")
        return list(values)
    from labcoat.stats.readers import ID_COLUMNS, as_number

    # the numbers of each row, without the row's id (ids differ, so rows would never match)
    names = [n for n in table.names if n not in ID_COLUMNS] or table.names
    texts = [
        n
        for n in names
        if any(isinstance(v, str) and as_number(v) is None for v in list(table.column(n))[:1000])
    ]
    if texts:
        shown = ", ".join(repr(n) for n in texts[:5])
        raise InputError(
            f"{path}: column(s) {shown} hold text, and without --text-column every column is "
            f"compared as numbers; pass --text-column {texts[0]} to find duplicate texts"
        )
    return np.stack([table.scores(name) for name in names], axis=1)
