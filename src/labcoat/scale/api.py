"""``labcoat.scale.fit`` and ``labcoat.scale.backtest``."""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

from labcoat._validation import N_JOBS, Interval, Seed, validate_params
from labcoat.scale.data import training_data
from labcoat.scale.diagnostics import diagnose
from labcoat.scale.forms import resolve_form
from labcoat.scale.result import ScalingFit
from labcoat.scale.search import bootstrap_counts, bootstrap_refits, grid_search


@validate_params(
    {
        "huber_delta": (Interval(float, 0.0, low_open=True), "The replication uses 1e-3."),
        "bootstrap": (Interval(int, 0), "It counts resamples (e.g. 1000)."),
        "seed": Seed(),
        "n_jobs": N_JOBS,
    }
)
def fit(
    N: Any,
    D: Any,
    L: Any,
    *,
    form: str | Callable[..., Any] = "chinchilla",
    huber_delta: float = 1e-3,
    bootstrap: int = 1000,
    seed: int = 0,
    p0: Mapping[str, Any] | None = None,
    n_jobs: int | None = None,
    ledger: Any = None,
) -> ScalingFit:
    """Fit a scaling law with the replication's recipe and bootstrap its uncertainty.

    ``form``: ``"chinchilla"`` (L = E + A/N^α + B/D^β), ``"curve"`` (L = E + A/x^α, pass
    ``D=None``) or a function ``f(N, D, **params)`` / ``f(x, **params)`` with ``p0`` (initial
    guesses, a value or a list of values per parameter). Huber loss (``huber_delta``) on log
    loss, every grid start, best final objective wins; ``bootstrap`` resamples of the runs are
    refitted from the full fit (``n_jobs`` as in joblib; None: in parallel where it pays).
    ``ledger``: a :class:`labcoat.Ledger` or path to record the fit in; None records in the
    project's ledger only if one exists; False records nowhere.
    """
    chosen = resolve_form(form, p0, 1 if D is None else 2)
    x, loss = training_data(N, D, L, chosen)
    best = grid_search(chosen, x, loss, float(huber_delta))
    refits = np.empty((0, best.theta.size))
    if bootstrap:
        counts = bootstrap_counts(loss.size, int(bootstrap), seed)
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
        _x=x,
        _loss=loss,
    )
    result.findings = diagnose(result)
    result.record(ledger)
    return result
