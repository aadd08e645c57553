"""Downstream accuracy or error, predicted through the loss (a fitted link) or from compute.

Loss extrapolates smoothly; a task's accuracy often does not. A downstream fit chains two
laws, as Gadre et al. (2024) and the OLMo ladder do: the loss law in the runs' sizes
(``chinchilla`` with N and D, ``m2`` with one variable), then a link from loss to the task's
error, ``exponential`` (``err = E − k·exp(−γ·L)``, Gadre et al.) or ``sigmoid``
(``err = b + a·σ(k·(L − L0))``, OLMo ladder). ``via="compute"`` skips the loss and fits the
sigmoid against log compute directly.

Whether the task is predictable at all is a backtest question: the whole chain is refitted at
rolling origins (by compute) and scored on the larger runs against a constant (the mean error
of the fitted runs). A task whose backtest error is no better than the constant's, or whose
link residuals trend with the loss, is declared *not predictable*: the fit still exists, but
``predict`` warns, and the finding fails. Intervals are calibrated from the same backtests,
additive on the metric's scale and widening with log distance, then multiplied by the frontier
factor (:func:`labcoat.scale.calibrate.frontier_factor`): on public curves held out by scale,
errors at the frontier of the runs exceeded the band of the fit's own backtests by that factor.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from scipy.optimize import least_squares

from labcoat._jsonable import jsonable
from labcoat._validation import fail
from labcoat.errors import InputError
from labcoat.findings import Check, Finding, Outcome
from labcoat.result import Result

TARGETS = ("accuracy", "error")
LINKS = ("exponential", "sigmoid")
VIA = ("loss", "compute")
N_ORIGINS = 8
TREND_P, TREND_R2 = 1e-3, 0.3


class PredictabilityWarning(UserWarning):
    """A downstream prediction from a task its backtests found not predictable."""


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-np.clip(z, -60, 60)))


def _exponential(p, u):
    e, log_k, gamma = p
    return e - np.exp(log_k - gamma * u)


def _sigmoid_link(p, u):
    b, a, k, u0 = p
    return b + a * _sigmoid(k * (u - u0))


def _starts(link: str, u, err):
    if link == "exponential":
        top = float(err.max())
        return [
            np.array([top + 0.05, np.log(max(top, 1e-3)) + g * float(u.min()), g])
            for g in (0.5, 1.0, 2.0)
        ]
    mid = float(np.median(u))
    span = float(err.max() - err.min()) or 0.1
    starts = [np.array([float(err.min()), span, k, mid]) for k in (1.0, 5.0, -1.0, -5.0)]
    # steep ones too, centred along the runs: a jump is a sigmoid narrow against their range
    width = float(np.ptp(u)) or 1.0
    for centre in np.quantile(u, [0.25, 0.5, 0.75]):
        for k in (-20.0 / width, 20.0 / width):
            low = float(err[u <= centre].mean()) if (u <= centre).any() else float(err.mean())
            high = float(err[u > centre].mean()) if (u > centre).any() else float(err.mean())
            lo, hi = (low, high) if k > 0 else (high, low)
            starts.append(np.array([lo, hi - lo, k, float(centre)]))
    return starts


LINK_FUNCTIONS = {"exponential": _exponential, "sigmoid": _sigmoid_link}


def fit_link(link: str, u: np.ndarray, err: np.ndarray) -> np.ndarray:
    """Least-squares parameters of the link from ``u`` (loss, or log compute) to the error."""
    fn = LINK_FUNCTIONS[link]
    best, best_cost = None, np.inf
    for start in _starts(link, u, err):
        with np.errstate(all="ignore"):
            try:
                run = least_squares(
                    lambda p: np.nan_to_num(fn(p, u) - err, nan=1e3), start, max_nfev=500
                )
            except ValueError:
                continue
        if run.cost < best_cost:
            best, best_cost = run.x, run.cost
    if best is None:
        raise InputError(f"link: the {link} link could not be fitted to these runs")
    return best


def _clip(err: np.ndarray) -> np.ndarray:
    return np.clip(err, 0.0, 1.0)


@dataclass
class _Chain:
    """Everything needed to predict the error at new points from one set of fitted runs."""

    via: str
    link: str
    form: Any
    theta: np.ndarray | None
    link_params: np.ndarray

    def predict(self, x: np.ndarray) -> np.ndarray:
        if self.via == "loss":
            u = np.exp(self.form.log_predict(self.theta, x)[0])
        else:
            u = np.log(x).sum(axis=0)
        return _clip(LINK_FUNCTIONS[self.link](self.link_params, u))


def _fit_chain(via, link, form, x, loss, err, delta, warm=None) -> _Chain:
    from labcoat.scale.calibrate import fit_theta

    if via == "loss":
        theta = fit_theta(form, x, loss, delta, warm=warm)
        return _Chain(via, link, form, theta, fit_link(link, loss, err))
    return _Chain(via, "sigmoid", form, None, fit_link("sigmoid", np.log(x).sum(axis=0), err))


@dataclass
class DownstreamPrediction:
    """Predicted downstream metric at each point, with its calibrated interval."""

    points: dict[str, np.ndarray]
    value: np.ndarray
    interval: tuple[np.ndarray, np.ndarray]
    level: float
    target: str
    distance: np.ndarray
    predictable: bool

    def to_dict(self) -> dict[str, Any]:
        rows = []
        for i in range(self.value.size):
            row = {k: float(v[i]) for k, v in self.points.items()}
            row.update(
                {
                    self.target: float(self.value[i]),
                    "interval": [float(self.interval[0][i]), float(self.interval[1][i])],
                    "distance": float(self.distance[i]),
                }
            )
            rows.append(row)
        return jsonable({"level": self.level, "predictable": self.predictable, "predictions": rows})


def _verdict(result) -> Outcome:
    bt = result.backtest
    evidence = dict(
        backtest_mae=bt["mae"], constant_mae=bt["constant_mae"], residual_trend=bt["trend"]
    )
    if not result.predictable:
        return Outcome("fail", f"not predictable from these runs: {result.reason}", evidence)
    return Outcome("pass", f"predictable: {result.reason}", evidence)


#: the verdict, declared like the fit's diagnostics: a run far outside the band falsifies it
PREDICTABLE = Check(
    "scale.downstream",
    "scale",
    falsifies="the downstream metric follows the runs' loss (or compute) smoothly enough to "
    "extrapolate",
    predicts="rolling-origin backtests beat a constant and the link's residuals show no trend",
    run=_verdict,
    severity="fail",
)


@dataclass
class DownstreamFit(Result):
    """A downstream metric's law, its backtest against a constant and its verdict."""

    KIND = "scale.downstream"

    engine: ClassVar[str] = "scale"
    title: ClassVar[str] = "downstream scaling fit"
    view: ClassVar[str | None] = "labcoat.scale.view:downstream_view"
    section: ClassVar[str | None] = "labcoat.report.sections.scale:downstream_section"

    target: str
    via: str
    link: str
    params: dict[str, float]
    predictable: bool
    reason: str
    backtest: dict[str, Any]
    calibration: Any
    n_points: int
    _chain: _Chain = field(repr=False, default=None)
    _x: np.ndarray = field(repr=False, default=None)
    _findings: list[Finding] = field(default_factory=list, repr=False)

    @property
    def findings(self) -> list[Finding]:
        return self._findings

    def predict(self, N: Any, D: Any = None, *, level: float | None = None) -> DownstreamPrediction:
        """The metric at ``(N, D)`` (or ``x``) with its calibrated interval; warns when the task
        was found not predictable or the point lies beyond the distances backtested."""
        from labcoat.scale.calibrate import distance, warn_if_beyond
        from labcoat.scale.data import as_points

        if level is not None and level != self.calibration.level:
            raise fail("level", f"{self.calibration.level} (the level this fit calibrated)", level)
        x = as_points(N, D, self._chain.form)
        err = self._chain.predict(x)
        far = distance(self._x, x)
        lo, hi = self.calibration.band(far)
        low, high = _clip(err + lo), _clip(err + hi)
        if not self.predictable:
            warnings.warn(
                f"the {self.target} of this task is not predictable from these runs "
                f"({self.reason}); the prediction is shown, not trusted",
                PredictabilityWarning,
                stacklevel=2,
            )
        refused = (low <= 0.0) & (high >= 1.0)
        if refused.any() and self.predictable:
            warnings.warn(
                f"{int(refused.sum())} of {refused.size} interval(s) span all of [0, 1]: there "
                "the fit refuses to predict (the band is wider than the metric's range)",
                PredictabilityWarning,
                stacklevel=2,
            )
        warn_if_beyond(self.calibration, far)
        value, interval = err, (low, high)
        if self.target == "accuracy":
            value, interval = 1.0 - err, (1.0 - high, 1.0 - low)
        return DownstreamPrediction(
            dict(zip(self._chain.form.variables, x)),
            value,
            interval,
            self.calibration.level,
            self.target,
            far,
            self.predictable,
        )

    def to_dict(self) -> dict[str, Any]:
        return jsonable(
            {
                "target": self.target,
                "via": self.via,
                "link": self.link,
                "params": self.params,
                "predictable": self.predictable,
                "reason": self.reason,
                "backtest": {k: v for k, v in self.backtest.items() if k != "pairs"},
                "calibration": self.calibration.to_dict(),
                "n_points": self.n_points,
                "findings": [f.to_dict() for f in self.findings],
            }
        )


