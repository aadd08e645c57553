"""A paired permutation test: a p-value for A − B that assumes no normal approximation.

Under the null hypothesis that the two models are exchangeable on every question, each
question's difference ``a_i - b_i`` is as likely to have the opposite sign, so flipping signs
at random gives the null distribution of the mean difference. With clusters, whole clusters
flip together (questions in a cluster are not exchangeable one by one). With few units every
sign pattern is enumerated and the p-value is exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from labcoat._validation import Interval, Seed, renamed, validate_params
from labcoat.errors import InputError
from labcoat.findings import Finding
from labcoat.result import Result
from labcoat.stats._questions import per_question
from labcoat.stats._validation import check_random_state
from labcoat.stats.mean import cluster_codes

#: enumerate every sign pattern up to this many units (2^16 = 65,536 patterns)
_EXACT_UNITS = 16
_CHUNK_CELLS = 1 << 22


@dataclass(frozen=True)
class PermutationResult(Result):
    """``statistic`` (mean of A − B), its two-sided ``pvalue`` and the sign-flip null
    distribution; ``exact`` when every one of the ``2^units`` patterns was enumerated."""

    engine = "stats"
    KIND = "stats.permutation"
    section = "labcoat.report.sections.stats:stats_section"

    statistic: float
    pvalue: float
    null_distribution: np.ndarray
    n: int
    n_units: int
    exact: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "statistic": self.statistic,
            "pvalue": self.pvalue,
            "n": self.n,
            "n_units": self.n_units,
            "exact": self.exact,
            "n_resamples": int(self.null_distribution.size),
        }

    @property
    def findings(self) -> list[Finding]:
        """None: this result states numbers, it runs no check of its own."""
        return []


@renamed(random_state="seed")
@validate_params({"n_resamples": Interval(int, 1), "seed": Seed(generator=True)})
def paired_permutation_test(
    a: Any,
    b: Any,
    cluster: Any = None,
    *,
    ids_a: Any = None,
    ids_b: Any = None,
    n_resamples: int = 9999,
    seed: int | np.random.Generator | None = 0,
) -> PermutationResult:
    """Sign-flip permutation test of ``mean(a - b) = 0`` on paired question scores.

    Inputs are as for :func:`labcoat.stats.compare` (ids match questions; questions on one
    side only are left out). Exact when ``2^units <= n_resamples`` and there are at most 16
    units (questions, or clusters when given); otherwise ``n_resamples`` random patterns and
    the p-value ``(hits + 1) / (n_resamples + 1)``, as :func:`scipy.stats.permutation_test`.
    """
    from labcoat.stats._questions import paired_questions

    qa, qb, index_a, index_b, _ = paired_questions(a, b, ids_a, ids_b, strict=False)
    d = qa.means[index_a] - qb.means[index_b]
    n = d.size
    if cluster is None:
        sums = d
    else:
        codes = cluster_codes(per_question(cluster, qa, "cluster")[index_a])
        sums = np.bincount(codes, weights=d)
    units = sums.size
    observed = float(d.mean())
    if units <= _EXACT_UNITS and 2**units <= n_resamples:
        patterns = ((np.arange(2**units)[:, None] >> np.arange(units)) & 1) * 2 - 1
        null = patterns @ sums / n
        hits = np.count_nonzero(np.abs(null) >= abs(observed) * (1 - 1e-14))
        return PermutationResult(observed, float(hits / null.size), null, n, units, True)
    if units < 2:
        raise InputError(
            f"a permutation test needs at least 2 units (questions or clusters); got {units}."
        )
    rng = check_random_state(seed)
    rows = max(1, _CHUNK_CELLS // units)
    parts = []
    for start in range(0, n_resamples, rows):
        signs = rng.integers(0, 2, size=(min(rows, n_resamples - start), units)) * 2 - 1
        parts.append(signs @ sums / n)
    null = np.concatenate(parts)
    hits = np.count_nonzero(np.abs(null) >= abs(observed) * (1 - 1e-14))
    return PermutationResult(observed, float((hits + 1) / (n_resamples + 1)), null, n, units, False)
