"""What a scaling fit returns: parameters with bootstrap intervals, predictions, allocations.

Plain objects with named fields and ``to_dict()``; rendering lives in :mod:`labcoat.scale.view`.
Intervals come from the bootstrap refits kept on the fit, so the caller picks the level after
fitting (``fit.confidence_interval(0.9)``) and nothing is refitted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from labcoat._jsonable import jsonable
from labcoat._validation import fail, warn_deprecated
from labcoat.errors import InputError
from labcoat.findings import Finding
from labcoat.interval import ConfidenceInterval
from labcoat.result import Result
from labcoat.scale.forms import CustomForm, PowerLawSum

#: prediction intervals pair bootstrap laws with observed residuals; at most this many pairs
MAX_PAIRS = 20_000


INTERVALS = ("calibrated", "bootstrap")


class FromFit(Result):
    """An answer a fit gives (a prediction, an allocation): its ``to_dict()`` carries the
    fit's parameters, warnings and findings beside the answer, so ``labcoat scale predict
    --json`` is one result's ``to_dict()``; ``findings`` are the fit's diagnostics."""

    engine = "scale"
    section = "labcoat.report.sections.scale:answer_section"
    fit: Any

    @property
    def findings(self) -> list[Finding]:
        return [] if self.fit is None else list(self.fit.findings)

    def _with_fit(self, answer: dict[str, Any]) -> dict[str, Any]:
        if self.fit is None:
            return jsonable(answer)
        return jsonable(
            {
                **answer,
                "params": self.fit.params,
                "warnings": [f.message for f in self.fit.warnings],
                "findings": [f.to_dict() for f in self.findings],
            }
        )


@dataclass
class Prediction(FromFit):
    """Predicted loss at each point, with the law's confidence interval (bootstrap) and a
    prediction interval for one new run: ``method="calibrated"`` from the fit's own
    extrapolation errors against distance (:mod:`labcoat.scale.calibrate`), or
    ``"bootstrap"``, the law's uncertainty plus the scatter of runs around it."""

    KIND = "scale.prediction"
    view = "labcoat.scale.view:prediction_view"
    title = "Predicted loss"

    points: dict[str, np.ndarray]  # the inputs, by variable name
    loss: np.ndarray
    ci: tuple[np.ndarray, np.ndarray] | None
    interval: tuple[np.ndarray, np.ndarray] | None
    level: float
    method: str = "bootstrap"
    distance: np.ndarray | None = None  # log distance beyond the fitted runs
    calibration: dict[str, Any] | None = None  # how the interval was calibrated, its coverage
    #: calibrated, with seeds at a size: the interval for the mean of the seeds (``interval``
    #: is for one new run and adds the seeds' own spread); None when no size had replicates
    mean_interval: tuple[np.ndarray, np.ndarray] | None = None
    fit: Any = field(default=None, repr=False)  # the ScalingFit it came from

    def covers(self, observed: Any) -> np.ndarray:
        """Whether each observed loss lies inside its prediction interval."""
        if self.interval is None:
            raise InputError("covers: this prediction has no interval; fit with bootstrap > 0")
        observed = np.asarray(observed, dtype=float)
        return (observed >= self.interval[0]) & (observed <= self.interval[1])

    def verdict(self, observed: float) -> str:
        """The ledger verdict for a single observed loss: inside the interval confirms."""
        return "confirmed" if bool(self.covers([observed])[0]) else "refuted"

    def rows(self) -> list[dict[str, Any]]:
        out = []
        for i in range(len(self.loss)):
            row: dict[str, Any] = {name: float(v[i]) for name, v in self.points.items()}
            row["loss"] = float(self.loss[i])
            row["ci"] = None if self.ci is None else [float(self.ci[0][i]), float(self.ci[1][i])]
            row["interval"] = (
                None
                if self.interval is None
                else [float(self.interval[0][i]), float(self.interval[1][i])]
            )
            if self.distance is not None:
                row["distance"] = float(self.distance[i])
            if self.mean_interval is not None:
                row["mean_interval"] = [
                    float(self.mean_interval[0][i]),
                    float(self.mean_interval[1][i]),
                ]
            out.append(row)
        return out

    def to_dict(self) -> dict[str, Any]:
        return self._with_fit(
            {
                "level": self.level,
                "method": self.method,
                "calibration": self.calibration,
                "predictions": self.rows(),
            }
        )


