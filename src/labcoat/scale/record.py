"""Recording fits and predictions in the ledger, so a later run can be checked against them.

Uses only the ledger's public API: the fit and its diagnostics become findings (source
``"scale"``) whose evidence holds the parameters, intervals and a fingerprint of the data; a
prediction becomes a hypothesis written before the run it predicts.
"""

from __future__ import annotations

import warnings
from typing import Any

from labcoat.findings import Finding
from labcoat.scale.diagnostics import FIT, data_fingerprint, summary_outcome

__all__ = [
    "data_fingerprint",
    "record_fit",
    "record_prediction",
    "summary_finding",
    "summary_outcome",
]


def summary_finding(fit) -> Finding:
    """The fit itself as the finding of the registered check ``scale.fit``."""
    return FIT.evaluate(fit)


def record_fit(fit, ledger: Any) -> None:
    """Deprecated: use ``fit.record(ledger)``."""
    warnings.warn(
        "labcoat.scale.record.record_fit(fit, ledger) is deprecated; use fit.record(ledger) "
        "(every labcoat result records the same way)",
        DeprecationWarning,
        stacklevel=2,
    )
    fit.record(ledger)


def record_prediction(fit, N: Any, D: Any = None, *, ledger: Any = None, level: float = 0.95):
    """Write the prediction for one planned run as a hypothesis, before the run exists."""
    from labcoat.errors import InputError
    from labcoat.ledger import Ledger

    notebook = Ledger.for_recording(ledger)
    if notebook is None:
        raise InputError(
            "ledger: no ledger to record the prediction in; pass ledger=PATH or a labcoat.Ledger"
        )
    prediction = fit.predict(N, D, level=level)
    if prediction.loss.size != 1:
        raise InputError(f"N: record one planned run at a time; got {prediction.loss.size} points")
    at = ", ".join(f"{k}={float(v[0]):.4g}" for k, v in prediction.points.items())
    if prediction.interval is None:
        raise InputError(
            "record_prediction: the fit has no bootstrap refits; fit with bootstrap > 0"
        )
    lo, hi = prediction.interval[0][0], prediction.interval[1][0]
    digest = data_fingerprint(fit)["digest"].rpartition(":")[2][:12]
    entry = notebook.hypothesis(
        f"{fit.form.name} law fitted on {fit.n_points} runs (data {digest}) "
        f"predicts the run at {at}",
        predict=(
            f"final loss {prediction.loss[0]:.4g}, inside [{lo:.4g}, {hi:.4g}] "
            f"({level:.0%} prediction interval)"
        ),
        tags=["scale"],
    )
    return entry, prediction
