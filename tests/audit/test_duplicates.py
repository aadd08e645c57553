"""Duplicates across splits and inside them: planted copies and near-copies in digits and in
generated text must be found; a plain random split must not raise the alarm."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits

from labcoat.audit import duplicates
from labcoat.errors import InputError
from tests.audit.textgen import documents, edit_words


@pytest.fixture(scope="module")
def digits_split():
    x, _ = load_digits(return_X_y=True)
    rng = np.random.default_rng(0)
    perm = rng.permutation(len(x))
    return x[perm[:1400]], x[perm[1400:]]


def _plant_images(train, test, rng):
    test = test.copy()
    exact = rng.choice(len(test), 10, replace=False)
    test[exact] = train[:10]
    near = rng.choice(np.setdiff1d(np.arange(len(test)), exact), 10, replace=False)
    test[near] = np.clip(
        train[10:20] + rng.normal(0, 0.5, (10, train.shape[1])), 0, 16
    )  # sensor noise
    truth = set(zip(range(10), exact.tolist())) | set(zip(range(10, 20), near.tolist()))
    return test, exact, truth


def test_planted_image_copies_and_near_copies(digits_split):
    train, test = digits_split
    planted, exact_rows, truth = _plant_images(train, test, np.random.default_rng(1))
    result = duplicates(
        train, planted.astype(np.float32), ledger=False
    )  # float32 vs float64: same values
    found = {(p.a, p.b) for p in result.pairs}
    assert len(found & truth) / len(truth) >= 0.95
    assert len(found & truth) / len(found) >= 0.9
    assert {p.b for p in result.pairs if p.exact} == set(exact_rows.tolist())
    assert result.findings[0].status == "fail"


def test_a_random_split_of_digits_passes(digits_split):
    train, test = digits_split
    result = duplicates(train, test, ledger=False)
    assert not result.exact_pairs
    assert len(result.pairs) <= 1  # digits holds one pair of near-identical images at most
    assert result.findings[0].status != "fail"


@pytest.mark.check("audit.duplicates.within", planted=True)
def test_within_split_groups_and_canonical_hash():
    x, _ = load_digits(return_X_y=True)
    train = np.concatenate([x[:300], x[:3]]).astype(np.uint8)  # rows 300..302 copy rows 0..2
    result = duplicates(torch.tensor(train), None, ledger=False)
    assert result.within["a"][:3] == [[0, 300], [1, 301], [2, 302]] or {
        (0, 300),
        (1, 301),
        (2, 302),
    } <= {tuple(g) for g in result.within["a"]}
    assert result.findings[1].status == "warn"
    assert result.findings[0].status == "skip"


def _text_splits(seed: int):
    rng = np.random.default_rng(seed)
    train = documents(400, rng)
    test = documents(120, rng)
    return rng, train, test


@pytest.mark.check("audit.duplicates.across", planted=True)
def test_planted_text_copies_and_near_copies():
    rng, train, test = _text_splits(0)
    exact = rng.choice(len(test), 8, replace=False)
    near = rng.choice(np.setdiff1d(np.arange(len(test)), exact), 8, replace=False)
    for k, j in enumerate(exact):
        test[j] = "  " + train[k] + "\n"
    for k, j in enumerate(near):
        test[j] = edit_words(train[20 + k], 3, rng)
    truth = set(zip(range(8), exact.tolist())) | set(zip(range(20, 28), near.tolist()))
    result = duplicates(train, test, ledger=False)
    found = {(p.a, p.b) for p in result.pairs}
    assert found == truth  # recall and precision 1 on this planting
    assert {p.b for p in result.pairs if p.exact} == set(exact.tolist())
    assert result.findings[0].status == "fail"


@pytest.mark.check("audit.duplicates.across", "audit.duplicates.within", healthy=True)
def test_unrelated_texts_on_the_same_topic_pass():
    _, train, test = _text_splits(1)  # same grammar and vocabulary, independent documents
    result = duplicates(train, test, ledger=False)
    assert result.pairs == []
    assert result.findings[0].status == "pass" and result.findings[1].status == "pass"


def test_bad_input():
    with pytest.raises(InputError, match="share a shape"):
        duplicates(np.zeros((3, 4)), np.zeros((3, 5)), ledger=False)
    with pytest.raises(InputError, match="threshold"):
        duplicates(["a b"], ["a b"], threshold=1.5, ledger=False)
    with pytest.raises(InputError, match="not text"):
        duplicates(["a b", 3], ["a"], kind="text", ledger=False)
