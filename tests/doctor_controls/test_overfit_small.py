"""The overfit control on small regression setups: healthy twins that must not fail, and the
planted bugs it must still catch there.

A small MLP fitting noisy targets from a few input features (linnerud: 20 rows, 3 features, 3
outputs) is still falling, 10-25 % of the way from floor to chance, when the 1000-step budget
runs out at Adam's default learning rate; regression's bar is 1 % of the floor, so before the
second run at 10x the learning rate it failed as if broken.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest
import torch
from torch import nn

from tests.doctor_controls import setups as s

OVERFIT = ("overfit",)
MSE = nn.MSELoss()


def _standardised(a) -> torch.Tensor:
    t = torch.tensor(np.asarray(a, dtype=np.float32))
    return (t - t.mean(0)) / t.std(0)


@lru_cache(maxsize=None)
def _linnerud() -> tuple[torch.Tensor, torch.Tensor]:
    from sklearn.datasets import load_linnerud

    x, y = load_linnerud(return_X_y=True)
    return _standardised(x), _standardised(y)


def linnerud() -> tuple[torch.Tensor, torch.Tensor]:
    x, y = _linnerud()
    return x.clone(), y.clone()


def diabetes_rows(n: int, features: int) -> tuple[torch.Tensor, torch.Tensor]:
    from sklearn.datasets import load_diabetes

    x, y = load_diabetes(return_X_y=True)
    return _standardised(x[:n, :features]), _standardised(y[:n]).unsqueeze(1)


def synthetic(n: int, features: int, outputs: int, noise: float, seed: int):
    from sklearn.datasets import make_regression

    x, y = make_regression(
        n_samples=n, n_features=features, n_targets=outputs, noise=noise, random_state=seed
    )
    return _standardised(x), _standardised(y)


def small_mlp(d_in: int, d_out: int, hidden: int = 16) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, d_out))


#: name: (data, model, loss); linnerud with MSE is the test after these
HEALTHY = {
    "linnerud_huber": (linnerud, lambda: small_mlp(3, 3), nn.SmoothL1Loss()),
    "diabetes_30_rows": (lambda: diabetes_rows(30, 10), lambda: small_mlp(10, 1, 32), MSE),
    "synthetic_30_rows_3_outputs": (
        lambda: synthetic(30, 5, 3, 10.0, 0),
        lambda: small_mlp(5, 3, 32),
        MSE,
    ),
    "synthetic_40_rows_2_features_4_outputs": (
        lambda: synthetic(40, 2, 4, 30.0, 1),
        lambda: small_mlp(2, 4, 32),
        MSE,
    ),
}


@pytest.mark.check("doctor.overfit.batch", healthy=True)
@pytest.mark.parametrize("name", sorted(HEALTHY))
def test_small_regression_setups_memorise(name):
    data, model, loss = HEALTHY[name]
    report = s.diagnose(model(), data(), loss, layers=OVERFIT)
    finding = report["overfit.batch"]
    assert finding.status == "pass", finding.message


def test_a_slow_run_is_memorised_at_ten_times_its_learning_rate_and_says_so():
    report = s.diagnose(small_mlp(3, 3), linnerud(), MSE, layers=OVERFIT)
    finding = report["overfit.batch"]
    assert finding.status == "pass"
    assert "at 10x your learning rate" in finding.message
    assert "still falling" in finding.message
    ev = finding.evidence
    assert ev["steps"] == ev["max_steps"] and ev["excess_vs_chance"] > 0.01
    assert ev["larger_lr"]["lr_scale"] == 10 and ev["larger_lr"]["excess_vs_chance"] <= 0.01


def test_a_run_still_falling_at_both_learning_rates_is_not_judged_and_says_so():
    """30 diabetes rows on 3 features: 45 % of the way from floor to chance after 1000 steps,
    9 % at 10x the learning rate, 1 % only after about 7000 steps: neither pass nor fail."""
    report = s.diagnose(small_mlp(3, 1), diabetes_rows(30, 3), MSE, layers=OVERFIT)
    finding = report["overfit.batch"]
    assert finding.status == "skip", finding.message
    assert finding.message.startswith("inconclusive, not judged: the loss was still falling")
    assert finding.evidence["inconclusive"] is True
    assert report.ok and report.inconclusive == [finding]
    assert report.summary().endswith("; not judged: overfit.batch (inconclusive)")


def _frozen(model: nn.Module) -> nn.Module:
    for p in model.parameters():
        p.requires_grad_(False)
    model[-1].bias.requires_grad_(True)  # only the mean can be learned
    return model


@pytest.mark.check("doctor.overfit.batch", planted=True)
def test_a_frozen_model_on_twenty_rows_fails():
    report = s.diagnose(_frozen(small_mlp(3, 3)), linnerud(), MSE, layers=OVERFIT)
    finding = report["overfit.batch"]
    assert finding.status == "fail"
    assert "stayed near chance" in finding.message


@pytest.mark.check("doctor.overfit.batch", planted=True)
def test_a_zero_learning_rate_on_twenty_rows_fails():
    report = s.diagnose(small_mlp(3, 3), linnerud(), MSE, lr=0.0, layers=OVERFIT)
    assert report["overfit.batch"].status == "fail"


@pytest.mark.check("doctor.overfit.batch", planted=True)
def test_a_linear_model_on_twenty_rows_fails_where_two_learning_rates_stop_together():
    """Still falling at Adam's 1e-3 when the budget ends; at 1e-2 it stops at the same loss."""
    torch.manual_seed(0)
    report = s.diagnose(nn.Linear(3, 3), linnerud(), MSE, layers=OVERFIT)
    finding = report["overfit.batch"]
    assert finding.status == "fail", finding.message
    assert "a floor of the model's own" in finding.message
    ev = finding.evidence
    assert (
        abs(ev["larger_lr"]["excess_vs_chance"] - ev["excess_vs_chance"])
        <= 0.1 * ev["excess_vs_chance"]
    )


@pytest.mark.check("doctor.overfit.batch", planted=True)
def test_unscaled_targets_on_twenty_rows_fail():
    """Linnerud's raw targets (weights near 180) against an output starting near 0."""
    from sklearn.datasets import load_linnerud

    x, y = load_linnerud(return_X_y=True)
    data = (_standardised(x), torch.tensor(y, dtype=torch.float32))
    report = s.diagnose(small_mlp(3, 3), data, MSE, layers=OVERFIT)
    finding = report["overfit.batch"]
    assert finding.status == "fail"
    assert "far above chance" in finding.message


@pytest.mark.slow
@pytest.mark.check("doctor.overfit.random_labels", healthy=True)
def test_random_labels_still_falling_are_memorised_at_ten_times_the_learning_rate():
    """The same retry for overfit.random_labels (effort='full'): at Adam's default rate the
    small MLP is still falling on random targets when the budget ends; at 10x it memorises."""
    report = s.diagnose(small_mlp(3, 3), linnerud(), MSE, layers=OVERFIT, effort="full")
    finding = report["overfit.random_labels"]
    assert finding.status == "pass", finding.message
    assert "random labels at 10x your learning rate" in finding.message
    assert finding.evidence["larger_lr"]["excess_vs_chance"] <= 0.01
