"""Scaling-law fits with honest uncertainty, and backtests on the runs a fit did not see.

``fit(N, D, L)`` follows the recipe of Besiroglu et al. (2024), the replication of Chinchilla's
Approach 3: Huber loss on log loss, L-BFGS from every point of a grid of starts (evaluated as
one batch), bootstrap refits for intervals. ``backtest`` fits the smaller runs and scores the
prediction of the larger ones. Only numpy and scipy are needed.
"""

from labcoat.scale.api import fit
from labcoat.scale.backtest import BacktestResult, backtest
from labcoat.scale.forms import FORMS
from labcoat.scale.result import Allocation, ConfidenceInterval, Prediction, ScalingFit

__all__ = [
    "Allocation",
    "BacktestResult",
    "ConfidenceInterval",
    "FORMS",
    "Prediction",
    "ScalingFit",
    "backtest",
    "fit",
]
