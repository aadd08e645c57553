"""``labcoat.scale.fit`` and ``labcoat.scale.backtest``."""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

from labcoat._validation import N_JOBS, PROBABILITY, Interval, Seed, renamed, validate_params
from labcoat.errors import InputError
from labcoat.scale.data import training_data
from labcoat.scale.diagnostics import diagnose
from labcoat.scale.forms import resolve_form
from labcoat.scale.result import ScalingFit
from labcoat.scale.search import bootstrap_counts, bootstrap_refits, grid_search


@renamed(bootstrap="n_resamples")
@validate_params(
    {
        "huber_delta": (Interval(float, 0.0, low_open=True), "The replication uses 1e-3."),
        "n_resamples": (Interval(int, 0), "It counts resamples (e.g. 1000)."),
        "seed": Seed(),
        "n_jobs": N_JOBS,
        "level": PROBABILITY,
    }
)
def fit(
    N: Any,
    D: Any,
    L: Any,
    *,
    form: str | Callable[..., Any] = "chinchilla",
    huber_delta: float = 1e-3,
    n_resamples: int = 1000,
    seed: int = 0,
    p0: Mapping[str, Any] | None = None,
    n_jobs: int | None = None,
    ledger: Any = None,
    target: str = "loss",
    metric: Any = None,
    via: str = "loss",
    link: str = "exponential",
    level: float = 0.95,
) -> Any:
    """Fit a scaling law with the replication's recipe and bootstrap its uncertainty.

    ``form``: ``"chinchilla"`` (L = E + A/N^α + B/D^β), ``"curve"`` (L = E + A/x^α, pass
    ``D=None``), a learning-curve form of one variable (``"m1"``…``"m4"``, ``"broken"``: see
    :mod:`labcoat.scale.curves`), ``"auto"`` (the learning-curve form with the lowest
    rolling-origin backtest error on these runs; ``fit.selection`` says which and why, and which
    candidates it could not tell apart) or a
    function ``f(N, D, **params)`` / ``f(x, **params)`` with ``p0`` (initial guesses, a value
    or a list of values per parameter). Huber loss (``huber_delta``) on log
    loss, every grid start, best final objective wins; ``n_resamples`` bootstrap resamples of
    the runs are refitted from the full fit (``n_jobs`` as in joblib; None: in parallel where
    it pays).
    ``ledger``: a :class:`labcoat.Ledger` or path to record the fit in; None records in the
    project's ledger only if one exists; False records nowhere.

    ``target="accuracy"`` or ``"error"`` fits a downstream ``metric`` (one value in [0, 1] per
    run) instead: through the loss law and a ``link`` (``"exponential"``, Gadre et al. 2024;
    ``"sigmoid"``, OLMo ladder) or, with ``via="compute"``, against compute directly; returns a
    :class:`~labcoat.scale.downstream.DownstreamFit` whose verdict says whether the task is
    predictable from these runs, with intervals calibrated at ``level``. With ``form="auto"``,
    ``level`` is also the level at which the candidates the backtest cannot tell apart from the
    chosen form are found; ``predict`` then gives their evidence-weighted mean, its band
    widened by their weighted spread (:func:`labcoat.scale.calibrate.combine`). A loss fit's
    ``to_dict()`` gives its intervals at ``level``.
    """
    if target != "loss":
        from labcoat.scale.downstream import fit_downstream

        if metric is None:
            raise InputError(
                f"metric: target={target!r} needs the downstream metric, one value per run "
                "(metric=...)"
            )
        return fit_downstream(
            N,
            D,
            L,
            metric,
            target=target,
            via=via,
            link=link,
            level=level,
            huber_delta=huber_delta,
        )
    selection = pairs = None
    alternatives: dict[str, Any] = {}
    if isinstance(form, str) and form == "auto":
        chosen, selection, pairs, alternatives = choose_form(
            N, D, L, float(huber_delta), p0, level=level
        )
    else:
        chosen = resolve_form(form, p0, 1 if D is None else 2)
    x, loss = training_data(N, D, L, chosen)
    best = grid_search(chosen, x, loss, float(huber_delta))
    refits = np.empty((0, best.theta.size))
    if n_resamples:
        counts = bootstrap_counts(loss.size, int(n_resamples), seed)
        refits = bootstrap_refits(chosen, best.theta, x, loss, float(huber_delta), counts, n_jobs)
    result = ScalingFit(
        form=chosen,
        params=dict(zip(chosen.names, map(float, chosen.natural(best.theta)[0]))),
        objective=best.objective,
        n_points=int(loss.size),
        huber_delta=float(huber_delta),
        seed=int(seed),
        theta=best.theta,
        bootstrap_theta=refits,
        n_starts=best.n_starts,
        start=best.start,
        converged=best.converged,
        selection=selection,
        _x=x,
        _loss=loss,
        _pairs=pairs,
        _alternatives=alternatives,
        level=level,
    )
    result.findings = diagnose(result)
    from labcoat.ledger import Ledger, record

    notebook = Ledger.for_recording(ledger)
    if notebook is not None:
        result.ledger = {"location": notebook.location, "findings": record(result, notebook)}
    return result


