"""Effects of a two-level design as contrast columns, and what the runs can tell apart.

An effect is a set of factors: ``("lr",)`` is a main effect, ``("lr", "warmup")`` their
interaction. Its contrast on a run is the product of the factors' coded levels (-1/+1). Two
effects whose contrasts are equal up to sign over the runs are *aliased*: no analysis of those
runs can separate them. Contrasts that correlate without being equal (Plackett–Burman screens,
runs that went missing) are *partially* aliased. Everything here is read off the runs actually
given, so a design whose runs were dropped is judged as run, not as planned.
"""

from __future__ import annotations

import itertools
from typing import Iterable, Sequence

import numpy as np

Effect = tuple[str, ...]
#: correlation above which two contrasts count as one (equal up to sign)
ALIASED = 1 - 1e-9
#: correlation below which two contrasts count as orthogonal
ORTHOGONAL = 1e-9


def name(effect: Effect) -> str:
    """``"lr"`` for a main effect, ``"lr:warmup"`` for an interaction (patsy's spelling)."""
    return ":".join(effect) if effect else "intercept"


def parse(text: str, factors: Sequence[str]) -> Effect:
    """The effect named ``text`` (``"lr"``, ``"lr:warmup"``, ``"lr*warmup"``), in factor order."""
    from labcoat.errors import InputError

    parts = [p.strip() for p in text.replace("*", ":").replace("×", ":").split(":")]
    unknown = [p for p in parts if p not in factors]
    if unknown or not parts or len(set(parts)) != len(parts):
        raise InputError(
            f"effect {text!r}: expected factor names joined by ':' (factors: "
            f"{', '.join(factors)}); got {', '.join(unknown) or 'a repeated factor'}"
        )
    return tuple(f for f in factors if f in parts)


def words(factors: Sequence[str], max_order: int) -> list[Effect]:
    """Every effect up to ``max_order`` factors, main effects first."""
    return [
        combo
        for order in range(1, min(max_order, len(factors)) + 1)
        for combo in itertools.combinations(factors, order)
    ]


def contrasts(coded: np.ndarray, factors: Sequence[str], effects: Iterable[Effect]) -> np.ndarray:
    """Columns (runs × effects) of the effects' contrasts on the coded (-1/+1) runs."""
    index = {f: i for i, f in enumerate(factors)}
    cols = [np.prod(coded[:, [index[f] for f in e]], axis=1) for e in effects]
    return np.column_stack(cols) if cols else np.empty((len(coded), 0))


def correlations(columns: np.ndarray) -> np.ndarray:
    """|cosine| between contrast columns (they are centred in a balanced design; in an
    unbalanced one the intercept is projected out first, as OLS does)."""
    centred = columns - columns.mean(axis=0, keepdims=True)
    norms = np.linalg.norm(centred, axis=0)
    safe = np.where(norms > 0, norms, 1.0)
    unit = centred / safe
    out = np.abs(unit.T @ unit)
    dead = norms <= 0  # a contrast constant over the runs is aliased with the intercept
    out[dead, :] = 0.0
    out[:, dead] = 0.0
    return out


def constant(columns: np.ndarray) -> np.ndarray:
    """Which contrasts do not vary over the runs (aliased with the intercept)."""
    return np.ptp(columns, axis=0) == 0 if len(columns) else np.ones(columns.shape[1], bool)


def alias_sets(
    coded: np.ndarray, factors: Sequence[str], max_order: int
) -> tuple[dict[Effect, list[Effect]], dict[Effect, list[tuple[Effect, float]]]]:
    """For every effect up to ``max_order``: the effects it is aliased with (equal contrast up to
    sign, the intercept written as ``()``) and those it is partially aliased with, with their
    correlation."""
    effects = words(factors, max_order)
    cols = contrasts(coded, factors, effects)
    corr = correlations(cols)
    dead = constant(cols)
    full: dict[Effect, list[Effect]] = {}
    partial: dict[Effect, list[tuple[Effect, float]]] = {}
    for i, e in enumerate(effects):
        if dead[i]:
            full[e] = [()] + [effects[j] for j in np.flatnonzero(dead) if j != i]
            partial[e] = []
            continue
        same = np.flatnonzero(corr[i] > ALIASED)
        some = np.flatnonzero((corr[i] > ORTHOGONAL) & (corr[i] <= ALIASED))
        full[e] = [effects[j] for j in same if j != i]
        partial[e] = [(effects[j], float(corr[i, j])) for j in some]
    return full, partial


def resolution(coded: np.ndarray, factors: Sequence[str]) -> int | None:
    """The design's resolution: the fewest factors in two effects that cannot be told apart
    (an effect aliased with the intercept counts its own), or None when nothing is aliased (a
    full factorial). Partial aliasing counts, so a Plackett–Burman screen is resolution III."""
    k = len(factors)
    effects = words(factors, k if k <= 10 else 4)
    cols = contrasts(coded, factors, effects)
    dead = constant(cols)
    corr = correlations(cols)
    best: int | None = None
    for i, e in enumerate(effects):
        if dead[i]:
            best = len(e) if best is None else min(best, len(e))
    rows, cols_ = np.nonzero(np.triu(corr > ORTHOGONAL, k=1))
    for i, j in zip(rows, cols_):
        size = len(effects[i]) + len(effects[j])
        best = size if best is None else min(best, size)
    return best


def roman(value: int | None) -> str:
    if value is None:
        return "full"
    return {1: "I", 2: "II", 3: "III", 4: "IV", 5: "V", 6: "VI", 7: "VII", 8: "VIII"}.get(
        value, str(value)
    )


def describe(effect: Effect) -> str:
    """ "the lr main effect", "the lr × warmup interaction", "the mean" (for the intercept)."""
    if not effect:
        return "the mean"
    if len(effect) == 1:
        return f"the {effect[0]} main effect"
    return f"the {' × '.join(effect)} interaction"


def statement(effect: Effect, aliases: Sequence[Effect]) -> str:
    """One sentence naming what ``effect`` cannot be told apart from."""
    if not aliases:
        return f"{describe(effect)} is estimable on its own"
    others = [describe(a) for a in aliases]
    joined = others[0] if len(others) == 1 else ", ".join(others[:-1]) + " and " + others[-1]
    return f"{describe(effect)} is aliased with {joined}"


__all__ = [
    "Effect",
    "alias_sets",
    "contrasts",
    "describe",
    "name",
    "parse",
    "resolution",
    "statement",
    "words",
]
