"""Text as the overlap audits see it: lower-cased words without punctuation (GPT-3's
normalisation), word ids from the eval set's vocabulary, and n-gram hashes computed with numpy.

Only words the eval set uses can be part of a shared n-gram, so every other corpus word maps to
0 and breaks any window it falls in: memory stays bounded by the eval set, not the corpus.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import repeat
from typing import Iterable

import numpy as np

#: odd 64-bit multiplier of the polynomial window hash (arithmetic wraps modulo 2**64)
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)


def words(text: str) -> list[str]:
    """Lower-cased runs of letters and digits; punctuation and whitespace separate them."""
    return text.lower().translate(_punctuation_to_space()).split()


@lru_cache(maxsize=1)
def _punctuation_to_space() -> dict[int, str]:
    """Every character of the Basic Multilingual Plane that is neither alphanumeric nor
    whitespace, mapped to a space (str.translate is several times faster than a regex)."""
    return {i: " " for i in range(0x10000) if not chr(i).isalnum() and not chr(i).isspace()}


def build_vocabulary(texts: Iterable[list[str]]) -> dict[str, int]:
    """Word -> id (from 1) over the eval set's words; 0 is kept for 'not in the eval set'."""
    vocab: dict[str, int] = {}
    for ws in texts:
        for w in ws:
            if w not in vocab:
                vocab[w] = len(vocab) + 1
    return vocab


def word_ids(ws: list[str], vocab: dict[str, int]) -> np.ndarray:
    return np.fromiter(map(vocab.get, ws, repeat(0)), dtype=np.int64, count=len(ws))


