"""Prediction intervals for extrapolation, calibrated by the fit's own rolling-origin backtests.

A bootstrap interval measures the scatter of the fitted runs, not the error of extrapolating
past them. Here the same form is refitted on the runs up to a scale (an *origin*), predicts
every larger run, and each error ``log L_observed − log L_predicted`` is recorded against the
distance extrapolated, ``d = max_j log(x_j / max fitted x_j)`` (for two variables also the
compute ``N·D``). Origins run from half the log range of the runs to nine tenths of it; with
two variables they step by model size and by compute, and an origin needs 3 distinct values of
each (the two-variable rules, ``TWO_VARIABLE_*``, are tuned on the over-training grid by
``bench/scale_two_variable.py``). The fit's own residuals stand at ``d = 0``.

The interval's ends are two lines in ``d``, ``upper(d) = a₊ + b₊·d`` and ``lower(d) = a₋ − b₋·d``
(``b ≥ 0``: the interval widens with distance, and it always holds the point prediction),
fitted by linear quantile regression at the level's two tails. Its own coverage is measured
leave-one-origin-out: the band refitted without an origin's errors, scored on them.

When the runs are too few for that (fewer than :data:`MIN_ORIGINS` origins with enough runs),
the slopes come from a prior fitted on public scaling data (``prior_table.py``, made by
``bench/scale_prior.py``) and the intercepts from the fit's residuals.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats
from scipy.optimize import linprog

from labcoat._jsonable import jsonable

N_ORIGINS = 8
FIRST_ORIGIN, LAST_ORIGIN = 0.5, 0.9  # shares of the runs' log range fitted at the origins
MIN_ORIGINS = 3
MIN_PAIRS = 10
EXTRA_POINTS = 2  # an origin needs this many runs beyond the number of parameters


class ExtrapolationWarning(UserWarning):
    """A prediction lies farther from the fitted runs than any distance the calibration saw."""


@dataclass
class Pairs:
    """Rolling-origin backtest errors of one form on one set of runs."""

    distances: np.ndarray  # log distance extrapolated, per (origin, target)
    errors: np.ndarray  # log observed − log predicted
    origins: np.ndarray  # origin index per pair
    n_origins: int
    #: the full fit's residuals (d = 0), of each size's mean over seeds, smallest size first
    residuals: np.ndarray
    #: per origin, how far (log) its refit's floor sat above the mean of the largest later
    #: size's runs, and that size's standard error (log): the evidence a floor is too high
    floor_gaps: np.ndarray = field(default_factory=lambda: np.empty((0, 2)))
    #: pooled spread (SD of log loss) of the seeds at one size, and its degrees of freedom
    seed_sd: float = 0.0
    seed_df: int = 0
    #: how many variables the law has: 1 (a learning curve) or 2 (N and D)
    variables: int = 1

    @property
    def rmse(self) -> float:
        """Root mean square of the backtest errors (inf when there are none)."""
        return float(np.sqrt(np.mean(self.errors**2))) if self.errors.size else float("inf")

    @property
    def late_rmse(self) -> float:
        """Root mean square of the errors from the later half of the origins: the refits that
        saw most of the runs, the closest analogue of the full fit extrapolating."""
        late = self.origins >= self.n_origins // 2
        if not late.any():
            return self.rmse
        return float(np.sqrt(np.mean(self.errors[late] ** 2)))


@dataclass
class Calibration:
    """The band ``[lower(d), upper(d)]`` of log errors at a level, with how it was made."""

    level: float
    method: str  # "backtest" (the user's own runs) or "prior"
    upper: tuple[float, float]  # (a₊, b₊): upper(d) = a₊ + b₊·d
    lower: tuple[float, float]  # (a₋, b₋): lower(d) = a₋ − b₋·d
    coverage: float | None  # leave-one-origin-out coverage of its own backtest errors
    max_distance: float  # the farthest distance the calibration saw
    n_origins: int
    n_pairs: int
    pairs: Pairs | None = field(default=None, repr=False)
    #: the prior's line (a, b) the band never falls inside: ±(a + b·d)
    floor: tuple[float, float] | None = None
    #: the backtest band is multiplied by this (see :func:`frontier_factor`); 1: not at all
    factor: float = 1.0

    def band(
        self, distance: Any, shifts: Any = (), weights: Any = None, new_run: bool = False
    ) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) log-error offsets at each distance, for the curve (the mean over
        seeds where a size has several); ``shifts`` (form="auto": each indistinguishable
        form's log prediction minus the centre's) with their evidence ``weights`` widen
        it by :func:`widen_for_choice` before the prior's floor applies. ``new_run``: for one
        new run, the seeds' own spread (noise a new run shows again) is added in quadrature."""
        d = np.maximum(np.asarray(distance, dtype=float), 0.0)
        lo, hi = self.lower[0] - self.lower[1] * d, self.upper[0] + self.upper[1] * d
        lo, hi = self.factor * lo, self.factor * hi
        if isinstance(weights, dict):
            weights = list(weights.values())
        lo, hi = widen_for_choice(lo, hi, shifts, weights, self.level)
        if self.floor is not None:
            reach = self.floor[0] + self.floor[1] * d
            lo, hi = np.minimum(lo, -reach), np.maximum(hi, reach)
        if new_run and self.pairs is not None and self.pairs.seed_df > 0:
            q = stats.t.ppf(0.5 + self.level / 2, self.pairs.seed_df) * self.pairs.seed_sd
            lo, hi = -np.sqrt(lo**2 + q**2), np.sqrt(hi**2 + q**2)
        return lo, hi

    def error_by_distance(self, bins: int = 5) -> list[dict[str, float]]:
        """Median and 95th percentile |error| of the backtest pairs, by distance bin."""
        if self.pairs is None or not self.pairs.errors.size:
            return []
        return error_by_distance(self.pairs.distances, self.pairs.errors, bins)

    def to_dict(self) -> dict[str, Any]:
        return jsonable(
            {
                "level": self.level,
                "method": self.method,
                "upper": {"at_0": self.upper[0], "per_log_distance": self.upper[1]},
                "lower": {"at_0": self.lower[0], "per_log_distance": -self.lower[1]},
                "prior_floor": None
                if self.floor is None
                else {"at_0": self.floor[0], "per_log_distance": self.floor[1]},
                "coverage": self.coverage,
                "frontier_factor": self.factor,
                "max_distance": self.max_distance,
                "n_origins": self.n_origins,
                "n_pairs": self.n_pairs,
                "seed_sd": None if self.pairs is None else self.pairs.seed_sd,
                "error_by_distance": self.error_by_distance(),
            }
        )


