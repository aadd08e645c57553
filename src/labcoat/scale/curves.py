"""Learning-curve forms for one variable: the estimators M1–M4 and a broken power law.

Loss (or error) against one quantity (examples, steps, tokens, parameters), as compared by
Alabdulmohsin, Neyshabur and Zhai (NeurIPS 2022, "Revisiting Neural Scaling Laws in Language
and Vision"), plus one smoothly broken power law (Caballero et al. 2022):

* ``m1``: ``L = β·x^(−c)``, a plain power law;
* ``m2``: ``L = ε∞ + β·x^(−c)``, a power law with a floor;
* ``m3``: ``L = β·(1/x + γ)^c``, a power law that saturates (its floor is ``β·γ^c``);
* ``m4``: ``(L − ε∞) / (ε0 − L)^α = β·x^(−c)``, which saturates at both ends: near the
  random-guess loss ``ε0`` at the start and at ``ε∞`` in the limit;
* ``broken``: ``L = ε∞ + β·x^(−c0)·(1 + (x/d)^(1/s))^(−c1·s)``, whose exponent changes from
  ``c0`` to ``c0 + c1`` around ``x = d`` (sharpness ``s``).

Every form is fitted the same way: Huber (``δ``) on log loss, as for the power-law sums, by a
batched Levenberg–Marquardt (:mod:`labcoat.scale.lm`) from a few starts read off the data, the
lowest objective winning; a rolling origin's refits and the bootstrap's run as one batch each.
A form's internal parameters are the least-squares variables (log coefficients, raw
exponents); ``natural`` maps them to the published ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

#: Newton steps for M4's implicit equation (it converges in well under 20 from our start)
M4_NEWTON_STEPS = 40
#: Levenberg–Marquardt iterations per start; flat directions (M4's α against ε0) stop here
MAX_NFEV = 100
#: starts that go on from plain least squares to the Huber objective
HUBER_FINALISTS = 2


def _m1(theta: np.ndarray, logx: np.ndarray) -> np.ndarray:
    log_b, c = theta[:, 0:1], theta[:, 1:2]
    return log_b - c * logx


def _m2(theta: np.ndarray, logx: np.ndarray) -> np.ndarray:
    log_b, c, log_e = theta[:, 0:1], theta[:, 1:2], theta[:, 2:3]
    return np.logaddexp(log_b - c * logx, log_e)


def _m3(theta: np.ndarray, logx: np.ndarray) -> np.ndarray:
    log_b, c, log_g = theta[:, 0:1], theta[:, 1:2], theta[:, 2:3]
    return log_b + c * np.logaddexp(-logx, log_g)


def _m4(theta: np.ndarray, logx: np.ndarray) -> np.ndarray:
    """Solve ``w / (b − w)^α = f`` for the excess loss ``w`` in ``(0, b)``, ``b = ε0 − ε∞``.

    With ``u = w / b = σ(z)`` the equation is ``h(z) = log σ(z) − α·log σ(−z) = t`` with
    ``t = log f − (1 − α)·log b``; ``h`` rises monotonically (slope ``1 − (1 − α)σ(z)``), so
    Newton's method from ``z = t`` converges.
    """
    log_b, c, alpha, e_inf, e_0 = (theta[:, i : i + 1] for i in range(5))
    span = np.maximum(e_0 - e_inf, 1e-300)
    t = log_b - c * logx - (1.0 - alpha) * np.log(span)
    t = np.broadcast_to(t, np.broadcast_shapes(t.shape, alpha.shape)).copy()
    alpha_b = np.broadcast_to(alpha, t.shape)
    z = np.where(t < 0, t, t / np.maximum(alpha_b, 1.0))
    shape = z.shape
    z, t, a = z.ravel(), t.ravel(), np.ascontiguousarray(alpha_b).ravel()
    todo = np.arange(z.size)  # only the elements still moving are iterated on
    for _ in range(M4_NEWTON_STEPS):
        zt, at = z[todo], a[todo]
        s = 1.0 / (1.0 + np.exp(-zt))
        h = -np.logaddexp(0.0, -zt) + at * np.logaddexp(0.0, zt)
        slope = 1.0 - (1.0 - at) * s
        step = np.clip((h - t[todo]) / np.maximum(slope, 1e-12), -20.0, 20.0)
        z[todo] = zt - step
        todo = todo[np.abs(step) >= 1e-9]
        if todo.size == 0:
            break
    z = z.reshape(shape)
    u = 1.0 / (1.0 + np.exp(-z))
    return np.log(e_inf + span * u)


def _broken(theta: np.ndarray, logx: np.ndarray) -> np.ndarray:
    log_b, c0, c1, log_d, log_e, log_s = (theta[:, i : i + 1] for i in range(6))
    s = np.exp(log_s)
    bend = -c1 * s * np.logaddexp(0.0, (logx - log_d) / s)
    return np.logaddexp(log_b - c0 * logx + bend, log_e)


@dataclass(frozen=True)
class CurveForm:
    """A learning-curve law of one variable, fitted by least squares on log loss."""

    name: str
    internal_names: tuple[str, ...]
    names: tuple[str, ...]
    description: str
    _log_predict: Callable[[np.ndarray, np.ndarray], np.ndarray]
    _natural: Callable[[np.ndarray], np.ndarray]
    _starts: Callable[[np.ndarray, np.ndarray], np.ndarray]
    _bounds: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
    #: log of the loss the form tends to as x grows (−inf: none), per row of theta
    _log_floor: Callable[[np.ndarray], np.ndarray] | None = None

    variables = ("x",)
    batched = True  # one process fits its resamples fast; no joblib workers

    def natural(self, theta: np.ndarray) -> np.ndarray:
        return self._natural(np.atleast_2d(np.asarray(theta, dtype=float)).copy())

    def log_predict(self, theta: np.ndarray, x: np.ndarray) -> np.ndarray:
        """``log L`` for each row of ``theta`` at the points ``x`` (1, n): shape (S, n)."""
        theta = np.atleast_2d(np.asarray(theta, dtype=float))
        with np.errstate(all="ignore"):
            return self._log_predict(theta, np.log(np.asarray(x, dtype=float)[0])[None])

    def log_floor(self, theta: np.ndarray) -> np.ndarray:
        """``log`` of the loss the law approaches as x grows, one per row of ``theta``."""
        theta = np.atleast_2d(np.asarray(theta, dtype=float))
        if self._log_floor is None:
            return np.full(theta.shape[0], -np.inf)
        with np.errstate(all="ignore"):
            return self._log_floor(theta)

    def grid(self) -> np.ndarray:  # the starts depend on the data; see ``starts``
        return np.empty((0, len(self.names)))

    def starts(self, x: np.ndarray, loss: np.ndarray) -> np.ndarray:
        return self._starts(np.log(x[0]), np.log(loss))

    def search(self, x: np.ndarray, loss: np.ndarray, delta: float, warm=None):
        """The lowest Huber objective from every start (and ``warm``, a previous fit)."""
        from labcoat.scale.objective import SearchResult

        theta, value, start, n_starts = self._search_masks(
            x, loss, delta, np.ones((1, loss.size), bool), warm
        )
        if not np.isfinite(value[0]):
            from labcoat.errors import InputError

            raise InputError(f"form {self.name!r}: no start reached a finite fit of these runs")
        return SearchResult(
            theta=theta[0],
            objective=float(value[0]),
            start=start[0],
            n_starts=n_starts,
            converged=True,
        )

    def search_many(self, x, loss, delta, masks, warm=None) -> np.ndarray:
        """The best fit on each subset of the runs (rows of the boolean ``masks``), all in one
        batch: a rolling origin's refits. Rows whose every start failed are NaN."""
        theta, value, _, _ = self._search_masks(x, loss, delta, np.asarray(masks, bool), warm)
        theta[~np.isfinite(value)] = np.nan
        return theta

    def _search_masks(self, x, loss, delta, masks, warm):
        """Plain least squares from every start of every subset (starts and bounds read off
        that subset), then Huber from each subset's best ``HUBER_FINALISTS``."""
        from labcoat.scale.lm import minimize_lm

        logx, logy = np.log(x[0]), np.log(loss)
        starts, lows, highs, owner = [], [], [], []
        for m, keep in enumerate(masks):
            rows = self._starts(logx[keep], logy[keep])
            if warm is not None:
                rows = np.vstack([np.asarray(warm, dtype=float)[None], rows])
            lo, hi = self._bounds(logx[keep], logy[keep])
            starts.append(rows)
            lows.append(np.broadcast_to(lo, rows.shape))
            highs.append(np.broadcast_to(hi, rows.shape))
            owner.append(np.full(len(rows), m))
        starts, lows, highs = np.vstack(starts), np.vstack(lows), np.vstack(highs)
        owner = np.concatenate(owner)
        weights = masks[owner].astype(float)

        def residuals(theta):
            with np.errstate(all="ignore"):
                return self._log_predict(theta, logx[None]) - logy

        plain, _ = minimize_lm(residuals, starts, weights, lows, highs, max_iter=MAX_NFEV)
        ranked = _ranked(residuals(plain), weights, delta)
        finalists = []
        for m in range(len(masks)):
            mine = np.flatnonzero(owner == m)
            mine = mine[np.argsort(ranked[mine], kind="stable")][:HUBER_FINALISTS]
            finalists.extend(mine[np.isfinite(ranked[mine])])
        finalists = np.array(finalists, dtype=int)
        theta = np.full((len(masks), starts.shape[1]), np.nan)
        value = np.full(len(masks), np.inf)
        start = np.full((len(masks), starts.shape[1]), np.nan)
        if finalists.size:
            fitted, values = minimize_lm(
                residuals,
                plain[finalists],
                weights[finalists],
                lows[finalists],
                highs[finalists],
                delta=delta,
                max_iter=MAX_NFEV,
                ftol=1e-12,
                xtol=1e-12,
            )
            values = _ranked(residuals(fitted), weights[finalists], delta)
            for i, row in enumerate(finalists):
                m = owner[row]
                if values[i] < value[m]:
                    theta[m], value[m], start[m] = fitted[i], values[i], starts[row]
        return theta, value, start, len(starts) // max(len(masks), 1)

    def refit(self, theta, x, loss, delta, counts) -> np.ndarray:
        """Warm-started refits on resamples given as per-point counts (rows of ``counts``)."""
        from labcoat.scale.lm import minimize_lm

        logx, logy = np.log(x[0]), np.log(loss)
        lows, highs = self._bounds(logx, logy)
        counts = np.asarray(counts, dtype=float)
        k = len(counts)

        def residuals(rows):
            with np.errstate(all="ignore"):
                return self._log_predict(rows, logx[None]) - logy

        out, _ = minimize_lm(
            residuals,
            np.repeat(np.asarray(theta, float)[None], k, axis=0),
            counts,
            np.broadcast_to(lows, (k, theta.size)),
            np.broadcast_to(highs, (k, theta.size)),
            delta=delta,
            max_iter=MAX_NFEV,
            ftol=1e-12,
            xtol=1e-12,
        )
        bad = ~np.all(np.isfinite(out), axis=1)
        out[bad] = theta
        return out