def fit_downstream(
    N: Any,
    D: Any,
    L: Any,
    metric: Any,
    *,
    target: str = "error",
    via: str = "loss",
    link: str = "exponential",
    level: float = 0.95,
    huber_delta: float = 1e-3,
) -> DownstreamFit:
    """Fit a downstream ``metric`` (``target``: ``"accuracy"`` or ``"error"``, in [0, 1]) of
    the runs at ``(N, D)`` (or ``x`` with ``D=None``) whose losses are ``L``."""
    from labcoat.scale.calibrate import (
        Pairs,
        band,
        calibrate,
        frontier_factor,
        orderings,
    )
    from labcoat.scale.data import as_losses, as_points, as_positive
    from labcoat.scale.diagnostics import polynomial_trend
    from labcoat.scale.forms import resolve_form

    if target not in TARGETS:
        raise fail("target", "'accuracy' or 'error'", target)
    if via not in VIA:
        raise fail("via", "'loss' (through a link) or 'compute'", via)
    if link not in LINKS:
        raise fail("link", "'exponential' or 'sigmoid'", link)
    form = resolve_form("chinchilla" if D is not None else "m2", None, 1 if D is None else 2)
    x = as_points(N, D, form)
    loss = (
        as_losses(L, x.shape[1])
        if via == "loss"
        else (as_positive(np.ones(x.shape[1]) if L is None else L, "L"))
    )
    values = np.asarray(metric, dtype=float)
    if values.shape != (x.shape[1],) or not np.all(np.isfinite(values)):
        raise fail("metric", f"one finite value per run ({x.shape[1]} runs)", values.shape)
    if values.min() < 0 or values.max() > 1:
        raise InputError(
            f"metric: {target} must lie in [0, 1] (a share of examples); got values from "
            f"{values.min():.3g} to {values.max():.3g}; divide percentages by 100"
        )
    err = values if target == "error" else 1.0 - values
    need = 8
    if x.shape[1] < need:
        raise fail("metric", f"at least {need} runs to backtest a downstream law", x.shape[1])
    chain = _fit_chain(via, link, form, x, loss, err, huber_delta)
    key = orderings(x)[-1]  # compute (or x)
    run = _rolling(via, chain.link, form, x, loss, err, huber_delta, key, chain.theta)
    smooth = err - chain.predict(x)
    jump = find_jump(key, err, smooth)
    if jump is not None:
        # the step is in the runs: a sigmoid through it, against compute, is a candidate law
        stepped = _Chain("compute", "sigmoid", form, None, jump.pop("params"))
        run_s = _rolling("compute", "sigmoid", form, x, loss, err, huber_delta, key, None)
        if run_s is not None and (run is None or run_s["mae"] < run["mae"]):
            chain, run = stepped, run_s
            jump["used"] = True
    if run is None:
        raise InputError("metric: no rolling origin had enough runs to backtest the downstream law")
    d, e, k = run["d"], run["e"], run["k"]
    u = loss if chain.via == "loss" else key
    residuals = err - LINK_FUNCTIONS[chain.link](chain.link_params, u)
    trend = polynomial_trend(u, residuals) if np.unique(u).size >= 4 else {"r2": 0.0, "pvalue": 1}
    mae, constant_mae = run["mae"], run["constant_mae"]
    used = jump is not None and jump["used"]
    trending = trend["pvalue"] < TREND_P and trend["r2"] >= TREND_R2 and not used
    pairs = Pairs(d, e, run["origins"], k, residuals)
    calibration = calibrate(pairs, level, "downstream", use_prior=False)
    if calibration.method == "prior":  # too few for the band: the backtest's own spread
        (a, b), _ = band(d, e, level)
        calibration.upper, calibration.lower, calibration.method = (a, b), (-a, b), "backtest"
        calibration.max_distance = float(d.max())
    calibration.factor = frontier_factor(level)
    if calibration.factor > 1:
        calibration.method += "×frontier"
    lo_off, hi_off = calibration.band(np.median(d))
    span = float(hi_off - lo_off)
    where = "" if jump is None else f"; {jump_text(jump, chain.via == 'compute')}"
    if mae >= constant_mae:
        predictable, reason = (
            False,
            f"backtest error {mae:.3g} is no better than a constant's {constant_mae:.3g}{where}",
        )
    elif span >= 1.0:
        predictable, reason = (
            False,
            f"refused: its {level:.0%} interval at the backtested distances is {span:.2f} wide, "
            f"all of [0, 1], so it says nothing (backtest error {mae:.3g}, a constant's "
            f"{constant_mae:.3g}){where}",
        )
    elif trending:
        predictable, reason = (
            False,
            (
                f"the link's residuals trend with {'the loss' if via == 'loss' else 'compute'} "
                f"(R² {trend['r2']:.2f}, p = {trend['pvalue']:.1g})"
            ),
        )
    else:
        predictable, reason = (
            True,
            (
                f"backtest error {mae:.3g} against a constant's {constant_mae:.3g} over "
                f"{e.size} extrapolations from {k} origins{where}"
            ),
        )
    names = {"exponential": ("E", "log_k", "gamma"), "sigmoid": ("b", "a", "k", "u0")}
    result = DownstreamFit(
        target=target,
        via=chain.via,
        link=chain.link,
        params=dict(zip(names[chain.link], map(float, chain.link_params))),
        predictable=predictable,
        reason=reason,
        backtest={
            "mae": mae,
            "constant_mae": constant_mae,
            "trend": trend,
            "origins": k,
            "pairs": int(e.size),
            "jump": jump,
            "interval_span": span,
        },
        calibration=calibration,
        n_points=int(x.shape[1]),
        _chain=chain,
        _x=x,
    )
    result._findings = [PREDICTABLE.evaluate(result)]
    return result