@dataclass
class Allocation(FromFit):
    """Compute-optimal model size and data for each FLOP budget (C ≈ 6·N·D), with intervals."""

    KIND = "scale.allocation"
    view = "labcoat.scale.view:allocation_view"
    title = "Compute-optimal allocation"

    flops: np.ndarray
    N: np.ndarray
    D: np.ndarray
    loss: np.ndarray
    intervals: dict[str, tuple[np.ndarray, np.ndarray]] | None
    level: float
    fit: Any = field(default=None, repr=False)  # the ScalingFit it came from

    @property
    def tokens_per_parameter(self) -> np.ndarray:
        return self.D / self.N

    def rows(self) -> list[dict[str, Any]]:
        out = []
        for i in range(len(self.flops)):
            row: dict[str, Any] = {
                "flops": float(self.flops[i]),
                "N": float(self.N[i]),
                "D": float(self.D[i]),
                "loss": float(self.loss[i]),
                "tokens_per_parameter": float(self.tokens_per_parameter[i]),
            }
            for name, (lo, hi) in (self.intervals or {}).items():
                row[f"{name}_interval"] = [float(lo[i]), float(hi[i])]
            out.append(row)
        return out

    def to_dict(self) -> dict[str, Any]:
        return self._with_fit({"level": self.level, "optimal": self.rows()})