def error_by_distance(distances, errors, bins: int = 5) -> list[dict[str, float]]:
    distances, errors = np.asarray(distances, float), np.asarray(errors, float)
    if not errors.size:
        return []
    edges = np.unique(np.quantile(distances, np.linspace(0, 1, bins + 1)))
    out = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        inside = (distances >= lo) & (distances <= hi)
        if inside.any():
            e = np.abs(errors[inside])
            out.append(
                {
                    "distance_low": float(lo),
                    "distance_high": float(hi),
                    "n": int(inside.sum()),
                    "median_abs_error": float(np.median(e)),
                    "p95_abs_error": float(np.quantile(e, 0.95)),
                }
            )
    return out


def distance(fitted_x: np.ndarray, new_x: np.ndarray) -> np.ndarray:
    """Log distance of each new point beyond the fitted runs (0 inside their range)."""
    logs = np.log(fitted_x)
    new = np.log(np.asarray(new_x, dtype=float))
    d = (new - logs.max(axis=1, keepdims=True)).max(axis=0)
    if fitted_x.shape[0] == 2:
        d = np.maximum(d, new.sum(axis=0) - logs.sum(axis=0).max())
    return np.maximum(d, 0.0)


def fit_theta(form, x: np.ndarray, loss: np.ndarray, delta: float, warm=None) -> np.ndarray:
    """The form's best parameters on these runs: warm-started from ``warm`` plus a few starts."""
    from labcoat.scale.forms import PowerLawSum
    from labcoat.scale.search import grid_search

    if hasattr(form, "search"):
        return form.search(x, loss, delta, warm=warm).theta
    if isinstance(form, PowerLawSum) and warm is not None:
        return _warm_power_law(form, x, loss, delta, warm)
    return grid_search(form, x, loss, delta).theta