def _rolling(via, link, form, x, loss, err, delta, key, warm) -> dict[str, Any] | None:
    """The chain refitted at rolling origins by ``key`` and scored on the larger runs, beside
    the constant (the fitted runs' mean); None when no origin had enough runs."""
    from labcoat.scale.calibrate import distance

    lo, hi = float(key.min()), float(key.max())
    distances, errors, baseline, origin_ids = [], [], [], []
    k = 0
    for share in np.linspace(0.5, 0.9, N_ORIGINS):
        fitted = key <= lo + share * (hi - lo) + 1e-12
        if fitted.sum() < 6 or fitted.all():
            continue
        try:
            sub = _fit_chain(
                via, link, form, x[:, fitted], loss[fitted], err[fitted], delta, warm=warm
            )
        except InputError:
            continue
        target_rows = ~fitted
        predicted = sub.predict(x[:, target_rows])
        distances.append(distance(x[:, fitted], x[:, target_rows]))
        errors.append(err[target_rows] - predicted)
        baseline.append(err[target_rows] - err[fitted].mean())
        origin_ids.append(np.full(int(target_rows.sum()), k))
        k += 1
    if k == 0:
        return None
    e, base = np.concatenate(errors), np.concatenate(baseline)
    return {
        "d": np.concatenate(distances),
        "e": e,
        "base": base,
        "origins": np.concatenate(origin_ids),
        "k": k,
        "mae": float(np.mean(np.abs(e))),
        "constant_mae": float(np.mean(np.abs(base))),
    }


