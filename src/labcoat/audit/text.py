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


class GramIndex:
    """The distinct n-grams of a set of texts, looked up by hash and verified word by word, so
    a hash collision never counts as a match."""

    def __init__(self, grams: np.ndarray, n: int):
        self.n = n
        grams = np.unique(grams.reshape(-1, n), axis=0) if len(grams) else grams.reshape(0, n)
        hashes, _ = window_hashes(grams.reshape(-1), n) if len(grams) else (np.empty(0, np.uint64), None)
        if len(grams):
            hashes = hashes[:: n]  # windows starting at each gram's first word
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
        h = h[starts]
        pos = np.searchsorted(self.hashes, h)
        pos[pos == len(self.hashes)] = 0
        hit = self.hashes[pos] == h
        starts, pos = starts[hit], pos[hit]
        if starts.size:  # verify word by word
            same = np.all(windows(ids, self.n)[starts] == self.grams[pos], axis=1)
            starts, pos = starts[same], pos[same]
        return starts, pos
