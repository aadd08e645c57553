"""A label-permutation test for any pipeline: does it score better than it would on shuffled labels?

Ojala & Garriga (2010), Test 1: fit and score the pipeline on the real labels, then on labels
permuted n times. The p-value is (C + 1) / (n + 1), C being the permuted scores at least as high
as the real one; the +1 counts the real labelling as one of the permutations, so p is never 0.
This is the definition scikit-learn's ``permutation_test_score`` uses, and with an estimator and
the same ``cv`` and ``seed`` this function draws the same permutations and returns the
same numbers.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

from labcoat._validation import POSITIVE_INT, IsCallable, article, fail, renamed
from labcoat.errors import InputError


@dataclass(frozen=True)
class PermutationTestResult:
    """What :func:`permutation_test` found; named like ``scipy.stats.PermutationTestResult``.

    ``statistic`` is the score on the real labels, ``null_distribution`` the scores on permuted
    labels, ``pvalue`` the share of permutations (the real one included) scoring at least as high.
    """

    statistic: float
    pvalue: float
    null_distribution: np.ndarray

    @property
    def n_permutations(self) -> int:
        return len(self.null_distribution)


def permutation_pvalue(statistic: float, null_distribution: Any) -> float:
    """p = (C + 1) / (n + 1): C of the n permuted scores reach ``statistic`` (higher is better)."""
    null = np.asarray(null_distribution, dtype=float)
    return float((np.sum(null >= statistic) + 1.0) / (len(null) + 1))


@renamed(random_state="seed")
def permutations(
    n: int, n_permutations: int, seed: Any = 0, groups: Any = None
) -> Iterator[np.ndarray]:
    """Row orders for each permutation, drawn as scikit-learn draws them.

    ``seed`` is an int, a ``numpy.random.RandomState`` or ``None`` (as in scikit-learn)
    or a ``numpy.random.Generator``. With ``groups``, labels are shuffled only within each group.
    """
    rng = _random_state(seed)
    group_array = None if groups is None else np.asarray(groups)
    for _ in range(n_permutations):
        if group_array is None:
            yield rng.permutation(n)
            continue
        order = np.arange(len(group_array))
        for group in np.unique(group_array):
            members = group_array == group
            order[members] = rng.permutation(order[members])
        yield order


@renamed(random_state="seed")
def permutation_test(
    fit_and_score: Callable[[Any, Any], float] | Any,
    X: Any,
    y: Any,
    *,
    n_permutations: int = 100,
    n_jobs: int | None = None,
    seed: Any = 0,
    groups: Any = None,
    cv: Any = None,
    scoring: Any = None,
    params: dict | None = None,
) -> PermutationTestResult:
    """Test whether a pipeline's score depends on the pairing of inputs and labels.

    ``fit_and_score(X, y)`` fits on its own training part and returns a held-out score (higher is
    better); it is called once on the real labels and ``n_permutations`` times on permuted ones,
    in ``n_jobs`` processes (joblib's convention). It may instead be a scikit-learn estimator:
    then it is cross-validated with ``cv``, ``scoring`` and fit ``params`` exactly as
    ``sklearn.model_selection.permutation_test_score`` does, which it then agrees with.
    """
    from joblib import Parallel, delayed

    score = _permutation_test_iv(fit_and_score, X, y, n_permutations, groups, cv, scoring, params)
    real = _checked(score(X, y))
    orders = list(permutations(_length(y), n_permutations, seed, groups))
    null = Parallel(n_jobs=n_jobs)(delayed(score)(X, _take(y, order)) for order in orders)
    null = np.array([_checked(s) for s in null], dtype=float)
    return PermutationTestResult(real, permutation_pvalue(real, null), null)


def _permutation_test_iv(
    fit_and_score, X, y, n_permutations, groups, cv, scoring, params
) -> Callable[[Any, Any], float]:
    """Validate the arguments; return the function that fits and scores once."""
    POSITIVE_INT.check(n_permutations, "n_permutations")
    n_x, n_y = _length(X, "X"), _length(y, "y")
    if n_x != n_y:
        raise fail("y", f"as long as `X` ({n_x} rows)", n_y, hint="Pass one label per row of `X`.")
    if groups is not None and _length(groups, "groups") != n_y:
        raise fail(
            "groups",
            f"as long as `y` ({n_y} labels)",
            _length(groups, "groups"),
            hint="Pass one group per label.",
        )
    if hasattr(fit_and_score, "fit"):
        return _cross_validated(fit_and_score, y, groups, cv, scoring, params)
    IsCallable("a callable(X, y) -> score or a scikit-learn estimator").check(
        fit_and_score, "fit_and_score"
    )
    extras = [
        (name, value)
        for name, value in (("cv", cv), ("scoring", scoring), ("params", params))
        if value is not None
    ]
    if extras:
        names = " and ".join(f"`{name}`" for name, _ in extras)
        given = ", ".join(f"{name}={value!r}" for name, value in extras)
        raise InputError(
            f"{names} must be None when `fit_and_score` is a callable; got {given}. A callable "
            "splits and scores on its own: drop them, or pass a scikit-learn estimator."
        )
    return fit_and_score


def _cross_validated(estimator, y, groups, cv, scoring, params) -> Callable[[Any, Any], float]:
    from sklearn.base import is_classifier
    from sklearn.model_selection import check_cv, cross_val_score

    splitter = check_cv(cv, y, classifier=is_classifier(estimator))

    def fit_and_score(X: Any, labels: Any) -> float:
        scores = cross_val_score(
            estimator,
            X,
            labels,
            groups=groups,
            cv=splitter,
            scoring=scoring,
            params=params,
            error_score="raise",
        )
        return float(np.mean(scores))

    return fit_and_score


def _random_state(seed: Any) -> np.random.RandomState | np.random.Generator:
    if isinstance(seed, (np.random.RandomState, np.random.Generator)):
        return seed
    if seed is None:
        return np.random.mtrand._rand
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        return np.random.RandomState(seed)
    raise fail(
        "seed",
        "an int, None, a numpy RandomState or Generator",
        article(type(seed).__name__),
    )


def _length(obj: Any, name: str = "y") -> int:
    try:
        return len(obj)
    except TypeError:
        raise fail(
            name, "an array-like with one entry per example", article(type(obj).__name__)
        ) from None


def _take(y: Any, order: np.ndarray) -> Any:
    """``y`` in the row order ``order``, keeping its type (array, tensor, pandas object, list)."""
    if hasattr(y, "iloc"):
        return y.iloc[order]
    if hasattr(y, "index_select"):  # a torch tensor
        import torch

        return y[torch.as_tensor(order)]
    if isinstance(y, np.ndarray):
        return y[order]
    return [y[i] for i in order]


def _checked(score: Any) -> float:
    try:
        value = float(score)
    except (TypeError, ValueError):
        raise fail(
            "fit_and_score",
            "a callable that returns one number (higher is better)",
            f"{article(type(score).__name__)} back",
        ) from None
    return value