def _ranked(r: np.ndarray, weights: np.ndarray, delta: float) -> np.ndarray:
    """Each row's Huber objective on its own runs; inf where the fit failed on them (a
    residual of 100 or more in log, or none at all)."""
    from labcoat.scale.lm import objective

    bad = (((np.abs(r) >= 1e2) | ~np.isfinite(r)) & (weights > 0)).any(axis=1)
    value = objective(np.where(weights > 0, r, 0.0), weights, delta)
    return np.where(bad, np.inf, value)


def _exp_columns(*columns: int) -> Callable[[np.ndarray], np.ndarray]:
    def natural(theta: np.ndarray) -> np.ndarray:
        theta[:, list(columns)] = np.exp(theta[:, list(columns)])
        return theta

    return natural


def _line(logx: np.ndarray, logy: np.ndarray) -> tuple[float, float]:
    """(intercept, −slope) of log L on log x: a plain power law's log β and c."""
    slope, intercept = np.polyfit(logx, logy, 1)
    return float(intercept), float(max(-slope, 1e-3))


def _m1_starts(logx, logy):
    b, c = _line(logx, logy)
    return np.array([[b, c], [logy.mean() + 0.1 * logx.mean(), 0.1]])


def _m2_starts(logx, logy):
    low = float(logy.min())
    rows = []
    for share in (0.0, 0.5, 0.9):
        floor = np.log(share * np.exp(low)) if share else low - 5.0
        excess = np.log(np.maximum(np.exp(logy) - np.exp(floor), 1e-12 * np.exp(low)))
        b, c = _line(logx, excess)
        rows.append([b, c, floor])
    return np.array(rows)


