"""L-BFGS for a batch of independent problems, one array pass per evaluation.

scipy's L-BFGS-B spends most of its time in Python overhead when the objective is a sum over a
few hundred points; thousands of such problems (grid starts, bootstrap resamples) run far faster
as one batch. Every row keeps its own curvature pairs, step and convergence test; rows that
converge leave the batch, so the arrays shrink as the work does. The stopping rules are scipy's
(relative reduction ``ftol``, largest gradient component ``gtol``), so the two agree on when a
problem is done.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

#: fun(theta (B, P), rows (B,)) -> (values (B,), gradients (B, P)); ``rows`` are the problems' ids
BatchObjective = Callable[[np.ndarray, np.ndarray], "tuple[np.ndarray, np.ndarray]"]

SCIPY_FTOL = 1e7 * np.finfo(float).eps  # scipy's default factr times machine epsilon
SCIPY_GTOL = 1e-5


@dataclass
class BatchResult:
    """Final point, value and gradient of every problem, and how each one ended."""

    x: np.ndarray
    fun: np.ndarray
    jac: np.ndarray
    nit: np.ndarray
    converged: np.ndarray  # met ftol or gtol (not: ran out of iterations or of line search)
    evaluations: int  # rows evaluated in total, the unit of work


def minimize_batch(
    fun: BatchObjective,
    x0: np.ndarray,
    *,
    max_iter: int = 1000,
    ftol: float = SCIPY_FTOL,
    gtol: float = SCIPY_GTOL,
    memory: int = 10,
    max_backtracks: int = 30,
) -> BatchResult:
    """Minimise every row of ``x0`` independently with L-BFGS and a backtracking line search."""
    x = np.array(x0, dtype=float, copy=True)
    n_rows, dim = x.shape
    rows_all = np.arange(n_rows)
    f, g = fun(x, rows_all)
    evaluations = n_rows
    s_hist = np.zeros((n_rows, memory, dim))
    y_hist = np.zeros((n_rows, memory, dim))
    rho = np.zeros((n_rows, memory))
    gamma = np.zeros(n_rows)  # 0: no curvature pair yet
    nit = np.zeros(n_rows, dtype=int)
    converged = np.abs(g).max(axis=1) <= gtol
    done = converged | ~np.isfinite(f)
    head = 0
    for _ in range(max_iter):
        active = np.flatnonzero(~done)
        if active.size == 0:
            break
        xa, fa, ga = x[active], f[active], g[active]
        d = -_two_loop(ga, s_hist[active], y_hist[active], rho[active], gamma[active], head, memory)
        slope = (ga * d).sum(axis=1)
        uphill = ~(slope < 0)
        if uphill.any():  # lost curvature information: restart from steepest descent
            d[uphill] = -ga[uphill]
            slope[uphill] = -(ga[uphill] ** 2).sum(axis=1)
            rho[active[uphill]] = 0.0
            gamma[active[uphill]] = 0.0
        first = gamma[active] == 0
        step = np.where(
            first, np.minimum(1.0, 1.0 / np.maximum(np.abs(ga).sum(axis=1), 1e-300)), 1.0
        )
        xn, fn, gn, ok, spent = _backtrack(fun, active, xa, fa, slope, d, step, max_backtracks)
        evaluations += spent
        stalled = active[~ok]
        done[stalled] = True
        moved = active[ok]
        xa, fa, ga, xn, fn, gn = xa[ok], fa[ok], ga[ok], xn[ok], fn[ok], gn[ok]
        s, y = xn - xa, gn - ga
        sy = (s * y).sum(axis=1)
        keep = (sy > np.finfo(float).eps * (y * y).sum(axis=1)) & (sy > 1e-150)
        s_hist[moved, head] = np.where(keep[:, None], s, 0.0)
        y_hist[moved, head] = np.where(keep[:, None], y, 0.0)
        rho[moved, head] = np.where(keep, 1.0 / np.where(keep, sy, 1.0), 0.0)
        gamma[moved] = np.where(keep, sy / np.maximum((y * y).sum(axis=1), 1e-300), gamma[moved])
        head = (head + 1) % memory
        x[moved], f[moved], g[moved] = xn, fn, gn
        nit[moved] += 1
        small_gain = (fa - fn) <= ftol * np.maximum(np.maximum(np.abs(fa), np.abs(fn)), 1.0)
        flat = np.abs(gn).max(axis=1) <= gtol
        converged[moved] = small_gain | flat
        done[moved] = converged[moved]
    return BatchResult(x, f, g, nit, converged, evaluations)


def _two_loop(g, s_hist, y_hist, rho, gamma, head, memory):
    """The L-BFGS product H·g for every row; rows with rho = 0 in a slot skip that pair."""
    q = g.copy()
    alphas = np.zeros(rho.shape)
    order = [(head - 1 - j) % memory for j in range(memory)]  # newest first
    for i in order:
        a = rho[:, i] * (s_hist[:, i] * q).sum(axis=1)
        alphas[:, i] = a
        q -= a[:, None] * y_hist[:, i]
    r = np.where(gamma[:, None] > 0, gamma[:, None], 1.0) * q
    for i in reversed(order):
        b = rho[:, i] * (y_hist[:, i] * r).sum(axis=1)
        r += s_hist[:, i] * (alphas[:, i] - b)[:, None]
    return r


def _backtrack(fun, rows, x, f, slope, d, step, max_backtracks, c1=1e-4):
    """Armijo backtracking for every row; rows still searching are the only ones evaluated."""
    n = len(rows)
    xn = np.empty_like(x)
    fn = np.full(n, np.inf)
    gn = np.empty_like(x)
    ok = np.zeros(n, dtype=bool)
    t = step.copy()
    todo = np.arange(n)
    spent = 0
    for _ in range(max_backtracks):
        trial = x[todo] + t[todo, None] * d[todo]
        ft, gt = fun(trial, rows[todo])
        spent += todo.size
        accept = np.isfinite(ft) & (ft <= f[todo] + c1 * t[todo] * slope[todo])
        hit = todo[accept]
        xn[hit], fn[hit], gn[hit], ok[hit] = trial[accept], ft[accept], gt[accept], True
        miss = todo[~accept]
        if miss.size == 0:
            break
        # a quadratic through f, the slope and the trial, kept within [0.1, 0.5] of the step
        tm, fm = t[miss], ft[~accept]
        curvature = fm - f[miss] - slope[miss] * tm
        quad = np.where(
            np.isfinite(fm) & (curvature > 0), -slope[miss] * tm * tm / (2 * curvature), 0.5 * tm
        )
        t[miss] = np.clip(quad, 0.1 * tm, 0.5 * tm)
        todo = miss
    return xn, fn, gn, ok, spent
