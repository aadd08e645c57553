"""Scaling-law fits with honest uncertainty, and backtests on the runs a fit did not see.

``fit(N, D, L)`` follows the recipe of Besiroglu et al. (2024), the replication of Chinchilla's
Approach 3: Huber loss on log loss, L-BFGS from every point of a grid of starts (evaluated as
one batch), bootstrap refits for intervals. ``backtest`` fits the smaller runs and scores the
prediction of the larger ones. Only numpy and scipy are needed.

Prediction intervals are calibrated by default from the fit's own rolling-origin backtests
(:mod:`labcoat.scale.calibrate`); learning-curve forms M1–M4, a broken power law and
``form="auto"`` live in :mod:`labcoat.scale.curves`; downstream accuracy in
:mod:`labcoat.scale.downstream`.
"""

from labcoat.scale.api import fit
from labcoat.scale.backtest import BacktestResult, BacktestSet, backtest
from labcoat.scale.calibrate import Calibration, ExtrapolationWarning
from labcoat.scale.curves import CURVES
from labcoat.scale.downstream import DownstreamFit, PredictabilityWarning, fit_downstream
from labcoat.scale.forms import FORMS
from labcoat.scale.result import Allocation, Prediction, ScalingFit


def __getattr__(name: str):
    if name == "ConfidenceInterval":  # scale's own copy, kept importable for one release
        import warnings

        from labcoat.interval import ConfidenceInterval

        warnings.warn(
            "labcoat.scale.ConfidenceInterval is labcoat.interval.ConfidenceInterval; import it "
            "from there (this alias goes in the next release)",
            DeprecationWarning,
            stacklevel=2,
        )
        return ConfidenceInterval
    raise AttributeError(f"module 'labcoat.scale' has no attribute {name!r}")


__all__ = [
    "Allocation",
    "BacktestResult",
    "BacktestSet",
    "CURVES",
    "Calibration",
    "DownstreamFit",
    "ExtrapolationWarning",
    "FORMS",
    "PredictabilityWarning",
    "Prediction",
    "ScalingFit",
    "backtest",
    "fit",
    "fit_downstream",
]