def choose_form(N: Any, D: Any, L: Any, delta: float, p0: Any, level: float = 0.95):
    """``form="auto"``: every learning-curve candidate backtested from rolling origins on these
    runs; the lowest RMSE of log loss over the extrapolations of the later half of the origins
    wins (ties: the simpler form). On 21 ColPret curves (the last quarter held out) that choice
    matched the best single form, where the RMSE over every origin lost 22 % to it."""
    from labcoat.scale.calibrate import rolling_pairs
    from labcoat.scale.curves import AUTO_CANDIDATES, CURVES

    if D is not None:
        raise InputError(
            "form: 'auto' chooses among learning-curve forms of one variable; pass D=None "
            "(or form='chinchilla' for loss in N and D)"
        )
    if p0 is not None:
        raise InputError("p0: form='auto' starts each candidate from the data; p0 is for callables")
    x, loss = training_data(N, None, L, CURVES["m1"])
    scores: dict[str, float] = {}
    found: dict[str, Any] = {}
    thetas: dict[str, np.ndarray] = {}
    sizes = np.unique(x[0]).size  # seeds at one size are one point of the curve
    for name in AUTO_CANDIDATES:
        form = CURVES[name]
        if sizes < len(form.names) + 1:
            continue
        thetas[name] = grid_search(form, x, loss, delta).theta
        found[name] = rolling_pairs(form, x, loss, delta, thetas[name])
        scores[name] = found[name].late_rmse
    selection = select_form(found, level)
    selection["backtest_rmse"] = scores
    name, plausible = selection["chosen"], selection["indistinguishable"]
    alternatives = {k: thetas[k] for k in plausible}
    return CURVES[name], selection, found.get(name), alternatives


def select_form(found: Mapping[str, Any], level: float) -> dict[str, Any]:
    """``form="auto"``'s choice from each candidate's rolling-origin pairs: the forms refused
    (a floor above runs already seen), the winner (or the rule, where the evidence is thin),
    the forms it cannot tell apart with their evidence weights, and why, in words. The one
    rule the benchmarks score too."""
    from labcoat.scale import calibrate
    from labcoat.scale.calibrate import choice_weights, plausible_forms, supported, thin_weights
    from labcoat.scale.curves import AUTO_CANDIDATES

    refused = floors_above_runs(found)
    usable = {k: v for k, v in found.items() if k not in refused} or dict(found)
    name, why, thin = pick_form(usable)
    ratio = float("nan")
    if thin:  # no backtest evidence to tell the forms apart: the stated rule
        weights = thin_weights(usable)
        if calibrate.THIN_RULE == "rule":
            why += f"; {name} by rule (the simplest form with a floor), not by evidence"
        else:
            name = max(weights, key=lambda k: (weights[k], -AUTO_CANDIDATES.index(k)))
            unsupported = [k for k in usable if k not in supported(usable)]
            how = {
                "partial": "by the rolling origins they have (alike where none has one)",
                "aicc": "by AICc on the sizes' means",
            }.get(calibrate.THIN_RULE, "alike")
            why += (
                f"; the prediction averages the forms the sizes support, weighted {how}, not a "
                f"choice; the band is {name}'s (the heaviest)"
                + (
                    f"; {', '.join(unsupported)} left out (more parameters than the sizes support)"
                    if unsupported
                    else ""
                )
            )
        plausible = [k for k in usable if k != name and weights[k] > 0]
        weights = {k: weights[k] for k in (name, *plausible)}
    else:
        plausible, ratio = plausible_forms(usable, name, level)
        weights = choice_weights(usable, name, plausible)
    if refused:
        why += "; refused " + ", ".join(
            f"{k} (an origin's refit put its floor {v:.1%} above the later runs' loss, beyond "
            "their scatter)"
            for k, v in refused.items()
        )
    if plausible:
        shown = ", ".join(f"{k} {weights[k]:.2f}" for k in plausible)
        why += (
            (
                f"; {', '.join(plausible)} cannot be told from it"
                if thin
                else f"; {', '.join(plausible)} within ×{ratio:.3g} of it (not worse by the "
                f"backtest at {level:.0%})"
            )
            + (
                ": the interval covers their predictions too"
                if calibrate.CHOICE_BAND == "union"
                else ": the interval widens by their predictions' spread weighted by evidence"
            )
            + (
                ", and the point is their evidence-weighted mean"
                if calibrate.CHOICE_POINT == "stacked"
                else ""
            )
            + f" (evidence: {name} {weights[name]:.2f}, {shown})"
        )
    return {
        "chosen": name,
        "why": why,
        "evidence": "thin" if thin else "backtest",
        "origins": {k: v.n_origins for k, v in found.items()},
        "refused": refused,
        "indistinguishable": plausible,
        "indistinguishable_within": ratio,
        "weights": weights,
    }


