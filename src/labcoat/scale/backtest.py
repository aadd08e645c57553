"""Backtests: fit the smaller runs, predict the larger ones, and score the predictions.

A fit that describes its own runs can still fail to extrapolate; the only direct evidence is
to hold out the largest runs, predict them from the rest, and count how far off the
predictions are and how often the intervals hold them.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Mapping

import numpy as np

from labcoat._jsonable import jsonable
from labcoat._validation import PROBABILITY, Interval, Seed, fail, renamed, validate_params
from labcoat.errors import InputError
from labcoat.findings import Finding
from labcoat.result import Result
from labcoat.scale.calibrate import ExtrapolationWarning, error_by_distance, point_means
from labcoat.scale.data import as_losses, as_points
from labcoat.scale.forms import resolve_form
from labcoat.scale.result import ScalingFit
from labcoat.scale.score import interval_score

HOLDOUTS = ("n", "compute")


@dataclass
class BacktestResult(Result):
    """Each held-out run's prediction and error; overall ``mape``, ``rmse`` of log loss,
    interval ``coverage`` at the nominal ``level``, the ``median_width`` of the intervals and
    the error against extrapolation distance; ``findings`` are the diagnostics of the fit on
    the smaller runs."""

    KIND = "scale.backtest"

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
    interval: str = "calibrated"
    rmse: float = float("nan")  # root mean square error of log loss
    median_width: float = float("nan")  # median (high − low) / predicted loss, held-out runs
    error_by_distance: list[dict[str, float]] = field(default_factory=list)
    calibration: dict[str, Any] | None = None
    #: mean interval score (Gneiting & Raftery 2007) over the held-out points, divided by the
    #: observed value (:func:`labcoat.scale.score.interval_score`): width plus 2/α × misses
    interval_score: float = float("nan")
    #: "runs", or "seed means" when held-out sizes have several runs (scored as their mean)
    scored: str = "runs"

    def to_dict(self) -> dict[str, Any]:
        return jsonable(
            {
                "holdout": self.holdout,
                "n_fit": self.n_fit,
                "n_holdout": self.n_holdout,
                "level": self.level,
                "interval": self.interval,
                "scored": self.scored,
                "mape": self.mape,
                "rmse": self.rmse,
                "coverage": self.coverage,
                "median_width": self.median_width,
                "interval_score": self.interval_score,
                "error_by_distance": self.error_by_distance,
                "calibration": self.calibration,
                "form": self.fit.form.name,
                "selection": self.fit.selection,
                "points": self.points,
                "fit": {
                    "params": self.fit.params,
                    "warnings": [f.message for f in self.fit.warnings],
                },
                "findings": [f.to_dict() for f in self.findings],
            }
        )

    @property
    def findings(self) -> list[Finding]:
        return list(self.fit.findings)


@renamed(bootstrap="n_resamples")
@validate_params(
    {
        "top": Interval(int, 1, none=True),
        "above": Interval(float, none=True),
        "level": PROBABILITY,
        "n_resamples": (Interval(int, 0), "It counts resamples (e.g. 200)."),
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
    interval: str = "calibrated",
    n_resamples: int = 200,
    seed: int = 0,
    p0: Mapping[str, Any] | None = None,
    by: Any = None,
    **fit_options: Any,
) -> BacktestResult | BacktestSet:
    """Fit on the smaller runs and predict the held-out larger ones.

    ``holdout``: ``"n"`` (by model size, or by x for one-variable forms), ``"compute"`` (by
    6·N·D) or a boolean mask of the runs to hold out. With a key, hold out the ``top`` largest
    runs (ties at the cut go with them) or every run with key above ``above``.
    ``interval``: ``"calibrated"`` (from the fitted runs' own rolling-origin backtests) or
    ``"bootstrap"``. ``by``: one label per run (a task, a model); each group is backtested on
    its own and a :class:`BacktestSet` returns one result per group.
    """
    from labcoat.scale.api import fit as fit_law

    if by is not None:
        return _by_group(
            N,
            D,
            L,
            by,
            holdout=holdout,
            top=top,
            above=above,
            form=form,
            level=level,
            interval=interval,
            n_resamples=n_resamples,
            seed=seed,
            p0=p0,
            **fit_options,
        )
    if interval not in ("calibrated", "bootstrap"):
        raise fail("interval", "'calibrated' or 'bootstrap'", interval)
    chosen = resolve_form("m1" if form == "auto" else form, p0, 1 if D is None else 2)
    x = as_points(N, D, chosen)
    loss = as_losses(L, x.shape[1])
    mask, described = _holdout_mask(holdout, top, above, x, chosen)
    if mask.any() and (top is not None or not mask.all()):  # a top that ties may take them all
        _check_fitted(x, mask, holdout, top, described)
    if not mask.any() or mask.all():
        raise InputError(
            f"holdout: {described} holds out {int(mask.sum())} of {mask.size} runs; "
            "at least one run must be held out and the rest fitted"
        )
    fitted = fit_law(
        *_split(x, ~mask, chosen),
        loss[~mask],
        form=form,
        n_resamples=n_resamples,
        seed=seed,
        p0=p0,
        ledger=fit_options.pop("ledger", False),
        **fit_options,
    )
    # seeds at one held-out size are one measurement: scored as their (geometric) mean
    held, log_mean, seeds = point_means(x[:, mask], loss[mask])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        prediction = fitted.predict(
            *_split(held, np.ones(held.shape[1], bool), chosen), level=level, interval=interval
        )
    replicated = bool((seeds > 1).any())
    scored_band = prediction.interval
    if replicated and prediction.mean_interval is not None:
        scored_band = prediction.mean_interval
    observed = np.exp(log_mean)
    error = prediction.loss - observed
    covered = score = None
    if scored_band is not None:
        covered = (observed >= scored_band[0]) & (observed <= scored_band[1])
        score = interval_score(scored_band[0], scored_band[1], observed, level)
    log_error = log_mean - np.log(prediction.loss)
    width = (
        float("nan")
        if scored_band is None
        else float(np.median((scored_band[1] - scored_band[0]) / prediction.loss))
    )
    points = []
    for i, row in enumerate(prediction.rows()):
        row.update(
            observed=float(observed[i]),
            seeds=int(seeds[i]),
            error=float(error[i]),
            percent_error=float(100 * error[i] / observed[i]),
            covered=None if covered is None else bool(covered[i]),
            interval_score=None if score is None else float(score[i]),
        )
        points.append(row)
    key = (
        0
        if described.startswith("mask")
        else (6 * held[0] * held[1] if "compute" in described else held[0])
    )
    order = np.argsort(np.broadcast_to(key, seeds.shape), kind="stable")
    return BacktestResult(
        holdout=described,
        points=[points[i] for i in order],  # smallest held-out run first
        mape=float(100 * np.mean(np.abs(error) / observed)),
        coverage=float("nan") if covered is None else float(np.mean(covered)),
        level=level,
        n_fit=int((~mask).sum()),
        n_holdout=int(mask.sum()),
        fit=fitted,
        interval=interval,
        rmse=float(np.sqrt(np.mean(log_error**2))),
        median_width=width,
        error_by_distance=error_by_distance(prediction.distance, log_error, bins=3),
        calibration=prediction.calibration,
        interval_score=float("nan") if score is None else float(np.mean(score)),
        scored="seed means" if replicated else "runs",
    )


@dataclass
class BacktestSet(Result):
    """One backtest per group (``by=``): each group's result, and the pooled figures."""

    KIND = "scale.backtest_set"

    engine: ClassVar[str] = "scale"
    view: ClassVar[str | None] = "labcoat.scale.view:backtest_set_view"
    section: ClassVar[str | None] = "labcoat.report.sections.scale:backtest_set_section"
    title: ClassVar[str] = "scaling backtests by group"

    results: dict[str, BacktestResult]
    failures: dict[str, str]  # groups that could not be backtested, and why
    level: float
    interval: str

    @property
    def findings(self):
        return [f for r in self.results.values() for f in r.fit.findings]

    @property
    def coverage(self) -> float:
        """Share of all held-out runs, over every group, inside their intervals."""
        hits = [p["covered"] for r in self.results.values() for p in r.points]
        hits = [h for h in hits if h is not None]
        return float(np.mean(hits)) if hits else float("nan")

    @property
    def median_width(self) -> float:
        widths = [r.median_width for r in self.results.values()]
        return float(np.nanmedian(widths)) if widths else float("nan")

    @property
    def interval_score(self) -> float:
        """Mean interval score (relative to the observed value) over every held-out point."""
        values = [p["interval_score"] for r in self.results.values() for p in r.points]
        values = [v for v in values if v is not None]
        return float(np.mean(values)) if values else float("nan")

    @property
    def mape(self) -> float:
        """Mean absolute percentage error over every held-out point of every group."""
        values = [abs(p["percent_error"]) for r in self.results.values() for p in r.points]
        return float(np.mean(values)) if values else float("nan")

    @property
    def median_rmse(self) -> float:
        values = [r.rmse for r in self.results.values()]
        return float(np.median(values)) if values else float("nan")

    def to_dict(self) -> dict[str, Any]:
        return jsonable(
            {
                "level": self.level,
                "interval": self.interval,
                "groups": len(self.results),
                "coverage": self.coverage,
                "median_width": self.median_width,
                "interval_score": self.interval_score,
                "mape": self.mape,
                "median_rmse": self.median_rmse,
                "results": {k: r.to_dict() for k, r in self.results.items()},
                "failures": self.failures,
                "findings": [f.to_dict() for f in self.findings],
            }
        )


def _by_group(N, D, L, by, *, holdout, **options) -> BacktestSet:
    labels = np.asarray(by).astype(str)
    n = np.atleast_1d(np.asarray(N)).shape[0]
    if labels.ndim != 1 or labels.size != n:
        raise fail("by", f"one label per run ({n} runs)", f"{labels.size} labels")
    mask = None if isinstance(holdout, str) else np.asarray(holdout)
    if mask is not None and mask.shape != (n,):
        raise fail("holdout", f"a boolean mask of {n} runs", f"shape {mask.shape}")
    results: dict[str, BacktestResult] = {}
    failures: dict[str, str] = {}
    for label in dict.fromkeys(labels):  # first-seen order
        rows = labels == label
        pick = lambda v: None if v is None else np.asarray(v)[rows]
        try:
            results[label] = backtest(
                pick(N),
                pick(D),
                pick(L),
                holdout=holdout if mask is None else mask[rows],
                **options,
            )
        except InputError as exc:
            failures[label] = str(exc)
    return BacktestSet(results, failures, options["level"], options["interval"])


def _split(x: np.ndarray, rows: np.ndarray, form) -> tuple[np.ndarray, np.ndarray | None]:
    return (x[0][rows], x[1][rows]) if len(form.variables) == 2 else (x[0][rows], None)


def _check_fitted(x: np.ndarray, mask: np.ndarray, holdout, top, described: str) -> None:
    """The runs left to fit must stand at 2 or more sizes of each variable, else one line that
    names what held too many out (``top`` and the most it can be, where ``top`` chose them),
    not the variable the refit would blame."""

    def usable(rest: np.ndarray) -> bool:
        return all(np.unique(v[rest]).size >= 2 for v in x)

    if usable(~mask):
        return
    n, kept = mask.size, int((~mask).sum())
    key = x[0] if holdout == "n" or x.shape[0] == 1 else 6.0 * x[0] * x[1]
    one = np.unique(key[~mask]).size == 1
    left = f"leaving {kept} to fit" + (f", all at one size ({key[~mask][0]:.4g})" if one else "")
    if isinstance(holdout, str) and top is not None:
        low, high = 0, int(top)  # the largest top below it that leaves a fit, by bisection
        while high - low > 1:
            mid = (low + high) // 2
            low, high = (mid, high) if usable(key < np.sort(key)[-mid]) else (low, mid)
        cut = described.split(" (top", 1)[0]
        fix = f"hold out at most {low}" if low else "a backtest needs runs at 3 or more sizes"
        raise InputError(
            f"`top`: {top} holds out {n - kept} of {n} runs ({cut}, ties included), {left}; "
            f"a fit needs runs at 2 or more sizes: {fix}"
        )
    raise InputError(
        f"holdout: {described} holds out {n - kept} of {n} runs, {left}; a fit needs runs at 2 "
        "or more sizes"
    )


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
