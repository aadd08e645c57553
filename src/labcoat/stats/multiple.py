"""Corrections for testing many comparisons at once.

Comparing a model on twenty tasks and reporting the ones with p < 0.05 finds one "win" by
chance alone. Holm's step-down method controls the family-wise error rate (the chance of any
false positive) under any dependence; it is the Bonferroni-based procedure, not Holm-Sidak.
Benjamini-Hochberg controls the false discovery rate (the expected share of false positives
among the rejections), assuming independent or positively dependent tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from labcoat.errors import InputError
from labcoat.findings import Finding
from labcoat.result import Result
from labcoat.stats._validation import check_probability, check_scores

METHODS = {"holm": "Holm (step-down Bonferroni, FWER)", "bh": "Benjamini-Hochberg (FDR)"}
_ALIASES = {
    "holm": "holm",
    "holm-bonferroni": "holm",
    "bh": "bh",
    "fdr_bh": "bh",
    "benjamini-hochberg": "bh",
}


@dataclass(frozen=True)
class AdjustedPValues(Result):
    """Adjusted p-values in the input order; ``reject`` where the adjusted p-value <= ``alpha``."""

    engine = "stats"
    KIND = "stats.multiple"
    view = "labcoat.stats.view:adjust_view"
    section = "labcoat.report.sections.stats:stats_section"

    pvalues: np.ndarray
    adjusted: np.ndarray
    reject: np.ndarray
    method: str
    alpha: float

    @property
    def description(self) -> str:
        return METHODS[self.method]

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "alpha": self.alpha,
            "pvalues": self.pvalues.tolist(),
            "adjusted": self.adjusted.tolist(),
            "reject": self.reject.tolist(),
        }

    @property
    def findings(self) -> list[Finding]:
        """None: this result states numbers, it runs no check of its own."""
        return []


def adjust_pvalues(pvalues: Any, method: str = "holm", alpha: float = 0.05) -> AdjustedPValues:
    """Holm or Benjamini-Hochberg adjusted p-values (``method`` ``"holm"`` or ``"bh"``)."""
    from scipy import stats as sps

    p, method, alpha = _adjust_iv(pvalues, method, alpha)
    if method == "bh":
        adjusted = sps.false_discovery_control(p, method="bh")
    else:
        adjusted = holm(p)
    return AdjustedPValues(p, adjusted, adjusted <= alpha, method, alpha)


def holm(p: np.ndarray) -> np.ndarray:
    """``max_{j <= i} min(1, (m - j + 1) p_(j))`` over the sorted p-values, back in input order."""
    m = p.size
    order = np.argsort(p, kind="stable")
    stepped = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = stepped
    return out


def _adjust_iv(pvalues: Any, method: Any, alpha: Any) -> tuple[np.ndarray, str, float]:
    p = check_scores(pvalues, "pvalues")
    if ((p < 0) | (p > 1)).any():
        raise InputError(
            f"`pvalues` must lie in [0, 1]; got values from {p.min():g} to {p.max():g}."
        )
    key = _ALIASES.get(str(method).lower())
    if key is None:
        raise InputError(f"`method` must be 'holm' or 'bh' (Benjamini-Hochberg); got {method!r}.")
    return p, key, check_probability(alpha, "alpha")
