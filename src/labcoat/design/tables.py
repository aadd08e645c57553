"""Two-level design tables, from pyDOE: the coded (-1/+1) runs of one replicate.

pyDOE builds the tables (``ff2n``, ``fracfact_opt``/``fracfact``, ``fracfact_by_res``,
``pbdesign``, ``latin_square``); what they can and cannot tell apart is read back off the
table by :mod:`labcoat.design.effects`, never taken from the generator string on trust.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

#: fracfact_opt searches generators exhaustively; this bounds it (the best found is kept)
SEARCH = 4000


@dataclass(frozen=True)
class Table:
    """One replicate's coded runs and how they were built."""

    kind: str  # "full", "fractional", "plackett-burman", "bundle"
    coded: np.ndarray

    @property
    def runs(self) -> int:
        return len(self.coded)


def _pydoe():
    from labcoat.extras import import_module

    return import_module("pydoe", "design", "a design table")


def full(k: int) -> Table:
    return Table("full", _pydoe().ff2n(k).astype(int))


def fractional(factors: Sequence[str], p: int) -> Table:
    """The 2^(k−p) fraction with the best generators pyDOE's search finds (fewest aliases
    among low-order effects)."""
    k = len(factors)
    if p == 0:
        return full(k)
    doe = _pydoe()
    generator, _, _ = doe.fracfact_opt(k, p, max_attempts=SEARCH)
    return Table("fractional", doe.fracfact(generator).astype(int))


def by_resolution(factors: Sequence[str], res: int) -> Table:
    """The smallest 2^(k−p) fraction at resolution ``res`` or better (pyDOE's
    ``fracfact_by_res``); the full factorial when no fraction reaches it."""
    k = len(factors)
    try:
        coded = _pydoe().fracfact_by_res(k, res).astype(int)
    except ValueError:
        return full(k)
    return Table("full" if len(coded) == 2**k else "fractional", coded)


def plackett_burman(k: int) -> Table:
    return Table("plackett-burman", _pydoe().pbdesign(k).astype(int))


def bundle(k: int) -> Table:
    """Every intervention on together against none: the run most teams make, which can judge
    the bundle and nothing inside it."""
    return Table("bundle", np.array([[-1] * k, [1] * k]))


def latin_orders(n_orders: int) -> np.ndarray:
    """An ``n_orders`` × ``n_orders`` Latin square (rows: replicates, columns: run groups)."""
    return _pydoe().latin_square(n_orders).astype(int)


def candidates(factors: Sequence[str]) -> list[Table]:
    """Every table a budget may choose from: the full factorial, each fraction with at least
    k + 1 runs (so main effects can be estimated), and a Plackett–Burman screen where its size is
    not a power of two."""
    k = len(factors)
    out = [full(k)]
    for p in range(1, k):
        if 2 ** (k - p) < k + 1:
            break
        out.append(fractional(factors, p))
    pb = plackett_burman(k)
    if pb.runs & (pb.runs - 1):
        out.append(pb)
    return out


__all__ = ["Table", "bundle", "by_resolution", "candidates", "fractional", "full"]