def _m3_starts(logx, logy):
    b, c = _line(logx, logy)
    rows = [[b, c, -float(logx.max()) - 5.0]]
    for offset in (-1.0, 0.0, 1.0):  # saturation near the largest x, or a decade either side
        rows.append([b, c, -float(logx.max()) - offset])
    return np.array(rows)


def _m4_starts(logx, logy):
    y = np.exp(logy)
    lo, hi = float(y.min()), float(y.max())
    rows = []
    for e_inf_share, e_0_mult, alpha in ((0.0, 1.0, 0.0), (0.5, 1.05, 0.5), (0.9, 1.2, 1.0)):
        e_inf = e_inf_share * lo
        e_0 = max(hi * e_0_mult, hi + 1e-3)
        g = np.log(np.maximum(y - e_inf, 1e-12)) - alpha * np.log(np.maximum(e_0 - y, 1e-12))
        b, c = _line(logx, g)
        rows.append([b, c, alpha, e_inf, e_0])
    return np.array(rows)


def _m4_bounds(logx, logy):
    y = np.exp(logy)
    lo, hi = float(y.min()), float(y.max())
    return (
        np.array([-np.inf, 0.0, 0.0, 0.0, hi * (1 + 1e-6) + 1e-9]),
        np.array([np.inf, 10.0, 10.0, lo * (1 - 1e-6), max(10 * hi, hi + 10.0)]),
    )


