"""Finding the best fit from every start of a grid, and refitting bootstrap resamples.

The replication runs L-BFGS-B from each of its 4,500 starts and keeps the lowest final
objective. Here the starts run as one batch (:mod:`labcoat.scale.lbfgs`) in rounds: ten
iterations for all of them, the best eighth (distinct points only) runs thirty more, the best
sixteen run to convergence, and scipy's L-BFGS-B polishes the best three with tighter
tolerances. Dropping starts that lag after ten iterations is a bet that the best basin is not
reached only by a late starter; ``bench/scale.py`` checks it against the plain loop (same
optimum on the Chinchilla points). Bootstrap refits are one batch too: each resample is a
vector of per-point counts, warm-started from the full fit.
"""

from __future__ import annotations

import os

import numpy as np
from scipy.optimize import minimize

from labcoat.scale.forms import CustomForm, PowerLawSum
from labcoat.scale.lbfgs import minimize_batch
from labcoat.scale.objective import SearchResult

#: successive rounds over the grid: (iterations, starts kept afterwards as a fraction, at least)
ROUNDS = ((10, 1 / 8, 64), (30, 0.0, 16))
POLISH = 3  # distinct finalists polished with scipy
POLISH_OPTIONS = {"ftol": 1e-13, "gtol": 1e-10, "maxiter": 15000, "maxcor": 20}
#: Huber with δ = 1e-3 makes objectives ~1e-3 and gradients tiny: scipy's default tolerances
#: (absolute below 1) would stop a warm-started refit before it moved, so refits use tight ones
REFIT_FTOL, REFIT_GTOL = 1e-13, 1e-10
#: a user's law has finite-difference gradients, too coarse for those; on its δ-scaled objective
CUSTOM_OPTIONS = {"ftol": 1e-12, "gtol": 1e-8, "maxiter": 15000}


def grid_search(
    form: PowerLawSum | CustomForm, x: np.ndarray, loss: np.ndarray, delta: float
) -> SearchResult:
    """The lowest objective reached from any start of ``form.grid()``."""
    if hasattr(form, "search"):  # a learning-curve form fits itself from data-driven starts
        return form.search(x, loss, delta)
    starts = form.grid()
    if isinstance(form, CustomForm):
        return _loop_search(form, starts, x, loss, delta)

    def fun(theta, rows):
        return form.value_and_grad(theta, x, loss, delta)

    origin = np.arange(len(starts))
    theta = starts
    for iterations, keep, at_least in ROUNDS:
        run = minimize_batch(fun, theta, max_iter=iterations)
        order = _distinct_best(run.x, run.fun)
        n_keep = max(int(len(theta) * keep), at_least)
        chosen = order[:n_keep]
        theta, origin = run.x[chosen], origin[chosen]
    run = minimize_batch(fun, theta, max_iter=5000)
    order = _distinct_best(run.x, run.fun)[:POLISH]
    polished = [polish(form, run.x[i], x, loss, delta) for i in order]
    objectives = np.array([p.fun for p in polished])
    best = int(np.argmin(objectives))
    return SearchResult(
        theta=polished[best].x,
        objective=float(objectives[best]),
        start=starts[origin[order[best]]],
        n_starts=len(starts),
        converged=bool(polished[best].success or run.converged[order[best]]),
    )


def _distinct_best(theta: np.ndarray, values: np.ndarray, decimals: int = 4) -> np.ndarray:
    """Row indices by increasing objective, one per distinct point (starts that met merge)."""
    finite = np.flatnonzero(np.isfinite(values))
    order = finite[np.argsort(values[finite], kind="stable")]
    _, first = np.unique(np.round(theta[order], decimals), axis=0, return_index=True)
    return order[np.sort(first)]


def polish(form: PowerLawSum, theta: np.ndarray, x, loss, delta):
    def fun(t):
        f, g = form.value_and_grad(t[None], x, loss, delta)
        return float(f[0]), g[0]

    return minimize(fun, theta, jac=True, method="L-BFGS-B", options=POLISH_OPTIONS)


