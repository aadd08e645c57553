"""Content-addressed storage for large values (uncommitted diffs, run output): each stored once.

The key is the sha256 of the content, so a blob verifies itself and fifty runs on the same dirty
tree share one copy of the diff. Content is zlib-compressed when that makes it smaller.
"""

from __future__ import annotations

import hashlib
import zlib
from datetime import datetime, timezone

from labcoat.ledger.store.chain import Break
from labcoat.ledger.store.connection import Tx


def blob_key(content: bytes) -> str:
    return "sha256:" + hashlib.sha256(content).hexdigest()


def put_blob(tx: Tx, content: bytes) -> str:
    """Store ``content`` unless already there; returns its key. Needs a write transaction."""
    key = blob_key(content)
    packed = zlib.compress(content, 6)
    encoding, stored = ("zlib", packed) if len(packed) < len(content) else ("raw", content)
    tx.execute(
        "INSERT INTO blobs (hash, size, encoding, content, created_at) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (hash) DO NOTHING",
        (
            key,
            len(content),
            encoding,
            stored,
            datetime.now(timezone.utc).isoformat(timespec="microseconds"),
        ),
    )
    return key


def _unpack(encoding: str, stored: bytes) -> bytes:
    return zlib.decompress(stored) if encoding == "zlib" else bytes(stored)


def get_blob(tx: Tx, key: str) -> bytes | None:
    row = tx.one("SELECT encoding, content FROM blobs WHERE hash = ?", (key,))
    return None if row is None else _unpack(row[0], row[1])


def check_blobs(tx: Tx) -> tuple[int, list[Break]]:
    """Re-hash every blob; returns (blobs seen, breaks)."""
    breaks, seen = [], 0
    for row in tx.dicts("SELECT hash, size, encoding, content FROM blobs ORDER BY hash", batch=64):
        seen += 1
        try:
            content = _unpack(row["encoding"], row["content"])
        except zlib.error:
            breaks.append(
                Break("blobs", None, "edited", f"blob {row['hash'][:19]}… cannot be decompressed")
            )
            continue
        if blob_key(content) != row["hash"] or len(content) != row["size"]:
            breaks.append(
                Break(
                    "blobs", None, "edited", f"blob {row['hash'][:19]}… no longer matches its hash"
                )
            )
    return seen, breaks