def _broken_starts(logx, logy):
    b, c = _line(logx, logy)
    low = float(logy.min())
    q = np.quantile(logx, [0.35, 0.65])
    rows = []
    for log_d in q:
        for c1 in (-0.5 * c, 0.5 * c):
            rows.append([b, c, c1, log_d, low - 3.0, 0.0])
    return np.array(rows)


def _free(n: int, lows=None, highs=None):
    def bounds(logx, logy):
        lo = np.full(n, -np.inf) if lows is None else np.array(lows, dtype=float)
        hi = np.full(n, np.inf) if highs is None else np.array(highs, dtype=float)
        return lo, hi

    return bounds


def _broken_bounds(logx, logy):
    span = float(logx.max() - logx.min()) or 1.0
    return (
        np.array([-np.inf, 0.0, -10.0, float(logx.min()) - span, -np.inf, np.log(0.05)]),
        np.array([np.inf, 10.0, 10.0, float(logx.max()) + span, np.inf, np.log(5.0)]),
    )


M1 = CurveForm(
    "m1",
    ("log_beta", "c"),
    ("beta", "c"),
    "L = β·x^(−c)",
    _m1,
    _exp_columns(0),
    _m1_starts,
    _free(2, [-np.inf, 0.0], [np.inf, 10.0]),
)
M2 = CurveForm(
    "m2",
    ("log_beta", "c", "log_E"),
    ("beta", "c", "E"),
    "L = E + β·x^(−c)",
    _m2,
    _exp_columns(0, 2),
    _m2_starts,
    _free(3, [-np.inf, 0.0, -np.inf], [np.inf, 10.0, np.inf]),
    lambda t: t[:, 2],
)
M3 = CurveForm(
    "m3",
    ("log_beta", "c", "log_gamma"),
    ("beta", "c", "gamma"),
    "L = β·(1/x + γ)^c",
    _m3,
    _exp_columns(0, 2),
    _m3_starts,
    _free(3, [-np.inf, 0.0, -200.0], [np.inf, 10.0, 50.0]),
    lambda t: t[:, 0] + t[:, 1] * t[:, 2],
)
M4 = CurveForm(
    "m4",
    ("log_beta", "c", "alpha", "E_inf", "E_0"),
    ("beta", "c", "alpha", "E_inf", "E_0"),
    "(L − ε∞)/(ε0 − L)^α = β·x^(−c)",
    _m4,
    _exp_columns(0),
    _m4_starts,
    _m4_bounds,
    lambda t: np.log(np.maximum(t[:, 3], 0.0)),
)
BROKEN = CurveForm(
    "broken",
    ("log_beta", "c0", "c1", "log_d", "log_E", "log_s"),
    ("beta", "c0", "c1", "d", "E", "s"),
    "L = E + β·x^(−c0)·(1 + (x/d)^(1/s))^(−c1·s)",
    _broken,
    _exp_columns(0, 3, 4, 5),
    _broken_starts,
    _broken_bounds,
    lambda t: t[:, 4],
)
CURVES: dict[str, CurveForm] = {f.name: f for f in (M1, M2, M3, M4, BROKEN)}
#: the forms ``form="auto"`` chooses among, cheapest first (ties go to the simpler)
AUTO_CANDIDATES = ("m1", "m2", "m3", "m4", "broken")
