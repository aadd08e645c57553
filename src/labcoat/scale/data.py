"""Checking what a scaling fit is given: positive, finite, equally long columns."""

from __future__ import annotations

from typing import Any

import numpy as np

from labcoat._validation import article, fail
from labcoat.errors import InputError


def as_positive(values: Any, name: str) -> np.ndarray:
    """``values`` as a 1-D float array of finite positive numbers, or a one-line InputError."""
    try:
        arr = np.atleast_1d(np.asarray(values, dtype=float))
    except (TypeError, ValueError):
        raise fail(
            name,
            "a 1-D sequence of numbers",
            f"{article(type(values).__name__)} that is not numbers",
        ) from None
    if arr.ndim != 1:
        raise fail(name, "a 1-D sequence of numbers", f"a {arr.ndim}-D array of shape {arr.shape}")
    bad = np.flatnonzero(~np.isfinite(arr) | (arr <= 0))
    if bad.size:
        i = int(bad[0])
        raise InputError(
            f"`{name}` must be finite positive values, as scaling laws need; got "
            f"{float(arr[i])!r} at entry {i} ({bad.size} bad entr"
            f"{'y' if bad.size == 1 else 'ies'}). Drop those runs first."
        )
    return arr


def as_points(N: Any, D: Any, form: Any) -> np.ndarray:
    """The form's input variables stacked as (k, n): (N, D), or x alone when ``D`` is None."""
    names = form.variables
    if D is None:
        if len(names) != 1:
            raise fail("D", f"given for form {form.name!r}, which predicts from N and D", None)
        return as_positive(N, names[0])[None]
    if len(names) != 2:
        raise fail(
            "D", f"None for form {form.name!r}, which takes one variable", article(type(D).__name__)
        )
    n, d = as_positive(N, "N"), as_positive(D, "D")
    if n.size != d.size:
        if n.size == 1 or d.size == 1:
            n, d = np.broadcast_arrays(n, d)
        else:
            raise fail(
                "D",
                f"as long as `N` ({n.size} runs)",
                d.size,
                hint="A single value stands for every run.",
            )
    return np.vstack([n, d])


def as_losses(L: Any, runs: int) -> np.ndarray:
    """``L`` as one finite positive loss per run, or a one-line InputError."""
    loss = as_positive(L, "L")
    if loss.size != runs:
        raise fail("L", f"one loss per run ({runs} runs)", loss.size)
    return loss


def training_data(N: Any, D: Any, L: Any, form: Any) -> tuple[np.ndarray, np.ndarray]:
    """Inputs (k, n) and losses (n,) for a fit, with at least one more point than parameters."""
    x = as_points(N, D, form)
    loss = as_losses(L, x.shape[1])
    for name, values in zip(form.variables, x):
        if loss.size > 1 and np.unique(values).size < 2:
            raise InputError(
                f"`{name}`: all {loss.size} runs are at one size ({values[0]:.4g}); a law in "
                f"{name} needs runs at 2 or more sizes (5 or more to extrapolate)"
            )
    needed = len(form.names) + 1
    if loss.size < needed:
        raise fail(
            "L",
            f"the losses of at least {needed} runs to determine {len(form.names)} parameters "
            f"({', '.join(form.names)})",
            loss.size,
            hint="Intervals need several times that.",
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

    def column(name: str) -> np.ndarray:  # positive, named by file, column and row (from 1)
        values = table.scores(name)
        bad = np.flatnonzero(values <= 0)
        if bad.size:
            raise InputError(
                f"{file}: column {name!r} row {int(bad[0]) + 1} is {values[bad[0]]:g}; scaling "
                f"laws need positive values ({bad.size} such row(s)); drop those runs first"
            )
        return values

    loss = column(loss_col)
    if x_col is not None and form != "curve":
        raise InputError(
            f"--x: {x_col!r} is a learning curve's column, which --form {form} does not take; "
            "add --form auto (or curve, m1…m4, broken)"
        )
    if form == "curve":
        if x_col is None:
            raise InputError("--form curve: give --x COL, the column the loss is a curve of")
        return column(x_col), None, loss
    if n_col is None:
        raise InputError(
            "--n: give the model-size column (and --d, or --flops to derive D = FLOPs / 6N)"
        )
    n = column(n_col)
    if d_col is not None and flops_col is not None:
        raise InputError(
            "--d and --flops: give one; D is derived from FLOPs only when there is no D column"
        )
    if d_col is not None:
        return n, column(d_col), loss
    if flops_col is not None:
        flops = column(flops_col)
        return n, flops / (6.0 * n), loss
    raise InputError("--d: give the data column, or --flops COL to derive D = FLOPs / (6 N)")
