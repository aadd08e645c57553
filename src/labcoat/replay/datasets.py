"""What data a recorded run read, fingerprinted at record time without the user saying so.

Two sources, both by content (:mod:`labcoat.provenance.fingerprint`, sampled above a few MiB):
the files and directories named on the command line (``python train.py --data a.csv``; the
script itself is code, covered by git), and each DataLoader's dataset when ``rec.loop`` first
sees it (a ``TensorDataset``'s tensors, else the dataset's arrays or path attributes: ``data``,
``targets``, ``root``…). ``labcoat divergence`` then names a data difference between two runs that
read different files, where before it saw only the command differ.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from labcoat.errors import InputError

#: a directory named on the command line is fingerprinted only below this many files
MAX_FILES = 2000
#: dataset attributes that hold its data or where it lives (torchvision's and common ones)
ATTRIBUTES = ("data", "targets", "labels", "root", "path", "paths", "file", "files", "data_dir")


def _small_dir(path: Path) -> bool:
    count = 0
    for _, _, files in os.walk(path):
        count += len(files)
        if count > MAX_FILES:
            return False
    return True


def argv_fingerprints(argv: list[str], script: str | None) -> list[dict[str, Any]]:
    """Fingerprints of the existing files (and small directories) named in ``argv``, as
    ``argv:PATH``; ``--flag=PATH`` counts too."""
    from labcoat.provenance.fingerprint import fingerprint

    out, seen = [], set()
    for arg in argv:
        value = arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg
        if not value or value.startswith("-") or value in seen:
            continue
        path = Path(value)
        try:
            if not path.exists() or (script and path.resolve() == Path(script).resolve()):
                continue
            if path.is_dir() and not _small_dir(path):
                continue
            seen.add(value)
            out.append(fingerprint(path, name=f"argv:{value}").to_dict())
        except (OSError, InputError):  # unreadable: not data we can vouch for
            continue
    return out


def dataset_fingerprint(dataset: Any, name: str) -> dict[str, Any] | None:
    """A fingerprint of a DataLoader's dataset (as ``loader:NAME``), or None when nothing in
    it can be fingerprinted by content."""
    from labcoat.provenance.capture import content_digest
    from labcoat.provenance.fingerprint import fingerprint

    inner = getattr(dataset, "dataset", None)
    while inner is not None and type(dataset).__name__ == "Subset":
        dataset, inner = inner, getattr(inner, "dataset", None)
    label = f"loader:{name}"
    try:
        return fingerprint(dataset, name=label).to_dict()  # a TensorDataset, an array
    except (InputError, TypeError, ValueError):
        pass
    parts = []
    for attr in ATTRIBUTES:
        value = getattr(dataset, attr, None)
        if value is None or callable(value):
            continue
        try:
            if isinstance(value, (str, os.PathLike)) and not Path(value).exists():
                continue
            parts.append((attr, fingerprint(value, name=attr)))
        except (InputError, TypeError, ValueError, OSError):
            continue
    if not parts:
        return None
    return {
        "name": label,
        "kind": "collection",
        "digest": "sha256:" + content_digest([[attr, part.digest] for attr, part in parts]),
        "size": sum(p.size for _, p in parts),
        "method": "sampled" if any(p.method == "sampled" for _, p in parts) else "full",
        "shape": None,
        "dtype": None,
        "files": None,
        "attributes": [a for a, _ in parts],
    }