@dataclass
class ScalingFit(Result):
    """A fitted scaling law: ``params``, bootstrap ``ci(level)`` and ``covariance``,
    ``predict``, ``optimal`` (Chinchilla form) and diagnostics as ``findings``."""

    KIND = "scale.fit"

    engine = "scale"
    view = "labcoat.scale.view:fit_view"
    section = "labcoat.report.sections.scale:scale_section"
    title = "Scaling law"

    form: PowerLawSum | CustomForm
    params: dict[str, float]
    objective: float
    n_points: int
    huber_delta: float
    seed: int
    theta: np.ndarray  # internal parameters (log coefficients for the power laws)
    bootstrap_theta: np.ndarray  # (K, P) internal parameters of the refits
    n_starts: int
    start: np.ndarray
    converged: bool
    findings: list[Finding] = field(default_factory=list)
    ledger: dict[str, Any] | None = None  # where the fit was recorded, if it was
    selection: dict[str, Any] | None = None  # form="auto": each candidate's backtest error
    _x: np.ndarray = field(default=None, repr=False)  # (k, n) inputs of the fit
    _loss: np.ndarray = field(default=None, repr=False)
    _pairs: Any = field(default=None, repr=False)  # rolling-origin errors, computed once
    _calibrations: dict = field(default_factory=dict, repr=False)
    #: form="auto": the other forms the backtest could not tell apart (name -> parameters)
    _alternatives: dict = field(default_factory=dict, repr=False)
    #: the level ``fit(level=...)`` was asked for: ``to_dict()``'s intervals are at it
    level: float = 0.95

    def backtest_pairs(self):
        """Rolling-origin errors of this form on these runs (refits at each origin; cached)."""
        if self._pairs is None:
            from labcoat.scale.calibrate import rolling_pairs

            self._pairs = rolling_pairs(
                self.form, self._x, self._loss, self.huber_delta, self.theta
            )
        return self._pairs

    def calibration(self, level: float = 0.95):
        """The calibrated band of extrapolation errors at ``level`` (see
        :mod:`labcoat.scale.calibrate`): from this fit's rolling-origin backtests, or from the
        shipped prior when the runs are too few."""
        _quantiles(np.zeros(2), level, axis=0)  # checks the level
        if level not in self._calibrations:
            from labcoat.scale.calibrate import calibrate

            self._calibrations[level] = calibrate(self.backtest_pairs(), level, self.form.name)
        return self._calibrations[level]

    @property
    def names(self) -> tuple[str, ...]:
        return self.form.names

    @property
    def bootstrap(self) -> np.ndarray:
        """Published parameters of every bootstrap refit, shape (K, P), columns ``names``."""
        return (
            self.form.natural(self.bootstrap_theta)
            if len(self.bootstrap_theta)
            else np.empty((0, len(self.names)))
        )

    @property
    def residuals(self) -> np.ndarray:
        """``log L − log L̂`` at the fitted points."""
        return np.log(self._loss) - self.form.log_predict(self.theta, self._x)[0]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.status in ("warn", "fail")]

    def _need_bootstrap(self, what: str) -> None:
        if len(self.bootstrap_theta) < 2:
            raise InputError(
                f"{what}: this fit has no bootstrap refits; fit again with n_resamples=1000 "
                "(or at least 2)"
            )

    def confidence_interval(self, level: float = 0.95) -> dict[str, ConfidenceInterval]:
        """Percentile bootstrap interval of each parameter (``confidence_interval(level)``, as
        on every stats result; ``ci`` is the interval at the result's level elsewhere)."""
        self._need_bootstrap("confidence_interval")
        lo, hi = _quantiles(self.bootstrap, level, axis=0)
        return {
            name: ConfidenceInterval(float(lo[i]), float(hi[i]))
            for i, name in enumerate(self.names)
        }

    def ci(self, level: float = 0.95) -> dict[str, ConfidenceInterval]:
        """Deprecated: :meth:`confidence_interval` (``ci`` is a property on every other
        result)."""
        warn_deprecated("ScalingFit.ci(level)", "ScalingFit.confidence_interval(level)")
        return self.confidence_interval(level)

    @property
    def covariance(self) -> np.ndarray:
        """Bootstrap covariance of the published parameters, rows and columns ``names``."""
        self._need_bootstrap("covariance")
        return np.cov(self.bootstrap, rowvar=False)

    @property
    def correlation(self) -> np.ndarray:
        self._need_bootstrap("correlation")
        return np.corrcoef(self.bootstrap, rowvar=False)

    def predict(
        self, N: Any, D: Any = None, *, level: float = 0.95, interval: str = "calibrated"
    ) -> Prediction:
        """Loss at ``(N, D)`` (or at ``x`` for one-variable forms) with its intervals.

        ``interval="calibrated"`` (default): the prediction interval comes from this fit's own
        extrapolation errors against log distance, and widens with distance; a point farther
        than any distance the calibration saw raises an
        :class:`~labcoat.scale.calibrate.ExtrapolationWarning`. ``interval="bootstrap"``: the
        bootstrap refits plus the residual scatter (needs ``bootstrap > 0``). ``ci`` is the
        law's bootstrap interval either way. With ``form="auto"``, the calibrated point is the
        evidence-weighted mean of the forms the backtest could not tell apart
        (:func:`~labcoat.scale.calibrate.combine`); ``ci`` stays the chosen form's.
        """
        from labcoat.scale.calibrate import distance, warn_if_beyond
        from labcoat.scale.data import as_points

        if interval not in INTERVALS:
            raise fail("interval", "'calibrated' or 'bootstrap'", interval)
        x = as_points(N, D, self.form)
        center = self.form.log_predict(self.theta, x)[0]
        far = distance(self._x, x)
        ci = band = calibration = mean_band = None
        if len(self.bootstrap_theta) >= 2:
            laws = self.form.log_predict(self.bootstrap_theta, x)  # (K, m)
            ci = tuple(np.exp(q) for q in _quantiles(laws, level, axis=0))
            if interval == "bootstrap":
                band = tuple(np.exp(q) for q in self._prediction_quantiles(laws, level))
        if interval == "calibrated":
            from labcoat.scale.calibrate import combine

            calibrated = self.calibration(level)
            calibration = calibrated.to_dict()
            predictions = {self.form.name: center}
            weights = None
            if self._alternatives:
                from labcoat.scale.curves import CURVES

                for name, theta in self._alternatives.items():
                    predictions[name] = CURVES[name].log_predict(theta, x)[0]
                calibration["form_choice"] = sorted(self._alternatives)
                weights = (self.selection or {}).get("weights")
            point, lo, hi = combine(predictions, weights, calibrated, far, new_run=True)
            band = (np.exp(lo), np.exp(hi))
            if calibrated.pairs is not None and calibrated.pairs.seed_df > 0:
                _, lo, hi = combine(predictions, weights, calibrated, far)
                mean_band = (np.exp(lo), np.exp(hi))
            center = point
            warn_if_beyond(calibrated, far)
        points = dict(zip(self.form.variables, x))
        return Prediction(
            points, np.exp(center), ci, band, level, interval, far, calibration, mean_band, self
        )

    def _prediction_quantiles(
        self, laws: np.ndarray, level: float
    ) -> tuple[np.ndarray, np.ndarray]:
        residuals = self.residuals
        k, n = laws.shape[0], residuals.size
        if k * n <= MAX_PAIRS:
            law_idx, res_idx = np.divmod(np.arange(k * n), n)
        else:
            rng = np.random.default_rng(self.seed)
            law_idx, res_idx = rng.integers(0, k, MAX_PAIRS), rng.integers(0, n, MAX_PAIRS)
        draws = laws[law_idx] + residuals[res_idx, None]  # (pairs, m)
        return _quantiles(draws, level, axis=0)

    def optimal(self, flops: Any, *, level: float = 0.95) -> Allocation:
        """Compute-optimal N and D for each budget, minimising the fitted loss along C = 6·N·D."""
        if not (isinstance(self.form, PowerLawSum) and self.form.name == "chinchilla"):
            raise InputError(
                "optimal: needs form='chinchilla' (loss in N and D); "
                f"this fit is {self.form.name!r}"
            )
        from labcoat.scale.data import as_positive

        budget = as_positive(flops, "flops")
        N, D, loss = _allocation(self.form.natural(self.theta)[0], budget)
        intervals = None
        if len(self.bootstrap_theta) >= 2:
            boot = [_allocation(row, budget) for row in self.bootstrap]
            intervals = {
                name: _quantiles(np.array([b[j] for b in boot]), level, axis=0)
                for j, name in enumerate(("N", "D", "loss"))
            }
        return Allocation(budget, N, D, loss, intervals, level, self)

    def to_dict(self, level: float | None = None) -> dict[str, Any]:
        """The fit's figures, its intervals at ``level`` (None: the fit's ``level``)."""
        level = self.level if level is None else level
        has_boot = len(self.bootstrap_theta) >= 2
        return jsonable(
            {
                "form": self.form.name,
                "params": self.params,
                "ci": {k: list(v) for k, v in self.confidence_interval(level).items()}
                if has_boot
                else None,
                "level": level,
                "covariance": {"names": list(self.names), "matrix": self.covariance}
                if has_boot
                else None,
                "n_points": self.n_points,
                "objective": self.objective,
                "huber_delta": self.huber_delta,
                "bootstrap": len(self.bootstrap_theta),
                "seed": self.seed,
                "starts": self.n_starts,
                "converged": self.converged,
                "warnings": [f.message for f in self.warnings],
                "findings": [f.to_dict() for f in self.findings],
                "ledger": self.ledger,
                "selection": self.selection,
                "calibration": self._calibrations[level].to_dict()
                if level in self._calibrations
                else None,
            }
        )

    def findings_to_store(self, name: str = "") -> list[Finding]:
        """The fit itself (the ``scale.fit`` finding), then its diagnostics."""
        from labcoat.scale.record import summary_finding

        return [summary_finding(self), *self.findings]

    def record_prediction(self, N: Any, D: Any = None, *, ledger: Any = None, level: float = 0.95):
        """Write this fit's prediction for one planned run to the ledger as a hypothesis, so
        the run can be checked against it later; returns ``(entry, prediction)``."""
        from labcoat.scale.record import record_prediction

        return record_prediction(self, N, D, ledger=ledger, level=level)


def _allocation(params: np.ndarray, flops: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Closed form of Hoffmann et al. (2022), Eq. 4: N_opt = G·(C/6)^(β/(α+β))."""
    A, B, E, alpha, beta = params
    with np.errstate(all="ignore"):
        G = (alpha * A / (beta * B)) ** (1.0 / (alpha + beta))
        N = G * (flops / 6.0) ** (beta / (alpha + beta))
        D = flops / (6.0 * N)
        loss = E + A * N**-alpha + B * D**-beta
    return N, D, loss


def _quantiles(values: np.ndarray, level: float, axis: int) -> tuple[np.ndarray, np.ndarray]:
    if not 0 < level < 1:
        raise fail("level", "a confidence level strictly between 0 and 1, such as 0.95", level)
    tail = (1 - level) / 2
    lo, hi = np.nanquantile(values, [tail, 1 - tail], axis=axis)
    return lo, hi
