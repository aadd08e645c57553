"""Why a scaling fit may not deserve trust, as findings with their evidence.

Each check is declared once (what it falsifies, what a trustworthy fit predicts) and runs on a
:class:`~labcoat.scale.result.ScalingFit`. They warn rather than fail: a fit with a warning is
still the best fit to the data, but its extrapolation should be read with the warning beside it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from labcoat.findings import CheckRegistry, Finding, Outcome, passed, skipped, warned
from labcoat.scale.forms import CustomForm, PowerLawSum

CHECKS = CheckRegistry("scale", ["scale"])

POINTS_PER_PARAMETER = 5
MIN_LEVELS = 3  # distinct values of a variable needed to see curvature (and so E)
#: flat: a parameter's standard error from the noise-scaled Hessian above this share
MAX_RELATIVE_SE = 0.1
MIN_EXPONENT_SCALE = 0.05  # exponents nearer 0 are judged against this
MIN_EXPONENT = 0.01
MIN_FLOOR_SHARE = 0.05  # E below 5% of the lowest observed loss: "no irreducible loss"
TREND_P = 1e-3
TREND_R2 = 0.2
MAX_RUNS_SHARE = 0.6  # fewer sign runs than this share of the expected count, and significant


@CHECKS.check(
    "scale.points",
    layer="scale",
    severity="warn",
    falsifies="too few runs, or too few distinct sizes, to determine the parameters",
    predicts=(
        f"at least {POINTS_PER_PARAMETER} runs per parameter and {MIN_LEVELS}+ distinct values "
        "of each variable"
    ),
)
def _points(fit) -> Outcome:
    n, p = fit.n_points, len(fit.names)
    levels = {name: int(np.unique(v).size) for name, v in zip(fit.form.variables, fit._x)}
    few_levels = {k: v for k, v in levels.items() if v < MIN_LEVELS}
    evidence = dict(n_points=n, n_params=p, distinct_values=levels)
    if n < POINTS_PER_PARAMETER * p:
        return warned(
            f"{n} runs for {p} parameters (fewer than {POINTS_PER_PARAMETER} per parameter): the "
            "intervals are wide or unreliable; add runs before extrapolating",
            **evidence,
        )
    if few_levels:
        shown = ", ".join(f"{k} has {v}" for k, v in few_levels.items())
        return warned(
            f"{shown} distinct value(s): at least {MIN_LEVELS} are needed to separate the floor E "
            "from the power law; vary it more",
            **evidence,
        )
    return passed(f"{n} runs for {p} parameters; distinct values: {levels}", **evidence)


def _is_power_law(fit) -> str | None:
    return None if isinstance(fit.form, PowerLawSum) else "only for the power-law forms"


@CHECKS.check(
    "scale.grid_edge",
    layer="scale",
    severity="warn",
    falsifies="the optimum lies outside the grid of starts, so the grid may not have bracketed it",
    predicts="every fitted parameter inside the span of the initialisation grid",
    applies=_is_power_law,
)
def _grid_edge(fit) -> Outcome:
    lows, highs, steps = fit.form.grid_box()
    theta = fit.theta
    outside = (theta < lows - steps / 2) | (theta > highs + steps / 2)
    evidence = {
        name: {"value": float(theta[i]), "grid": [float(lows[i]), float(highs[i])]}
        for i, name in enumerate(fit.form.internal_names)
    }
    if outside.any():
        names = [fit.form.internal_names[i] for i in np.flatnonzero(outside)]
        shown = ", ".join(
            f"{n} = {evidence[n]['value']:.3g} (grid {evidence[n]['grid']})" for n in names
        )
        return warned(
            f"the fit ended outside the grid of starts: {shown}; the grid may not bracket the "
            "optimum, and such values often mean the form does not fit the data",
            outside=names,
            **evidence,
        )
    return passed("every parameter ended inside the span of the grid of starts", **evidence)


@CHECKS.check(
    "scale.bound",
    layer="scale",
    severity="warn",
    falsifies="a parameter at its natural bound: an exponent of 0 (no scaling) or a floor E of 0",
    predicts=(
        f"exponents above {MIN_EXPONENT} and a floor E above {MIN_FLOOR_SHARE:.0%} of the "
        "lowest loss"
    ),
    applies=_is_power_law,
)
def _bound(fit) -> Outcome:
    params = fit.params
    exponents = {k: params[k] for k in fit.form.exponents}
    floor_share = params["E"] / float(np.min(fit._loss))
    evidence = dict(exponents=exponents, E=params["E"], E_over_lowest_loss=floor_share)
    flat = [k for k, v in exponents.items() if v <= MIN_EXPONENT]
    along = ", ".join(fit.form.variables[fit.form.exponents.index(k)] for k in flat)
    if flat:
        rising = any(exponents[k] < 0 for k in flat)
        return warned(
            f"{', '.join(f'{k} = {exponents[k]:.3g}' for k in flat)}: the loss "
            + (
                f"rises with {along} in this fit (is a larger run worse?)"
                if rising
                else f"does not scale with {along} in this fit"
            )
            + "; extrapolating along it predicts no gain",
            at_bound=flat,
            **evidence,
        )
    if floor_share < MIN_FLOOR_SHARE:
        return warned(
            f"E = {params['E']:.3g}, {floor_share:.2%} of the lowest loss: the fit finds no "
            "irreducible loss, so extrapolation lets the loss fall toward 0; check the form, "
            "or that the runs reach the regime where the loss flattens",
            at_bound=["E"],
            **evidence,
        )
    return passed("no parameter at a bound", **evidence)


@CHECKS.check(
    "scale.flat",
    layer="scale",
    severity="warn",
    falsifies="a flat objective: some combination of parameters is not determined by the data",
    predicts=(
        f"the noise-scaled Hessian pins every parameter to within {MAX_RELATIVE_SE:.0%} "
        "(exponents relative to their value, coefficients as the law's level at the runs' mean "
        "size and E as a factor)"
    ),
)
def _flat(fit) -> Outcome:
    jac, names = _centred_jacobian(fit)
    residuals = fit.residuals
    noise = (
        stats.median_abs_deviation(residuals, scale="normal") or float(np.std(residuals)) or 1e-12
    )
    hessian = jac.T @ jac / noise**2  # Gauss–Newton, in units of the runs' own scatter
    scale = np.sqrt(np.diag(hessian))
    if not np.all(scale > 0):
        dead = [names[i] for i in np.flatnonzero(~(scale > 0))]
        return warned(
            f"the predictions do not depend on {', '.join(dead)} at the fit", insensitive=dead
        )
    eigenvalues, vectors = np.linalg.eigh(hessian / np.outer(scale, scale))
    condition = float(eigenvalues[-1] / max(eigenvalues[0], 1e-300))
    direction = {n: round(float(v), 3) for n, v in zip(names, vectors[:, 0])}
    with np.errstate(divide="ignore", invalid="ignore"):
        errors = np.sqrt(np.maximum(np.diag(np.linalg.pinv(hessian)), 0.0))
    relative = errors / _error_units(fit)
    evidence = dict(
        condition_number=condition,
        flattest_direction=direction,
        standard_errors={n: float(e) for n, e in zip(names, errors)},
        relative_errors={n: float(r) for n, r in zip(names, relative)},
        noise=float(noise),
    )
    loose = [names[i] for i in np.flatnonzero(~(relative <= MAX_RELATIVE_SE))]
    said = _said(fit)
    if loose or eigenvalues[0] <= 0:
        shown = ", ".join(f"{said.get(n, n)} ±{evidence['relative_errors'][n]:.0%}" for n in loose)
        return warned(
            f"the objective is nearly flat (curvature condition number {condition:.2g}): the runs "
            f"pin {shown} only; the data cannot tell those parameters apart, so widen the range "
            "of sizes and read the intervals, not the point estimates",
            **evidence,
        )
    worst = names[int(np.argmax(relative))]
    if isinstance(fit.form, CustomForm):
        pinned = f"every parameter pinned to within ±{relative.max():.1%} ({worst})"
    else:  # what was measured: the coefficients as the law's level at the runs' mean size
        k = len(fit.form.variables)
        levels, exps = relative[: k + 1], relative[k + 1 :]
        pinned = (
            f"the runs pin the law's level at their mean size (coefficients and E) to within "
            f"±{levels.max():.1%} and the exponents to within ±{exps.max():.1%}"
        )
    return passed(
        f"{pinned} (1 SE, from the objective's curvature; loosest: {said.get(worst, worst)}); "
        f"curvature condition number {condition:.2g}" + _coupled(fit),
        **evidence,
    )


def _said(fit) -> dict[str, str]:
    """How the check names a power law's internal parameters: a log coefficient is measured
    as the law's level at the runs' mean size (its column is centred there)."""
    if isinstance(fit.form, CustomForm):
        return {}
    names, internal = fit.form.names, fit.form.internal_names
    k = len(fit.form.variables)
    return {internal[j]: f"{names[j]} at the runs' mean size" for j in range(k)}


#: a coefficient whose 95% bootstrap interval spans more than this factor is named in the pass
COUPLED_FACTOR = 1.5


def _coupled(fit) -> str:
    """The coefficients whose own interval is wide although the level is pinned: each is the
    law's value at size 1, far outside the runs, and moves with its exponent."""
    if isinstance(fit.form, CustomForm) or len(fit.bootstrap_theta) < 20:
        return ""
    k = len(fit.form.variables)
    names = fit.form.names
    ci = fit.confidence_interval(0.95)
    wide = []
    for j in range(k):
        low, high = ci[names[j]]
        if low > 0 and high / low > COUPLED_FACTOR:
            wide.append(
                f"{names[j]}'s own 95% interval spans a factor {high / low:.3g} (it moves with "
                f"{names[k + 1 + j]})"
            )
    if not wide:
        return ""
    return (
        f"; {'; '.join(wide)}: a coefficient is the law at size 1, outside the runs, so read "
        "predictions within the runs' range, not the coefficient"
    )


