"""labcoat.permutation_test: the same numbers as scikit-learn on an estimator, any pipeline
otherwise."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.datasets import load_iris
from sklearn.model_selection import GroupKFold, StratifiedKFold, permutation_test_score
from sklearn.neighbors import KNeighborsClassifier

import labcoat
from labcoat import InputError
from labcoat.doctor.permutation import PermutationTestResult, permutation_test, permutations


@pytest.fixture(scope="module")
def iris():
    return load_iris(return_X_y=True)


def test_matches_scikit_learn_exactly_on_an_estimator(iris):
    X, y = iris
    estimator, cv = KNeighborsClassifier(n_neighbors=5), StratifiedKFold(3)
    score, null, pvalue = permutation_test_score(
        estimator, X, y, cv=cv, n_permutations=30, random_state=7
    )
    result = labcoat.permutation_test(estimator, X, y, cv=cv, n_permutations=30, seed=7)
    assert isinstance(result, PermutationTestResult)
    assert result.statistic == score
    np.testing.assert_array_equal(result.null_distribution, null)
    assert result.pvalue == pvalue == 1 / 31


@pytest.mark.parametrize(
    "n_jobs",
    # two jobs start a pool of worker processes (seconds): the slow tier
    [1, pytest.param(2, marks=pytest.mark.slow)],
)
def test_matches_scikit_learn_with_groups_in_one_job_and_in_two(iris, n_jobs):
    X, y = iris
    groups = np.arange(len(y)) % 6
    estimator, cv = KNeighborsClassifier(n_neighbors=5), GroupKFold(3)
    score, null, pvalue = permutation_test_score(
        estimator, X, y, groups=groups, cv=cv, n_permutations=12, random_state=3
    )
    result = permutation_test(
        estimator, X, y, groups=groups, cv=cv, n_permutations=12, seed=3, n_jobs=n_jobs
    )
    assert (result.statistic, result.pvalue) == (score, pvalue)
    np.testing.assert_array_equal(result.null_distribution, null)


def test_within_group_permutations_never_move_a_label_across_groups():
    groups = np.repeat([0, 1, 2], 4)
    for order in permutations(12, 5, seed=0, groups=groups):
        np.testing.assert_array_equal(groups[order], groups)


def nearest_centroid_score(X, y) -> float:
    """A pipeline as a plain function: fit on the first half, score accuracy on the second."""
    X, y = torch.as_tensor(X, dtype=torch.float32), torch.as_tensor(y)
    half = len(y) // 2
    centroids = torch.stack([X[:half][y[:half] == c].mean(0) for c in range(3)])
    predicted = torch.cdist(X[half:], centroids).argmin(1)
    return float((predicted == y[half:]).float().mean())


def test_any_pipeline_as_a_function_finds_signal_and_its_absence(iris):
    X, y = iris
    order = np.random.default_rng(0).permutation(len(y))
    X, y = torch.tensor(X[order]), torch.tensor(y[order])
    real = permutation_test(nearest_centroid_score, X, y, n_permutations=49, seed=0)
    assert real.statistic > 0.8 and real.pvalue == 1 / 50
    assert real.n_permutations == 49 and np.all(real.null_distribution < 0.7)

    noise = y[torch.randperm(len(y), generator=torch.Generator().manual_seed(0))]
    none = permutation_test(nearest_centroid_score, X, noise, n_permutations=49, seed=0)
    assert none.pvalue > 0.05


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"n_permutations": 0}, "n_permutations"),
        ({"cv": 5}, "cv"),
        ({"seed": "seed"}, "seed"),
    ],
)
def test_bad_arguments_are_named(iris, kwargs, named):
    X, y = iris
    with pytest.raises(InputError, match=named):
        permutation_test(nearest_centroid_score, X, y, **kwargs)


def test_inputs_of_different_lengths_and_non_numeric_scores_are_refused(iris):
    X, y = iris
    with pytest.raises(InputError, match=r"`y` must be as long as `X` \(150 rows\); got 149\."):
        permutation_test(nearest_centroid_score, X, y[:-1])
    with pytest.raises(InputError, match="one number"):
        permutation_test(lambda X, y: "good", X, y, n_permutations=2)
