"""Levenberg–Marquardt for a batch of small least-squares problems, one array pass per step.

A learning-curve fit has at most six parameters and a few dozen points, so scipy's
``least_squares`` spends its time in per-iteration Python overhead, and ``form="auto"`` runs
hundreds of such fits (every start, every rolling origin, every candidate). Here every problem
is a row: its own start, per-point weights (a rolling origin's fitted runs, a bootstrap
resample's counts), box bounds, damping and convergence test, and rows that converge leave the
batch. The Huber loss (``δ``) is minimised by iteratively reweighted Gauss–Newton steps
(weights ``min(1, δ/|r|)``), accepted only where the Huber objective falls.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

#: damping: start, growth after a rejected step, shrink after an accepted one, give-up level
LAMBDA_START, LAMBDA_UP, LAMBDA_DOWN, LAMBDA_MAX = 1e-3, 4.0, 3.0, 1e10
#: a row stops when an accepted step lowers its objective by less than ``ftol`` (relative) or
#: moves its parameters by less than ``xtol`` (relative): scipy's ``least_squares`` tests
#: residuals that are not finite count as this (a start where the law is not defined)
BAD_RESIDUAL = 1e3


def objective(r: np.ndarray, w: np.ndarray, delta: float | None) -> np.ndarray:
    """Per-row loss: ½·Σ w·r² (``delta`` None) or Huber Σ w·ρ_δ(r) (½r² inside, δ(|r| − δ/2)
    outside)."""
    if delta is None:
        return 0.5 * (w * r * r).sum(axis=1)
    c = np.clip(r, -delta, delta)
    return (w * c * (r - 0.5 * c)).sum(axis=1)


def minimize_lm(
    residuals: Callable[[np.ndarray], np.ndarray],
    starts: np.ndarray,
    weights: np.ndarray,
    lows: np.ndarray,
    highs: np.ndarray,
    *,
    delta: float | None = None,
    max_iter: int = 200,
    ftol: float = 1e-8,
    xtol: float = 1e-8,
) -> tuple[np.ndarray, np.ndarray]:
    """Minimise each row's (Huber) least squares from its start within its bounds.

    ``residuals(theta (B, P)) -> (B, n)``, rows evaluated independently; ``weights`` (S, n);
    ``lows``/``highs`` (S, P). Returns the final parameters (S, P) and objectives (S,)."""
    theta = np.clip(np.array(starts, dtype=float), lows, highs)
    n_rows, dim = theta.shape
    r = _safe(residuals(theta))
    f = objective(r, weights, delta)
    lam = np.full(n_rows, LAMBDA_START)
    active = np.isfinite(f)
    eye = np.eye(dim)
    for _ in range(max_iter):
        rows = np.flatnonzero(active)
        if rows.size == 0:
            break
        th, ra, wa = theta[rows], r[rows], weights[rows]
        lo, hi = lows[rows], highs[rows]
        jac = _jacobian(residuals, th, ra, hi)
        irls = wa if delta is None else wa * np.minimum(1.0, delta / np.maximum(np.abs(ra), 1e-300))
        jw = jac * irls[:, :, None]
        a = np.einsum("bnp,bnq->bpq", jw, jac)
        g = np.einsum("bnp,bn->bp", jw, ra)
        diag = np.maximum(np.einsum("bpp->bp", a), 1e-12)
        damped = a + (lam[rows, None] * diag)[:, :, None] * eye
        try:
            step = np.linalg.solve(damped, -g[:, :, None])[:, :, 0]
        except np.linalg.LinAlgError:
            step = np.stack([-np.linalg.pinv(m) @ v for m, v in zip(damped, g)])
        trial = np.clip(th + step, lo, hi)
        rt = _safe(residuals(trial))
        ft = objective(rt, wa, delta)
        better = np.isfinite(ft) & (ft < f[rows])
        gain = f[rows] - ft
        moved = rows[better]
        size = np.linalg.norm(trial[better] - th[better], axis=1)
        small = (gain[better] <= ftol * np.maximum(f[moved], 1e-300)) | (
            size <= xtol * (xtol + np.linalg.norm(th[better], axis=1))
        )
        theta[moved], r[moved], f[moved] = trial[better], rt[better], ft[better]
        lam[moved] = np.maximum(lam[moved] / LAMBDA_DOWN, 1e-12)
        stuck = rows[~better]
        lam[stuck] *= LAMBDA_UP
        active[moved[small]] = False
        active[stuck[lam[stuck] > LAMBDA_MAX]] = False
        no_move = np.abs(trial - th).max(axis=1) <= 1e-12 * np.maximum(np.abs(th).max(axis=1), 1)
        active[rows[no_move & ~better]] = False
    return theta, f


def _safe(r: np.ndarray) -> np.ndarray:
    return np.where(np.isfinite(r), r, BAD_RESIDUAL)


def _jacobian(residuals, theta, r, highs) -> np.ndarray:
    """Forward differences for every row, all columns in one batched evaluation: (B, n, P)."""
    b, p = theta.shape
    step = 1e-7 * np.maximum(np.abs(theta), 1.0)
    step = np.where(theta + step > highs, -step, step)
    shifted = theta[:, None, :] + step[:, :, None] * np.eye(p)[None]
    values = _safe(residuals(shifted.reshape(b * p, p))).reshape(b, p, -1)
    return ((values - r[:, None, :]) / step[:, :, None]).transpose(0, 2, 1)