def _error_units(fit) -> np.ndarray:
    """What a standard error is compared with: log coefficients (and log E) as they are, a
    factor; exponents and a custom form's parameters relative to their size."""
    theta = fit.theta
    if not isinstance(fit.form, PowerLawSum):
        return np.maximum(np.abs(theta), 1e-12)
    k = len(fit.form.variables)
    units = np.ones_like(theta)
    units[k + 1 :] = np.maximum(np.abs(theta[k + 1 :]), MIN_EXPONENT_SCALE)
    return units


def _centred_jacobian(fit) -> tuple[np.ndarray, list[str]]:
    """d log L̂ / d parameters at each point. For the power laws each log coefficient is
    taken at the data's mean log size, so the trivial a–α coupling (log x far from 0) does
    not pass for flatness; a user's form gets central differences in its own parameters."""
    form, theta, x = fit.form, fit.theta, fit._x
    if not isinstance(form, PowerLawSum):
        cols = []
        for i in range(theta.size):
            h = 1e-5 * max(abs(theta[i]), 1e-3)
            up, down = theta.copy(), theta.copy()
            up[i] += h
            down[i] -= h
            cols.append((form.log_predict(up, x)[0] - form.log_predict(down, x)[0]) / (2 * h))
        return np.column_stack(cols), list(form.names)
    k = len(form.variables)
    logx = np.log(x)
    exponents = [theta[j] - theta[k + 1 + j] * logx[j] for j in range(k)]
    stacked = np.vstack([*exponents, np.full(logx.shape[1], theta[k])])
    weights = np.exp(stacked - stacked.max(axis=0))
    weights /= weights.sum(axis=0)
    cols = [weights[j] for j in range(k)] + [weights[k]]
    cols += [-weights[j] * (logx[j] - logx[j].mean()) for j in range(k)]
    return np.column_stack(cols), list(form.internal_names)