#: a jump: a sigmoid in log compute (or log x) whose 10–90 % rise spans at most this share of
#: the runs' log range, centred with JUMP_SIDE runs on each side, beating the smooth law's
#: BIC by JUMP_BIC and taller than JUMP_HEIGHT times its own residual SD
JUMP_WIDTH, JUMP_SIDE, JUMP_BIC, JUMP_HEIGHT = 0.5, 3, 10.0, 4.0


def find_jump(key: np.ndarray, err: np.ndarray, smooth: np.ndarray) -> dict[str, Any] | None:
    """A step in the metric inside the fitted runs, or None.

    A sigmoid ``b + a·σ(k·(u − u0))`` of ``u`` = log compute (log x) is fitted and compared
    with the smooth law's in-sample residuals ``smooth`` by BIC; it is a jump when it wins by
    :data:`JUMP_BIC`, rises over a narrow part of the runs' range and has runs on both sides."""
    n = err.size
    if n < 2 * JUMP_SIDE + 2:
        return None
    try:
        params = fit_link("sigmoid", key, err)
    except InputError:
        return None
    b, a, k, u0 = (float(v) for v in params)
    fitted = _sigmoid_link(params, key)
    sse_step = float(((err - fitted) ** 2).sum())
    sse_smooth = float((smooth**2).sum())
    tiny = 1e-12 * max(float((err**2).sum()), 1e-300)
    bic = lambda sse, p: n * np.log(max(sse, tiny) / n) + p * np.log(n)
    gain = float(bic(sse_smooth, 3) - bic(sse_step, 4))
    rise = 2 * np.log(9.0) / max(abs(k), 1e-12)  # log units from 10 % to 90 % of the step
    span = float(np.ptp(key)) or 1.0
    sides = min(int((key < u0).sum()), int((key > u0).sum()))
    noise = np.sqrt(sse_step / max(n - 4, 1))
    if (
        gain < JUMP_BIC
        or rise > JUMP_WIDTH * span
        or sides < JUMP_SIDE
        or abs(a) < JUMP_HEIGHT * noise
    ):
        return None
    return {
        "at": float(np.exp(u0)),
        "log_width": float(rise),
        "before": b if k > 0 else b + a,
        "after": b + a if k > 0 else b,
        "bic_gain": gain,
        "used": False,
        "params": params,
    }


