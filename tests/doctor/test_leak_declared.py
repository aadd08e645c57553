"""data.leak.feature fails on a feature that alone gives the label away (issue 9, e) unless it is
declared in ``expect_leaky``; a strong but imperfect feature stays a warning."""

from __future__ import annotations

import pytest
import torch

import labcoat
from tests.doctor.helpers import diabetes, diagnose, digits, mlp, regressor

LAYERS = ("data",)


def with_column(x: torch.Tensor, column: torch.Tensor) -> torch.Tensor:
    return torch.cat([x, column.reshape(-1, 1).float()], dim=1)


def test_label_copied_into_a_feature_fails_naming_it():
    x, y = digits()
    report = diagnose(mlp(65), (with_column(x, y), y), layers=LAYERS)
    finding = report["data.leak.feature"]
    assert finding.status == "fail" and "feature 64" in finding.message
    assert finding.evidence["leaks"] == [64]
    assert report.failed_layer == "data"


@pytest.mark.check("doctor.data.leak.feature", healthy=True)
def test_declared_deterministic_feature_passes():
    x, y = digits()
    report = diagnose(mlp(65), (with_column(x, y), y), layers=LAYERS, expect_leaky=[64])
    assert report["data.leak.feature"].status == "pass"
    assert "declared" in report["data.leak.feature"].message


def test_strong_but_imperfect_feature_only_warns():
    x, y = digits()
    noisy = y.clone()
    g = torch.Generator().manual_seed(0)
    flip = torch.randperm(len(y), generator=g)[: len(y) // 60]  # about 1.7% wrong
    noisy[flip] = (noisy[flip] + 1) % 10
    finding = diagnose(mlp(65), (with_column(x, noisy), y), layers=LAYERS)["data.leak.feature"]
    assert finding.status == "warn", finding.message
    assert 0.97 < finding.evidence["score"] < 0.99


def test_regression_target_left_among_the_features_fails():
    x, y = diabetes()
    model = regressor()
    model[0] = torch.nn.Linear(11, 32)
    finding = diagnose(model, (with_column(x, y * 3 + 1), y), torch.nn.MSELoss(), layers=LAYERS)[
        "data.leak.feature"
    ]
    assert finding.status == "fail" and "feature 10" in finding.message


def test_too_few_held_out_examples_to_call_a_leak_warn():
    x, y = digits()
    x, y = x[:150], y[:150]  # 30 held out
    finding = diagnose(mlp(65), (with_column(x, y), y), layers=LAYERS)["data.leak.feature"]
    assert finding.status == "warn" and "held-out examples" in finding.message


@pytest.mark.parametrize("bad", [["64"], [-1], [True], 1.5])
def test_expect_leaky_takes_feature_indices(bad):
    x, y = digits()
    with pytest.raises(labcoat.InputError, match="expect_leaky"):
        diagnose(mlp(), (x, y), layers=LAYERS, expect_leaky=bad)


def test_autoencoder_targets_tracking_their_inputs_are_not_a_leak():
    """Targets equal to the inputs (several columns) track features by design."""
    x, _ = diabetes()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(10, 4), torch.nn.ReLU(), torch.nn.Linear(4, 10))
    finding = diagnose(model, (x, x.clone()), torch.nn.MSELoss(), layers=LAYERS)[
        "data.leak.feature"
    ]
    assert finding.status != "fail", finding.message