@CHECKS.check(
    "scale.residuals",
    layer="scale",
    severity="warn",
    falsifies="the form misses the shape of the data: residuals that drift or wave with a variable",
    predicts=(
        "residuals ordered by each variable change sign as often as noise does (runs test) and "
        f"show no linear or quadratic trend (p ≥ {TREND_P:g} or R² < {TREND_R2})"
    ),
)
def _residual_trend(fit) -> Outcome:
    residuals = fit.residuals
    n = residuals.size
    if n < 8:
        return skipped(f"{n} runs are too few to test the residuals for a trend")
    logx = np.log(fit._x)
    trends = {}
    for j, name in enumerate(fit.form.variables):
        if np.unique(logx[j]).size < 3:
            continue
        order = np.lexsort(
            (*np.delete(logx, j, axis=0), logx[j])
        )  # by this variable, ties by the rest
        trends[name] = {**polynomial_trend(logx[j], residuals), **_runs(residuals[order])}
    drifting = [
        k
        for k, t in trends.items()
        if (t["pvalue"] < TREND_P and t["r2"] >= TREND_R2)
        or (t["runs_pvalue"] < TREND_P and t["runs"] < MAX_RUNS_SHARE * t["runs_expected"])
    ]
    if drifting:
        shown = ", ".join(
            f"log {k} (R² {trends[k]['r2']:.2f}; {trends[k]['runs']} sign runs where noise gives "
            f"{trends[k]['runs_expected']:.0f}, "
            f"p = {min(trends[k]['pvalue'], trends[k]['runs_pvalue']):.1g})"
            for k in drifting
        )
        return warned(
            f"the residuals follow {shown}: the form misses the shape of the data, so "
            "extrapolating along it will be biased",
            trends=trends,
        )
    return passed(
        "no trend of the residuals in " + ", ".join(f"log {k}" for k in trends), trends=trends
    )


def _chose(fit) -> str | None:
    return None if fit.selection else "only for form='auto'"


