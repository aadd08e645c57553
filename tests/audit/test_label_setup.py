"""Out-of-fold probabilities from a labcoat.Experiment: K copies of the user's model trained
with its loss, optimizer and step, then confident learning."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits
from torch import nn

import labcoat
from labcoat.audit import label_issues
from labcoat.errors import InputError

ROWS = 900


def _experiment(labels: np.ndarray, x: np.ndarray, step=None) -> labcoat.Experiment:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    return labcoat.Experiment(
        model=model,
        data=(torch.tensor(x, dtype=torch.float32), torch.tensor(labels)),
        loss_fn=nn.CrossEntropyLoss(),
        optimizer=torch.optim.Adam(model.parameters(), lr=3e-3),
        step=step,
    )


@pytest.fixture(scope="module")
def digits():
    torch.set_num_threads(1)
    x, y = load_digits(return_X_y=True)
    return x[:ROWS] / 16.0, y[:ROWS]


def test_setup_trains_copies_and_finds_planted_flips(digits):
    x, y = digits
    rng = np.random.default_rng(0)
    flipped = rng.choice(ROWS, 45, replace=False)
    noisy = y.copy()
    noisy[flipped] = (y[flipped] + rng.integers(1, 10, 45)) % 10
    calls = []

    def step(model, batch, optimizer, loss_fn):  # the user's own step is the one that trains
        calls.append(1)
        x, y = batch
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    experiment = _experiment(noisy, x, step)
    before = [p.detach().clone() for p in experiment.model.parameters()]
    result = label_issues(None, setup=experiment, folds=3, ledger=False, progress=False)
    hits = np.isin(result.indices, flipped)
    assert hits.sum() / 45 >= 0.7 and hits.mean() >= 0.7
    assert calls
    folds = result.to_dict()["folds"]
    assert len(folds["best_epoch"]) == 3 and max(folds["best_epoch"]) < 100  # stopped early
    assert all(torch.equal(a, b) for a, b in zip(before, experiment.model.parameters()))


def test_setup_with_clean_labels_flags_few(digits):
    x, y = digits
    result = label_issues(None, setup=_experiment(y, x), folds=3, ledger=False, progress=False)
    assert result.count <= 0.02 * ROWS


def test_setup_needs_integer_class_targets(digits):
    x, _ = digits
    torch.manual_seed(0)
    model = nn.Linear(64, 1)
    bad = labcoat.Experiment(
        model,
        (torch.tensor(x, dtype=torch.float32), torch.randn(ROWS)),
        nn.MSELoss(),
        torch.optim.SGD(model.parameters(), lr=0.1),
    )
    with pytest.raises(InputError, match="integer class"):
        label_issues(None, setup=bad, ledger=False, progress=False)