def _warm_power_law(form, x, loss, delta, warm) -> np.ndarray:
    from labcoat.scale.lbfgs import minimize_batch
    from labcoat.scale.search import polish

    grid = form.grid()
    picks = np.random.default_rng(0).choice(len(grid), min(len(grid), 96), replace=False)
    starts = np.vstack([np.asarray(warm, float)[None], grid[picks]])

    def fun(theta, rows):
        return form.value_and_grad(theta, x, loss, delta)

    run = minimize_batch(fun, starts, max_iter=1000)
    best = int(np.nanargmin(np.where(np.isfinite(run.fun), run.fun, np.inf)))
    return polish(form, run.x[best], x, loss, delta).x


def orderings(x: np.ndarray) -> list[np.ndarray]:
    """The keys origins step along: x itself for one variable; N and compute for two."""
    if x.shape[0] == 1:
        return [np.log(x[0])]
    return [np.log(x[0]), np.log(x).sum(axis=0)]


def replicates(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct points (k, m) of the runs and each run's point: seeds at one size are
    replicates of one measurement, not separate evidence about the law."""
    uniq, inverse = np.unique(x, axis=1, return_inverse=True)
    return uniq, np.asarray(inverse).ravel()


def point_means(x: np.ndarray, loss: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(distinct points, mean log loss at each, seeds at each); the runs as given when no two
    share a point."""
    uniq, inverse = replicates(x)
    if uniq.shape[1] == x.shape[1]:
        return x, np.log(loss), np.ones(x.shape[1], dtype=int)
    counts = np.bincount(inverse)
    return uniq, np.bincount(inverse, np.log(loss)) / counts, counts


def seed_spread(x: np.ndarray, loss: np.ndarray) -> tuple[float, int]:
    """Pooled SD of log loss among runs at the same point, and its degrees of freedom."""
    uniq, inverse = replicates(x)
    df = x.shape[1] - uniq.shape[1]
    if df <= 0:
        return 0.0, 0
    logy = np.log(loss)
    means = np.bincount(inverse, logy) / np.bincount(inverse)
    return float(np.sqrt(((logy - means[inverse]) ** 2).sum() / df)), int(df)


def rolling_pairs(
    form,
    x: np.ndarray,
    loss: np.ndarray,
    delta: float,
    theta: np.ndarray,
    *,
    n_origins: int = N_ORIGINS,
) -> Pairs:
    """Errors of the form refitted at each origin and extrapolated to every larger point (the
    mean of its seeds, where a point has several runs)."""
    need = len(form.names) + EXTRA_POINTS
    distances, errors, origin_ids, gaps = [], [], [], []
    seen: set[bytes] = set()
    masks = []
    for key in orderings(x):
        lo, hi = float(key.min()), float(key.max())
        for share in np.linspace(FIRST_ORIGIN, LAST_ORIGIN, n_origins):
            fitted = key <= lo + share * (hi - lo) + 1e-12
            if _distinct(x[:, fitted]) < need or fitted.all() or not _spans(x[:, fitted]):
                continue
            tag = np.packbits(fitted).tobytes()
            if tag not in seen:
                seen.add(tag)
                masks.append(fitted)
    if hasattr(form, "search_many") and masks:  # every origin's refit in one batch
        subs = list(form.search_many(x, loss, delta, np.array(masks), warm=theta))
    else:
        subs = []
        for fitted in masks:
            try:
                subs.append(fit_theta(form, x[:, fitted], loss[fitted], delta, warm=theta))
            except Exception:  # an origin whose fit fails contributes nothing
                subs.append(None)
    k = 0
    for fitted, sub in zip(masks, subs):
        if sub is None or not np.all(np.isfinite(sub)):
            continue
        points, observed, _ = point_means(x[:, ~fitted], loss[~fitted])
        predicted = form.log_predict(sub, points)[0]
        error = observed - predicted
        good = np.isfinite(error)
        if not good.any():
            continue
        if hasattr(form, "log_floor"):
            gaps.append(_floor_gap(form.log_floor(sub)[0], x[:, ~fitted], loss[~fitted]))
        distances.append(distance(x[:, fitted], points)[good])
        errors.append(error[good])
        origin_ids.append(np.full(int(good.sum()), k))
        k += 1
    points, observed, _ = point_means(x, loss)
    residuals = observed - form.log_predict(theta, points)[0]
    residuals = residuals[np.argsort(np.log(points).sum(axis=0), kind="stable")]
    sd, df = seed_spread(x, loss)
    cat = lambda parts, dtype=float: np.concatenate(parts) if parts else np.empty(0, dtype)
    floor_gaps = np.array(gaps, dtype=float).reshape(-1, 2)
    return Pairs(
        cat(distances),
        cat(errors),
        cat(origin_ids, int),
        k,
        residuals,
        floor_gaps,
        sd,
        df,
        int(x.shape[0]),
    )


#: the later runs a floor is compared with: the largest this share of the unfitted log range
FLOOR_TAIL = 0.25


def _floor_gap(log_floor: float, x: np.ndarray, loss: np.ndarray) -> tuple[float, float]:
    """(gap, standard error): how far a law's floor sits above the mean log loss of the
    largest later runs (the last quarter of their log range, at least two runs), and the
    standard error of that mean from the runs' own scatter."""
    key = np.log(x).sum(axis=0)
    top = key >= key.max() - FLOOR_TAIL * (key.max() - key.min())
    if top.sum() < 2:
        top = key >= np.sort(key)[-min(2, key.size)]
    logy = np.log(loss[top])
    se = float(np.std(logy, ddof=1) / np.sqrt(logy.size)) if logy.size > 1 else 0.0
    return float(log_floor - logy.mean()), se


def _spans(x: np.ndarray) -> bool:
    """Whether an origin's runs span enough values of each variable to fit a law of two:
    :data:`TWO_VARIABLE_MIN_LEVELS` distinct model sizes and data sizes (one variable: always)."""
    if x.shape[0] < 2:
        return True
    return min(np.unique(v).size for v in x) >= TWO_VARIABLE_MIN_LEVELS


def _distinct(x: np.ndarray) -> int:
    """How many distinct points the runs are at (seeds at one size count once)."""
    return int(np.unique(x, axis=1).shape[1]) if x.shape[1] else 0


def _quantile_line(d, e, tau: float, sign: int) -> tuple[float, float]:
    """Linear quantile regression ``e ≈ a + s·b·d`` at ``tau`` with ``b ≥ 0`` and ``s·a ≥ 0``."""
    n = d.size
    # variables: a (sign-constrained), b ≥ 0, u ≥ 0, v ≥ 0 with e − a − s·b·d = u − v
    c = np.concatenate([[0.0, 0.0], np.full(n, tau), np.full(n, 1.0 - tau)]) / n
    from scipy import sparse

    eye = sparse.identity(n, format="csr")
    a_eq = sparse.hstack(
        [sparse.csr_matrix(np.column_stack([np.ones(n), sign * d])), eye, -eye], format="csr"
    )
    bounds = [(0, None) if sign > 0 else (None, 0), (0, None)] + [(0, None)] * (2 * n)
    run = linprog(c, A_eq=a_eq, b_eq=e, bounds=bounds, method="highs")
    if not run.success:
        q = np.quantile(e, tau)
        return (max(q, 0.0) if sign > 0 else min(q, 0.0)), 0.0
    return float(run.x[0]), float(run.x[1])


#: "symmetric": one line through the level's quantile of |error| (both tails' data pin it);
#: "split": each tail's own quantile line (follows a bias, but rests on half the data)
BAND = "symmetric"

#: the rules for a law of two variables (N and D), tuned on the over-training grid of Gadre et
#: al. (``bench/scale_two_variable.py``), never on the Chinchilla points (test data).
#: TWO_VARIABLE_BAND: "symmetric" or "split" as :data:`BAND`, or "prior" (the prior's band
#: alone, as when the runs are too few). TWO_VARIABLE_FLOOR, the prior's reach the backtest band
#: never falls inside: "every" (every size's residual quantile plus the prior's slope beyond
#: it), "frontier" (the quantile at the largest :data:`FRONTIER_SHARE` of the runs by compute,
#: plus the prior's slope beyond that) or "none"
TWO_VARIABLE_BAND, TWO_VARIABLE_FLOOR = "split", "every"
#: a rolling origin of a two-variable law needs this many distinct values of each variable
#: (one model size cannot pin the law's N term, however many data sizes it was trained at)
TWO_VARIABLE_MIN_LEVELS = 3


def band(
    d, e, level: float, kind: str | None = None
) -> tuple[tuple[float, float], tuple[float, float]]:
    """The (upper, lower) lines at ``level`` through errors ``e`` at distances ``d``, of
    ``kind`` (default :data:`BAND`)."""
    n = max(d.size, 1)
    if (kind or BAND) == "symmetric":
        # a finite-sample nudge toward the tail, as split-conformal quantiles take
        tau = min(level * (1 + 1 / n), 1 - 0.5 / n)
        a, b = _quantile_line(d, np.abs(e), tau, +1)
        return (a, b), (-a, b)
    tail = (1 - level) / 2
    hi_tau = min(1 - tail + (1 - tail) / n, 1 - 0.5 / n)
    lo_tau = max(tail - tail / n, 0.5 / n)
    a_hi, b_hi = _quantile_line(d, e, hi_tau, +1)
    a_lo, b_lo = _quantile_line(d, e, lo_tau, -1)
    return (a_hi, b_hi), (a_lo, b_lo)


MAX_LP_PAIRS = 1500  # pairs kept for the quantile regression (the rest thinned evenly)


def _thin(d, e, o, limit: int = MAX_LP_PAIRS):
    if d.size <= limit:
        return d, e, o
    keep = np.linspace(0, d.size - 1, limit).round().astype(int)
    return d[keep], e[keep], o[keep]


def calibrate(pairs: Pairs, level: float, form_name: str, use_prior: bool = True) -> Calibration:
    """The band at ``level`` from the backtest pairs, or from the prior when they are too few.

    ``use_prior``: the band never falls inside the prior's reach at the same distance (the
    fit's residual quantile plus the prior's slope per log unit): runs that all behave alike
    can show less extrapolation error than public scaling data does at the same distance."""
    two = pairs.variables == 2
    if (
        pairs.n_origins < MIN_ORIGINS
        or pairs.errors.size < MIN_PAIRS
        or (two and TWO_VARIABLE_BAND == "prior")
    ):
        return prior_calibration(pairs, level, form_name)
    kind = TWO_VARIABLE_BAND if two else BAND
    d = np.concatenate([pairs.distances, np.zeros(pairs.residuals.size)])
    e = np.concatenate([pairs.errors, pairs.residuals])
    o = np.concatenate([pairs.origins, np.full(pairs.residuals.size, -1)])
    d, e, o = _thin(d, e, o)
    upper, lower = band(d, e, level, kind)
    floor = None
    if use_prior and not (two and TWO_VARIABLE_FLOOR == "none"):
        frontier = two and TWO_VARIABLE_FLOOR == "frontier"
        floor = _prior_line(pairs, level, form_name, frontier)
    covered = []
    for k in range(pairs.n_origins):
        held = o == k
        if not held.any() or held.all():
            continue
        up, low = band(d[~held], e[~held], level, kind)
        left_out = Calibration(level, "", up, low, None, 0.0, 0, 0, floor=floor)
        lo, hi = left_out.band(d[held])
        covered.append((e[held] >= lo) & (e[held] <= hi))
    coverage = float(np.mean(np.concatenate(covered))) if covered else None
    return Calibration(
        level=level,
        method="backtest+prior" if use_prior else "backtest",
        upper=upper,
        lower=lower,
        coverage=coverage,
        max_distance=float(pairs.distances.max()),
        n_origins=pairs.n_origins,
        n_pairs=int(pairs.errors.size),
        pairs=pairs,
        floor=floor,
    )


def _prior_line(
    pairs: Pairs, level: float, form_name: str, frontier: bool = False
) -> tuple[float, float]:
    """The prior's reach ``a + b·d``: the fit's residual quantile over every size plus the
    prior's slope beyond it (``"upper"``), or (``frontier``) the quantile at the largest
    :data:`FRONTIER_SHARE` of the sizes plus the slope beyond that (``"frontier"``)."""
    prior = load_prior()
    entry = prior["forms"].get(form_name) or prior["forms"]["default"]
    z = stats.norm.ppf(0.5 + level / 2) / stats.norm.ppf(0.5 + prior["level"] / 2)
    if frontier:
        return frontier_reach(pairs, level), float(z * entry.get("frontier", entry["upper"]))
    return frontier_reach(pairs, level, share=1.0), float(z * entry["upper"])


def load_prior() -> dict[str, Any]:
    """The shipped prior: per form, the slopes of the 95 % band per unit log distance."""
    from labcoat.scale.prior_table import PRIOR

    return PRIOR


def frontier_factor(level: float) -> float:
    """How much wider than its own backtest band an extrapolation's error ran on public curves.

    On ColPret curves held out by scale (``bench/scale_colpret.py``), the error of a fit at the
    held-out points exceeded the band its own rolling-origin backtests gave, by a factor whose
    ``level`` quantile (with the (n + 1) finite-sample correction of split-conformal quantiles)
    ``bench/scale_prior.py`` stores: the frontier of a set of runs is harder to predict than
    the backtests inside it show. Used where no prior floor exists (downstream metrics, whose
    errors are additive, not in log loss); linear between the stored levels, 1 below them."""
    table = load_prior().get("frontier")
    if not table:
        return 1.0
    levels, factors = table["levels"], table["factors"]
    return float(max(np.interp(level, levels, factors, left=1.0, right=factors[-1]), 1.0))


#: the share of the fitted sizes, the largest, whose residuals set the prior band's intercepts
#: (1: every size's); at least :data:`FRONTIER_MIN` sizes
FRONTIER_SHARE, FRONTIER_MIN = 0.5, 3


def frontier_reach(pairs: Pairs, level: float, share: float | None = None) -> float:
    """The ``level`` quantile of the fit's |residuals| at its largest sizes (the last
    ``share``, default :data:`FRONTIER_SHARE`, of them, at least :data:`FRONTIER_MIN`; 1:
    every size): the error at the frontier, where an extrapolation starts; a poor fit at the
    smallest sizes says little about it. The prior's slopes are measured beyond this same
    reach (bench/scale_prior.py): ``"frontier"`` beyond the frontier's, ``"upper"`` beyond
    every size's."""
    r = np.abs(pairs.residuals)
    if not r.size:
        return 0.0
    share = FRONTIER_SHARE if share is None else share
    keep = max(int(np.ceil(share * r.size)), min(FRONTIER_MIN, r.size))
    return float(np.quantile(r[r.size - keep :], level))


def prior_calibration(pairs: Pairs, level: float, form_name: str) -> Calibration:
    """Slopes from the prior (scaled from its level by the normal quantile), intercepts from
    the fit's residuals at its largest sizes (:func:`frontier_reach`)."""
    prior = load_prior()
    entry = prior["forms"].get(form_name) or prior["forms"]["default"]
    z = stats.norm.ppf(0.5 + level / 2) / stats.norm.ppf(0.5 + prior["level"] / 2)
    a = frontier_reach(pairs, level)
    # the slope beyond that same reach: the frontier's, or every size's
    b = entry.get("frontier", entry["upper"]) if FRONTIER_SHARE < 1 else entry["upper"]
    return Calibration(
        level=level,
        method="prior",
        upper=(a, z * b),
        lower=(-a, z * b),
        coverage=entry.get("coverage"),
        max_distance=float(entry["max_distance"]),
        n_origins=pairs.n_origins,
        n_pairs=int(pairs.errors.size),
        pairs=pairs,
    )


def plausible_forms(found: dict[str, Pairs], chosen: str, level: float) -> tuple[list[str], float]:
    """The candidates the backtest cannot tell apart from ``chosen`` at ``level``, and the ratio.

    ``form="auto"`` picks the lowest late-origin RMSE, so the winner's backtest errors are
    optimistic about its own extrapolation error (on ColPret curves held out by scale, its late
    backtest RMSE was half its held-out RMSE in the median). A form whose late RMSE is within
    ``√F_level(k, k)`` of the winner's (``k`` late origins each) is not worse by the
    backtest's evidence; the calibrated interval covers each such form's prediction too."""
    pairs = found.get(chosen)
    if pairs is None or not np.isfinite(pairs.late_rmse) or pairs.late_rmse <= 0:
        return [], float("nan")
    k = max(pairs.n_origins - pairs.n_origins // 2, 1)
    ratio = float(np.sqrt(stats.f.ppf(level, k, k)))
    best = pairs.late_rmse
    out = [
        name
        for name, p in found.items()
        if name != chosen and np.isfinite(p.late_rmse) and p.late_rmse <= ratio * best
    ]
    return out, ratio


def choice_weights(found: dict[str, Pairs], chosen: str, plausible: list[str]) -> dict[str, float]:
    """Evidence weights of the chosen form and each plausible one, summing to 1.

    A form's late-origin errors, taken as normal with its own RMSE, have likelihood
    ``∝ RMSE^(−k)`` over ``k`` late origins (an origin's extrapolations share one fit, so an
    origin, not a pair, is the unit of evidence): a form 2× worse on 4 origins weighs 1/16.
    Where the backtest cannot choose, :func:`thin_weights` weighs the forms instead."""
    names = [chosen, *plausible]
    pairs = found[chosen]
    if not np.isfinite(pairs.late_rmse) or pairs.late_rmse <= 0:
        return {k: 1.0 / len(names) for k in names}
    k = max(pairs.n_origins - pairs.n_origins // 2, 1)
    raw = [1.0] + [float((pairs.late_rmse / found[n].late_rmse) ** k) for n in plausible]
    total = sum(raw)
    return {n: w / total for n, w in zip(names, raw)}


#: where the backtest cannot choose: "partial" (the supported forms weighted by whatever
#: rolling origins they have, equally where none has one), "aicc" (weighted by AICc on the
#: sizes' means), "equal" (the supported forms alike) or "rule" (m2; every fitted form alike)
THIN_RULE = "partial"


def supported(found: dict[str, Pairs]) -> list[str]:
    """The candidates whose parameters the distinct sizes support: at least two sizes more
    than parameters (AICc's ``n − k − 1 ≥ 1``); where none is, the simplest fitted form."""
    from labcoat.scale.curves import CURVES

    out = [
        name
        for name, p in found.items()
        if name in CURVES and p.residuals.size >= len(CURVES[name].names) + 2
    ]
    return out or list(found)[:1]


def thin_weights(found: dict[str, Pairs]) -> dict[str, float]:
    """The weights of an average where the backtest cannot choose (:data:`THIN_RULE`); forms
    with more parameters than the distinct sizes support (:func:`supported`) weigh 0.

    "partial": the supported forms that have any rolling origin, weighted as
    :func:`choice_weights` weighs plausible forms (``RMSE^(−k)``, ``k`` the fewest late
    origins among them), every supported form alike where none has an origin. "aicc": Akaike
    weights from the fits to the sizes' means, ``n·log σ̂² + 2k + 2k(k+1)/(n−k−1)``, ``σ̂²``
    never below the noise of a mean of the seeds."""
    from labcoat.scale.curves import CURVES

    if THIN_RULE == "rule":  # m2 by rule; nothing told the forms apart: all alike
        return {k: 1.0 / len(found) for k in found}
    names = supported(found)
    if THIN_RULE == "partial":
        have = [k for k in names if np.isfinite(found[k].late_rmse) and found[k].late_rmse > 0]
        if have:
            late = min(max(found[k].n_origins - found[k].n_origins // 2, 1) for k in have)
            best = min(found[k].late_rmse for k in have)
            raw = {k: (best / found[k].late_rmse) ** late for k in have}
            total = sum(raw.values())
            return {k: raw.get(k, 0.0) / total for k in found}
    if THIN_RULE != "aicc" or len(names) == 1:
        return {k: (1.0 / len(names) if k in names else 0.0) for k in found}
    score = {}
    for name in names:
        p = found[name]
        n, k = p.residuals.size, len(CURVES[name].names)
        runs = n + p.seed_df
        noise = p.seed_sd**2 * n / runs if runs else 0.0
        var = max(float(np.mean(p.residuals**2)), noise, 1e-12)
        score[name] = n * np.log(var) + 2 * k + 2 * k * (k + 1) / max(n - k - 1, 1)
    best = min(score.values())
    raw = {k: float(np.exp(-(v - best) / 2)) for k, v in score.items()}
    total = sum(raw.values())
    return {k: raw.get(k, 0.0) / total for k in found}


#: how the forms ``form="auto"`` cannot tell apart widen its band: "spread" (their
#: evidence-weighted spread about the centre, in quadrature) or "union" (the band moved onto
#: each one's prediction, joined)
CHOICE_BAND = "spread"
#: the point ``form="auto"`` predicts: "stacked" (the evidence-weighted mean of the forms' log
#: predictions) or "chosen" (the chosen form's own)
CHOICE_POINT = "stacked"


def widen_for_choice(lo, hi, shifts, weights=None, level: float = 0.95):
    """The band widened for the choice of form. ``shifts``: each form's log prediction minus
    the centre's (the chosen form's among them); ``weights``: theirs, aligned (None: equal).
    "spread": half-widths grow in quadrature by ``z·√(Σ wᵢ·shiftᵢ²)``, so where the forms agree
    the band is the chosen form's own and a form with little evidence moves it little;
    "union": the band holds every form's prediction's band."""
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    shifts = [np.where(np.isfinite(s), s, 0.0) for s in shifts]
    if not shifts:
        return lo, hi
    if CHOICE_BAND == "union":
        for shift in shifts:
            lo, hi = np.minimum(lo, shift + lo), np.maximum(hi, shift + hi)
        return lo, hi
    w = np.full(len(shifts), 1.0) if weights is None else np.asarray(weights, float)
    w = w / w.sum(axis=0)  # one weight per form, or per form and point
    second = sum(wi * s**2 for wi, s in zip(w, shifts))
    spread = float(stats.norm.ppf(0.5 + level / 2)) ** 2 * second
    return -np.sqrt(lo**2 + spread), np.sqrt(hi**2 + spread)


def combine(
    predictions: dict[str, np.ndarray],
    weights: dict[str, float] | None,
    calibration: Calibration,
    distance: Any,
    new_run: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(point, lower, upper)`` in log loss from each form's log prediction (the chosen form's
    first) and their evidence ``weights`` (None: the chosen form alone): the point is their
    weighted mean (:data:`CHOICE_POINT`), the band the chosen form's calibrated error about it,
    widened by the forms' weighted spread about the point (:func:`widen_for_choice`). The one
    place a prediction and its interval are assembled, for ``predict`` and the benchmarks."""
    names = list(predictions)
    chosen = np.asarray(predictions[names[0]], float)
    if not weights or len(names) == 1:
        lo, hi = calibration.band(distance, new_run=new_run)
        return chosen, chosen + lo, chosen + hi
    w = np.array([float(weights.get(n, 0.0)) for n in names])
    logs = np.vstack([np.asarray(predictions[n], float) for n in names])
    usable = np.isfinite(logs) & (w[:, None] > 0)
    usable[0] |= ~usable.any(axis=0)  # nothing else: the chosen form
    share = np.where(usable, w[:, None], 0.0)
    share = share / share.sum(axis=0)
    safe = np.where(usable, logs, 0.0)
    center = (share * safe).sum(axis=0) if CHOICE_POINT == "stacked" else chosen
    shifts = [np.where(usable[i], safe[i] - center, 0.0) for i in range(len(names))]
    if CHOICE_BAND == "union":
        shifts = [s for s, wi in zip(shifts, w) if wi > 0]
        lo, hi = calibration.band(distance, shifts, None, new_run=new_run)
    else:
        lo, hi = calibration.band(distance, shifts, share, new_run=new_run)
    return center, center + lo, center + hi


def warn_if_beyond(calibration: Calibration, distances: np.ndarray) -> None:
    far = float(np.max(distances, initial=0.0))
    if far > calibration.max_distance + 1e-9:
        warnings.warn(
            f"predicting {far:.2f} log units beyond the fitted runs (×{np.exp(far):.3g}); the "
            f"calibration saw at most {calibration.max_distance:.2f} (×"
            f"{np.exp(calibration.max_distance):.3g}), so the interval there is extrapolated "
            "from the error-vs-distance line, not measured",
            ExtrapolationWarning,
            stacklevel=3,
        )
