"""Checking what a scaling fit is given: positive, finite, equally long columns."""

from __future__ import annotations

from typing import Any

import numpy as np

from labcoat.errors import InputError


def as_positive(values: Any, name: str) -> np.ndarray:
    """``values`` as a 1-D float array of finite positive numbers, or a one-line InputError."""
    try:
        arr = np.atleast_1d(np.asarray(values, dtype=float))
    except (TypeError, ValueError):
        raise InputError(f"{name}: expected numbers; got {type(values).__name__}") from None
    if arr.ndim != 1:
        raise InputError(f"{name}: expected a 1-D sequence of numbers; got shape {arr.shape}")
    bad = np.flatnonzero(~np.isfinite(arr) | (arr <= 0))
    if bad.size:
        i = int(bad[0])
        raise InputError(
            f"{name}: entry {i} is {float(arr[i])!r}; scaling laws need finite positive values "
            f"({bad.size} bad entr{'y' if bad.size == 1 else 'ies'}); drop those runs first"
        )
    return arr


def as_points(N: Any, D: Any, form: Any) -> np.ndarray:
    """The form's input variables stacked as (k, n): (N, D), or x alone when ``D`` is None."""
    names = form.variables
    if D is None:
        if len(names) != 1:
            raise InputError(f"D: form {form.name!r} predicts from N and D; got N only")
        return as_positive(N, names[0])[None]
    if len(names) != 2:
        raise InputError(f"D: form {form.name!r} takes one variable; pass D=None")
    n, d = as_positive(N, "N"), as_positive(D, "D")
    if n.size != d.size:
        if n.size == 1 or d.size == 1:
            n, d = np.broadcast_arrays(n, d)
        else:
            raise InputError(f"N and D: expected equally long sequences; got {n.size} and {d.size}")
    return np.vstack([n, d])


def training_data(N: Any, D: Any, L: Any, form: Any) -> tuple[np.ndarray, np.ndarray]:
    """Inputs (k, n) and losses (n,) for a fit, with at least one more point than parameters."""
    x = as_points(N, D, form)
    loss = as_positive(L, "L")
    if loss.size != x.shape[1]:
        raise InputError(f"L: expected one loss per run ({x.shape[1]}); got {loss.size}")
    needed = len(form.names) + 1
    if loss.size < needed:
        raise InputError(
            f"L: {loss.size} runs cannot determine {len(form.names)} parameters "
            f"({', '.join(form.names)}); need at least {needed}, and several times that "
            "for intervals"
        )
    return x, loss


def read_runs(
    file: str,
    n_col: str | None,
    d_col: str | None,
    flops_col: str | None,
    x_col: str | None,
    loss_col: str,
    form: str,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """(N or x, D or None, L) from a table of runs (CSV, TSV, JSONL, JSON, Parquet), per the
    form's variables; D is FLOPs / 6N when only a FLOPs column is named. The messages name the
    ``labcoat scale`` options that choose the columns."""
    from labcoat.stats.readers import read_table

    table = read_table(file)
    loss = table.scores(loss_col)
    if form == "curve":
        if x_col is None:
            raise InputError("--form curve: give --x COL, the column the loss is a curve of")
        return table.scores(x_col), None, loss
    if n_col is None:
        raise InputError(
            "--n: give the model-size column (and --d, or --flops to derive D = FLOPs / 6N)"
        )
    n = table.scores(n_col)
    if d_col is not None and flops_col is not None:
        raise InputError(
            "--d and --flops: give one; D is derived from FLOPs only when there is no D column"
        )
    if d_col is not None:
        return n, table.scores(d_col), loss
    if flops_col is not None:
        flops = table.scores(flops_col)
        if (n <= 0).any():
            raise InputError(
                f"{file}: column {n_col!r} has a value <= 0; model sizes must be positive"
            )
        return n, flops / (6.0 * n), loss
    raise InputError("--d: give the data column, or --flops COL to derive D = FLOPs / (6 N)")