def custom_objective(form: CustomForm, x: np.ndarray, loss: np.ndarray, delta: float, weights=None):
    """The Huber objective of a user's law, for scipy (gradient by finite differences).

    Divided by δ: the minimiser is the same, and the values are of order one, where scipy's
    default tolerances mean what they say (at δ = 1e-3 they would stop a warm start at once).
    """
    log_loss = np.log(loss)

    def fun(theta: np.ndarray) -> float:
        pred = form.log_predict(theta, x)[0]
        if not np.all(np.isfinite(pred)):
            return np.inf
        r = log_loss - pred
        c = np.clip(r, -delta, delta)
        h = c * (r - 0.5 * c)
        return float((h if weights is None else h * weights).sum()) / delta

    return fun


def _loop_search(form: CustomForm, starts, x, loss, delta) -> SearchResult:
    fun = custom_objective(form, x, loss, delta)
    with np.errstate(invalid="ignore"):  # starts where the law is not positive evaluate to inf
        results = [minimize(fun, s, method="L-BFGS-B", options=CUSTOM_OPTIONS) for s in starts]
    values = np.array([r.fun if np.isfinite(r.fun) else np.inf for r in results])
    if not np.isfinite(values).any():
        from labcoat.errors import InputError

        raise InputError(
            "form: the function returned non-finite or non-positive losses from every start in p0; "
            "give starts where it predicts positive losses"
        )
    best = int(np.argmin(values))
    return SearchResult(
        theta=results[best].x,
        objective=float(values[best]) * delta,  # the replication's scale, as for the power laws
        start=starts[best],
        n_starts=len(starts),
        converged=bool(results[best].success),
    )


def bootstrap_counts(n_points: int, n_resamples: int, seed: int) -> np.ndarray:
    """Per-point counts of ``n_resamples`` resamples drawn with replacement: shape (K, n)."""
    rng = np.random.default_rng(seed)
    return rng.multinomial(n_points, np.full(n_points, 1.0 / n_points), size=n_resamples).astype(
        float
    )


def bootstrap_refits(
    form: PowerLawSum | CustomForm,
    theta: np.ndarray,
    x: np.ndarray,
    loss: np.ndarray,
    delta: float,
    counts: np.ndarray,
    n_jobs: int | None = None,
) -> np.ndarray:
    """Internal parameters refitted on each resample (rows of ``counts``), warm-started at
    ``theta``."""
    jobs = _jobs(n_jobs, len(counts), batched=form.batched)
    chunks = np.array_split(np.arange(len(counts)), jobs) if jobs > 1 else [np.arange(len(counts))]
    if jobs == 1:
        return _refit_chunk(form, theta, x, loss, delta, counts)
    from joblib import Parallel, delayed

    parts = Parallel(n_jobs=jobs)(
        delayed(_refit_chunk)(form, theta, x, loss, delta, counts[c]) for c in chunks
    )
    return np.concatenate(parts)


def _refit_chunk(form, theta, x, loss, delta, counts):
    if hasattr(form, "refit"):
        return form.refit(theta, x, loss, delta, counts)
    if isinstance(form, CustomForm):
        with np.errstate(invalid="ignore"):
            return np.array(
                [
                    minimize(
                        custom_objective(form, x, loss, delta, w),
                        theta,
                        method="L-BFGS-B",
                        options=CUSTOM_OPTIONS,
                    ).x
                    for w in counts
                ]
            )

    def fun(t, rows):
        return form.value_and_grad(t, x, loss, delta, counts[rows])

    start = np.repeat(theta[None], len(counts), axis=0)
    return minimize_batch(fun, start, max_iter=2000, ftol=REFIT_FTOL, gtol=REFIT_GTOL).x


#: resamples from which refits go to joblib workers. A batched form never does: one process
#: runs 1,000 refits in seconds, and splitting the batch over workers was slower in
#: bench/scale.py (worker start-up and two shrinking batches instead of one). A custom form
#: refits resample by resample with scipy, which parallelises well.
PARALLEL_MIN_RESAMPLES = {True: None, False: 100}


def _jobs(n_jobs: int | None, resamples: int, *, batched: bool) -> int:
    cpus = os.cpu_count() or 1
    if n_jobs is None:
        threshold = PARALLEL_MIN_RESAMPLES[batched]
        return min(cpus, 8) if threshold is not None and resamples >= threshold else 1
    if n_jobs < 0:
        return max(cpus + 1 + n_jobs, 1)
    return max(int(n_jobs), 1)