@CHECKS.check(
    "scale.choice",
    layer="scale",
    severity="warn",
    falsifies="form='auto' had the evidence to choose its form",
    predicts="at least two candidates backtested from 3 or more rolling origins each",
    applies=_chose,
)
def _choice(fit) -> Outcome:
    sel = fit.selection
    evidence = {
        "chosen": sel["chosen"],
        "origins": sel.get("origins", {}),
        "refused": sel.get("refused", {}),
        "weights": sel.get("weights", {}),
    }
    if sel.get("evidence") == "thin":
        return warned(
            f"form='auto' could not choose: {sel['why']}; its prediction is that average, not a "
            "backtested choice among forms. Add runs at more sizes, or name the form you expect",
            **evidence,
        )
    return passed(f"form='auto' chose {sel['chosen']} on its backtests: {sel['why']}", **evidence)


def polynomial_trend(values: np.ndarray, residuals: np.ndarray) -> dict[str, float]:
    """R² and F-test p-value of residuals on (z, z²), outliers clipped at 3 robust SDs."""
    n = residuals.size
    mad = stats.median_abs_deviation(residuals, scale="normal") or np.std(residuals) or 1.0
    middle = np.median(residuals)
    clipped = np.clip(residuals, middle - 3 * mad, middle + 3 * mad)
    z = (values - values.mean()) / values.std()
    design = np.column_stack([np.ones(n), z, z * z])
    coef, *_ = np.linalg.lstsq(design, clipped, rcond=None)
    total = float(((clipped - clipped.mean()) ** 2).sum())
    left = float(((clipped - design @ coef) ** 2).sum())
    r2 = 1 - left / total if total > 0 else 0.0
    f_stat = (r2 / 2) / max((1 - r2) / (n - 3), 1e-300)
    return {"r2": r2, "pvalue": float(stats.f.sf(f_stat, 2, n - 3))}


def _runs(ordered: np.ndarray) -> dict[str, float]:
    """Wald–Wolfowitz runs test on the signs about the median: too few runs means waves."""
    signs = np.sign(ordered - np.median(ordered))
    signs = signs[signs != 0]
    n1, n2 = int((signs > 0).sum()), int((signs < 0).sum())
    n = n1 + n2
    if n1 == 0 or n2 == 0:
        return {"runs": 1, "runs_expected": 1.0, "runs_pvalue": 1.0}
    runs = int(1 + np.count_nonzero(signs[1:] != signs[:-1]))
    expected = 2 * n1 * n2 / n + 1
    variance = 2 * n1 * n2 * (2 * n1 * n2 - n) / (n * n * (n - 1))
    z = (runs - expected) / np.sqrt(variance) if variance > 0 else 0.0
    return {"runs": runs, "runs_expected": expected, "runs_pvalue": float(stats.norm.cdf(z))}


def data_fingerprint(fit) -> dict[str, Any]:
    """Content fingerprint of the runs a fit saw (inputs and losses, in order)."""
    from labcoat.ledger import fingerprint

    table = np.vstack([fit._x, fit._loss[None]]).T.copy()
    return fingerprint(table, name="scale.data").to_dict()


def summary_outcome(fit) -> Outcome:
    """What the ``scale.fit`` check reports: the parameters, their intervals and the data's
    fingerprint."""
    evidence: dict[str, Any] = {
        "form": fit.form.name,
        "params": fit.params,
        "objective": fit.objective,
        "n_points": fit.n_points,
        "huber_delta": fit.huber_delta,
        "bootstrap": len(fit.bootstrap_theta),
        "seed": fit.seed,
        "data": data_fingerprint(fit),
    }
    if len(fit.bootstrap_theta) >= 2:
        evidence["ci95"] = {k: list(v) for k, v in fit.confidence_interval(0.95).items()}
    shown = ", ".join(f"{k}={v:.4g}" for k, v in fit.params.items())
    message = f"{fit.form.name} fit on {fit.n_points} runs: {shown}"
    return Outcome("warn" if fit.warnings else "pass", message, evidence)


#: the fit itself, declared like its diagnostics: a later run outside its intervals falsifies
#: it. It is stored with the fit (:meth:`ScalingFit.record`), not run among the diagnostics.
CHECKS.check(
    "scale.fit",
    layer="scale",
    severity="warn",
    falsifies="the scaling law fitted to these runs",
    predicts="later runs fall inside the fit's prediction intervals",
)(summary_outcome)
FIT = CHECKS["scale.fit"]


def diagnose(fit) -> list[Finding]:
    """Every diagnostic check's finding for ``fit``, in declaration order."""
    return [check.evaluate(fit) for check in CHECKS if check is not FIT]