#: a candidate whose refit at a later origin puts its floor above the mean log loss of the
#: largest later runs by more than this many standard errors (their own scatter and the fit's
#: residual scatter, combined) is refused for the curve: it cannot reach runs already seen
FLOOR_REFUSAL_Z = 3.0


def floors_above_runs(found: Mapping[str, Any]) -> dict[str, float]:
    """The candidates refused for a floor above the runs, and by how much (relative)."""
    out = {}
    for name, pairs in found.items():
        gaps = getattr(pairs, "floor_gaps", None)
        if gaps is None or not len(gaps) or not np.isfinite(FLOOR_REFUSAL_Z):
            continue
        late = gaps[len(gaps) // 2 :]  # the later half: refits that saw most of the runs
        noise = float(np.sqrt(np.mean(pairs.residuals**2))) if pairs.residuals.size else 0.0
        margin = FLOOR_REFUSAL_Z * np.sqrt(late[:, 1] ** 2 + noise**2 + pairs.seed_sd**2)
        excess = late[:, 0] - margin
        if (excess > 0).any():
            out[name] = float(np.expm1(late[:, 0].max()))
    return out


#: a form is compared only on at least this many rolling origins, and a choice needs at least
#: this many such forms (one form with the origins is no comparison)
CHOICE_MIN_ORIGINS, CHOICE_MIN_FORMS = 3, 2


def pick_form(found: Mapping[str, Any]) -> tuple[str, str, bool]:
    """The candidate ``form="auto"`` picks from each one's rolling-origin pairs, why, and
    whether the evidence was too thin to choose (then m2, the simplest form with a floor, stands
    in, and :func:`select_form` applies ``calibrate.THIN_RULE``): never a form chosen on fewer
    than ``CHOICE_MIN_ORIGINS`` origins or the only form that had them."""
    from labcoat.scale.curves import AUTO_CANDIDATES

    finite = {
        k: p.late_rmse
        for k, p in found.items()
        if np.isfinite(p.late_rmse) and p.n_origins >= CHOICE_MIN_ORIGINS
    }
    if len(finite) < CHOICE_MIN_FORMS:
        most = max((p.n_origins for p in found.values()), default=0)
        name = "m2" if "m2" in found else "m1"
        return (
            name,
            f"too few runs to choose: {len(finite)} form(s) with the {CHOICE_MIN_ORIGINS} rolling "
            f"origins a comparison needs (at most {most})",
            True,
        )
    name = min(finite, key=lambda k: (round(finite[k], 6), AUTO_CANDIDATES.index(k)))
    pairs = found[name]
    return (
        name,
        f"lowest rolling-origin RMSE of log loss, {finite[name]:.3g}, over the extrapolations "
        f"of the later {pairs.n_origins - pairs.n_origins // 2} of {pairs.n_origins} origins",
        False,
    )
