"""Backtests: fit the smaller runs, predict the larger ones, and score the predictions.

A fit that describes its own runs can still fail to extrapolate; the only direct evidence is
to hold out the largest runs, predict them from the rest, and count how far off the
predictions are and how often the intervals hold them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from labcoat._jsonable import jsonable
from labcoat._validation import PROBABILITY, Interval, Seed, fail, validate_params
from labcoat.errors import InputError
from labcoat.findings import Finding
from labcoat.result import Result
from labcoat.scale.data import as_losses, as_points
from labcoat.scale.forms import resolve_form
from labcoat.scale.result import ScalingFit

HOLDOUTS = ("n", "compute")


@dataclass
class BacktestResult(Result):
    """Each held-out run's prediction and error; overall ``mape`` and interval ``coverage``;
    ``findings`` are the diagnostics of the fit on the smaller runs."""

    engine = "scale"
    view = "labcoat.scale.view:backtest_view"
    section = "labcoat.report.sections.scale:scale_section"
    title = "Backtest"

    holdout: str
    points: list[dict[str, Any]]
    mape: float  # mean absolute percentage error of the predicted loss
    coverage: float  # share of held-out runs inside their prediction interval
    level: float
    n_fit: int
    n_holdout: int
    fit: ScalingFit = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        return jsonable(
            {
                "holdout": self.holdout,
                "n_fit": self.n_fit,
                "n_holdout": self.n_holdout,
                "level": self.level,
                "mape": self.mape,
                "coverage": self.coverage,
                "points": self.points,
                "fit": {
                    "params": self.fit.params,
                    "warnings": [f.message for f in self.fit.warnings],
                },
            }
        )

    @property
    def findings(self) -> list[Finding]:
        return list(self.fit.findings)


@validate_params(
    {
        "top": Interval(int, 1, none=True),
        "above": Interval(float, none=True),
        "level": PROBABILITY,
        "bootstrap": (Interval(int, 0), "It counts resamples (e.g. 200)."),
        "seed": Seed(),
    }
)
def backtest(
    N: Any,
    D: Any,
    L: Any,
    *,
    holdout: str | Any = "n",
    top: int | None = None,
    above: float | None = None,
    form: str | Callable[..., Any] = "chinchilla",
    level: float = 0.95,
    bootstrap: int = 200,
    seed: int = 0,
    p0: Mapping[str, Any] | None = None,
    **fit_options: Any,
) -> BacktestResult:
    """Fit on the smaller runs and predict the held-out larger ones.

    ``holdout``: ``"n"`` (by model size, or by x for one-variable forms), ``"compute"`` (by
    6·N·D) or a boolean mask of the runs to hold out. With a key, hold out the ``top`` largest
    runs (ties at the cut go with them) or every run with key above ``above``.
    """
    from labcoat.scale.api import fit as fit_law

    chosen = resolve_form(form, p0, 1 if D is None else 2)
    x = as_points(N, D, chosen)
    loss = as_losses(L, x.shape[1])
    mask, described = _holdout_mask(holdout, top, above, x, chosen)
    if not mask.any() or mask.all():
        raise InputError(
            f"holdout: {described} holds out {int(mask.sum())} of {mask.size} runs; "
            "at least one run must be held out and the rest fitted"
        )
    fitted = fit_law(
        *_split(x, ~mask, chosen),
        loss[~mask],
        form=form,
        bootstrap=bootstrap,
        seed=seed,
        p0=p0,
        ledger=fit_options.pop("ledger", False),
        **fit_options,
    )
    prediction = fitted.predict(*_split(x, mask, chosen), level=level)
    observed = loss[mask]
    error = prediction.loss - observed
    covered = prediction.covers(observed) if prediction.interval is not None else None
    points = []
    for i, row in enumerate(prediction.rows()):
        row.update(
            observed=float(observed[i]),
            error=float(error[i]),
            percent_error=float(100 * error[i] / observed[i]),
            covered=None if covered is None else bool(covered[i]),
        )
        points.append(row)
    key = (
        0 if described.startswith("mask") else (6 * x[0] * x[1] if "compute" in described else x[0])
    )
    order = np.argsort(np.broadcast_to(key, mask.shape)[mask], kind="stable")
    return BacktestResult(
        holdout=described,
        points=[points[i] for i in order],  # smallest held-out run first
        mape=float(100 * np.mean(np.abs(error) / observed)),
        coverage=float("nan") if covered is None else float(np.mean(covered)),
        level=level,
        n_fit=int((~mask).sum()),
        n_holdout=int(mask.sum()),
        fit=fitted,
    )


def _split(x: np.ndarray, rows: np.ndarray, form) -> tuple[np.ndarray, np.ndarray | None]:
    return (x[0][rows], x[1][rows]) if len(form.variables) == 2 else (x[0][rows], None)


def _holdout_mask(holdout, top, above, x, form) -> tuple[np.ndarray, str]:
    if not isinstance(holdout, str):
        mask = np.asarray(holdout)
        if mask.dtype != bool or mask.shape != (x.shape[1],):
            raise fail(
                "holdout",
                f"'n', 'compute' or a boolean mask of {x.shape[1]} runs",
                f"a {mask.dtype} array of shape {mask.shape}",
            )
        if top is not None or above is not None:
            raise InputError(
                "holdout: top= and above= choose runs by a key; a mask already chose them"
            )
        return mask, f"mask of {int(mask.sum())} runs"
    if holdout not in HOLDOUTS:
        raise fail("holdout", f"one of {', '.join(map(repr, HOLDOUTS))} or a boolean mask", holdout)
    if holdout == "compute":
        if x.shape[0] != 2:
            raise InputError(
                "holdout: 'compute' needs N and D (C = 6·N·D); use 'n' for one variable"
            )
        key, name = 6 * x[0] * x[1], "compute"
    else:
        key, name = x[0], form.variables[0]
    if (top is None) == (above is None):
        raise InputError(
            "holdout: give exactly one of top= (the K largest runs) or above= (a threshold)"
        )
    if top is not None:
        if not (isinstance(top, (int, np.integer)) and 0 < top < key.size):
            raise fail("top", f"an int between 1 and {key.size - 1} (a number of runs)", top)
        cut = np.sort(key)[-int(top)]
        return key >= cut, f"{name} >= {cut:.4g} (top {int(top)} by {name})"
    return key > float(above), f"{name} > {float(above):.4g}"