def window_hashes(ids: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Hashes of every n-word window of ``ids`` and a mask of the windows with no unknown word."""
    m = len(ids) - n + 1
    if m <= 0:
        return np.empty(0, np.uint64), np.empty(0, bool)
    values = ids.astype(np.uint64)
    h = np.zeros(m, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(n):
            h = h * _MULTIPLIER + values[j : j + m]
    unknown = np.concatenate(([0], np.cumsum(ids == 0)))
    known = (unknown[n:] - unknown[:m]) == 0
    return h, known


def windows(ids: np.ndarray, n: int) -> np.ndarray:
    """The (m, n) array of n-word windows of ``ids`` (a view, no copy)."""
    return np.lib.stride_tricks.sliding_window_view(ids, n)


#: low bits of a hash that address a :class:`HashTable` slot (a 16 MiB table)
_FILTER_BITS = 22
_FILTER_MASK = np.uint64((1 << _FILTER_BITS) - 1)


class _Hashed:
    """Sorted hashes with a :class:`HashTable` built on first use; pickles without the table
    (worker processes rebuild it rather than load it)."""

    hashes: np.ndarray
    _table: HashTable | None = None

    @property
    def table(self) -> HashTable:
        if self._table is None:
            self._table = HashTable(self.hashes)
        return self._table

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_table"}


class HashTable:
    """Positions of sorted 64-bit hashes, found by their low bits (one array read), with a
    binary search only for the few slots two hashes share."""

    SHARED = -2

    def __init__(self, hashes: np.ndarray):
        self.hashes = hashes  # sorted
        slots = (hashes & _FILTER_MASK).astype(np.int64)
        self.slot = np.full(1 << _FILTER_BITS, -1, np.int32)
        self.slot[slots] = np.arange(len(hashes), dtype=np.int32)
        values, counts = np.unique(slots, return_counts=True)
        self.slot[values[counts > 1]] = self.SHARED

    def find(self, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(query positions found, their positions in ``hashes``)."""
        pos = self.slot[(queries & _FILTER_MASK).astype(np.int64)].astype(np.int64)
        shared = np.flatnonzero(pos == self.SHARED)
        if shared.size:
            found = np.searchsorted(self.hashes, queries[shared])
            pos[shared] = np.minimum(found, len(self.hashes) - 1)
        where = np.flatnonzero(pos >= 0)
        where = where[self.hashes[pos[where]] == queries[where]]
        return where, pos[where]


class GramIndex(_Hashed):
    """The distinct n-grams of a set of texts, looked up by hash and verified word by word, so
    a hash collision never counts as a match."""

    def __init__(self, grams: np.ndarray, n: int):
        self.n = n
        grams = np.unique(grams.reshape(-1, n), axis=0) if len(grams) else grams.reshape(0, n)
        hashes, _ = (
            window_hashes(grams.reshape(-1), n) if len(grams) else (np.empty(0, np.uint64), None)
        )
        if len(grams):
            hashes = hashes[::n]  # windows starting at each gram's first word
        order = np.argsort(hashes, kind="stable")
        self.hashes = hashes[order]
        self.grams = grams[order]

    def __len__(self) -> int:
        return len(self.hashes)

    def lookup(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each window of ``ids`` present in the index: (window start, gram position)."""
        if len(self.hashes) == 0 or len(ids) < self.n:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        h, known = window_hashes(ids, self.n)
        starts = np.flatnonzero(known)
        if starts.size == 0:
            return starts, starts
        where, pos = self.table.find(h[starts])
        starts = starts[where]
        if starts.size:  # verify word by word
            same = np.all(windows(ids, self.n)[starts] == self.grams[pos], axis=1)
            starts, pos = starts[same], pos[same]
        return starts, pos


# -- words straight from bytes ----------------------------------------------------------------
#
# Looking every corpus word up in a dict costs more than everything else together. Instead, the
# bytes of a batch of documents are normalised through a 256-entry table (ASCII letters
# lower-cased, other ASCII non-alphanumerics to spaces), each word gets a polynomial hash of its
# bytes from one cumulative sum, and the hashes are matched against the eval vocabulary's
# through a :class:`HashTable`. Documents with non-ASCII text go through :func:`words` first,
# so both paths split text into the same words.

#: odd 64-bit multiplier of the per-word byte hash, and its inverse modulo 2**64
_BYTE_MULTIPLIER = 0xC2B2AE3D27D4EB4F
_BYTE_INVERSE = pow(_BYTE_MULTIPLIER, -1, 1 << 64)
_SPACE = 32


def _byte_table() -> np.ndarray:
    table = np.full(256, _SPACE, np.uint8)
    for c in range(128):
        if chr(c).isalnum():
            table[c] = ord(chr(c).lower())
    table[128:] = np.arange(128, 256)  # bytes of non-ASCII characters, already normalised
    return table


_TABLE = _byte_table()
_POWERS: dict[str, np.ndarray] = {}


def _powers(n: int) -> tuple[np.ndarray, np.ndarray]:
    """R**k and R**-k modulo 2**64 for k < n (grown and cached)."""
    if len(_POWERS.get("up", ())) < n:
        size = max(2 * n, 1 << 16)  # headroom, so growing batches do not recompute
        with np.errstate(over="ignore"):
            up = np.cumprod(np.full(size, _BYTE_MULTIPLIER, np.uint64))
            down = np.cumprod(np.full(size, _BYTE_INVERSE, np.uint64))
        _POWERS["up"] = np.concatenate(([np.uint64(1)], up[:-1]))
        _POWERS["down"] = np.concatenate(([np.uint64(1)], down[:-1]))
    return _POWERS["up"][:n], _POWERS["down"][:n]


def normalised_bytes(text: str) -> bytes:
    """The text's bytes ready for :func:`hash_words`: ASCII text as it is (the byte table does
    the rest), other text through :func:`words`."""
    if text.isascii():
        return text.encode("ascii")
    return " ".join(words(text)).encode("utf-8")


def hash_words(buf: bytes) -> tuple[np.ndarray, np.ndarray]:
    """(hash, first byte offset) of every word in ``buf`` (see :func:`normalised_bytes`)."""
    c = _TABLE[np.frombuffer(buf, np.uint8)]
    inside = np.concatenate(([False], c != _SPACE, [False]))
    edges = np.diff(inside.astype(np.int8))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    up, down = _powers(len(c) + 1)
    with np.errstate(over="ignore"):
        prefix = np.concatenate(([np.uint64(0)], np.cumsum(c.astype(np.uint64) * up[: len(c)])))
        hashes = (prefix[ends] - prefix[starts]) * down[starts]
    return hashes, starts


class Vocabulary(_Hashed):
    """The eval set's words by hash, for :meth:`ids_of` (ids as :func:`build_vocabulary`)."""

    def __init__(self, vocab: dict[str, int]):
        listed = list(vocab)
        hashes, _ = hash_words(" ".join(listed).encode("utf-8"))
        order = np.argsort(hashes, kind="stable")
        self.hashes = hashes[order]
        self.ids = np.array([vocab[w] for w in listed], np.int64)[order]

    def ids_of(self, documents: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Word ids of the documents' words in order (0: not an eval word) and the document
        each word belongs to."""
        parts = [normalised_bytes(d) for d in documents]
        offsets = np.cumsum([0] + [len(p) + 1 for p in parts[:-1]])
        hashes, starts = hash_words(b" ".join(parts))
        doc = np.searchsorted(offsets, starts, side="right") - 1
        ids = np.zeros(len(hashes), np.int64)
        if len(self.hashes) == 0:
            return ids, doc
        where, pos = self.table.find(hashes)
        ids[where] = self.ids[pos]
        return ids, doc