def jump_text(jump: dict[str, Any], used: bool) -> str:
    """One clause saying where the jump is and what became of it."""
    text = (
        f"a jump inside the fitted runs at {jump['at']:.3g} (compute, or x): the error moves from "
        f"{jump['before']:.3g} to {jump['after']:.3g} within {jump['log_width']:.2f} log units"
    )
    return text + ("; the sigmoid through it is the law" if used else "")


def overtrain_backtest(path, *, verbose: bool = False, level: float = 0.95) -> dict[str, Any]:
    """The downstream backtest on Gadre et al.'s over-training grid (ColPret's
    ``overtrain_downstreams.csv``): fit every ``err_*`` task on the runs below the largest
    compute decade, predict the rest; count predictable tasks and score them."""
    import csv

    with open(path) as fh:
        rows = [r for r in csv.DictReader(fh) if r.get("loss_c4_val") and r.get("N")]
    N = np.array([float(r["N"]) for r in rows])
    D = np.array([float(r["D"]) for r in rows])
    L = np.array([float(r["loss_c4_val"]) for r in rows])
    compute = 6 * N * D
    held = compute >= np.quantile(compute, 0.85)
    tasks = [c for c in rows[0] if c.startswith("err_")]
    summary: dict[str, Any] = {"tasks": {}, "n_fit": int((~held).sum()), "n_held": int(held.sum())}
    for task in tasks:
        try:
            err = np.array([float(r[task]) for r in rows])
        except ValueError:
            continue
        if not np.all(np.isfinite(err)):
            continue
        try:
            fit = fit_downstream(
                N[~held], D[~held], L[~held], err[~held], target="error", level=level
            )
        except InputError as exc:
            summary["tasks"][task] = {"error": str(exc)}
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p = fit.predict(N[held], D[held])
        truth = err[held]
        covered = (truth >= p.interval[0]) & (truth <= p.interval[1])
        summary["tasks"][task] = {
            "predictable": fit.predictable,
            "mae": float(np.mean(np.abs(p.value - truth))),
            "constant_mae": float(np.mean(np.abs(err[~held].mean() - truth))),
            "coverage": float(covered.mean()),
            "width": float(np.median(p.interval[1] - p.interval[0])),
        }
    good = {k: v for k, v in summary["tasks"].items() if v.get("predictable")}
    bad = {k: v for k, v in summary["tasks"].items() if v.get("predictable") is False}
    summary["predictable"], summary["not_predictable"] = len(good), len(bad)
    if verbose:
        print(
            f"{len(tasks)} tasks; fitted on {summary['n_fit']} runs, held out the "
            f"{summary['n_held']} with the most compute; loss: loss_c4_val"
        )
        for label, group in (("predictable", good), ("not predictable", bad)):
            if not group:
                print(f"{label}: none")
                continue
            v = list(group.values())
            wins = sum(t["mae"] < t["constant_mae"] for t in v)
            print(
                f"{label:15s} {len(v):2d} tasks: held-out MAE median "
                f"{np.median([t['mae'] for t in v]):.4f} vs constant "
                f"{np.median([t['constant_mae'] for t in v]):.4f} (beats constant on {wins}/"
                f"{len(v)}); 95% interval coverage {np.mean([t['coverage'] for t in v]):.1%} "
                f"at median width {np.median([t['width'] for t in v]):.3f}"
            )
    return summary
