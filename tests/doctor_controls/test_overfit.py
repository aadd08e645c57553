"""The overfit layer: planted bugs that cannot memorise a tiny batch, and healthy twins that do."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tests.doctor_controls import setups as s

UP_TO_OVERFIT = ("data", "model", "update", "overfit")
CE = nn.CrossEntropyLoss()


def test_width_one_bottleneck_fails_overfit_and_its_twin_passes():
    broken = s.diagnose(s.bottleneck(), s.digits(), CE, layers=UP_TO_OVERFIT)
    assert broken.failed_layer == "overfit"
    finding = broken["overfit.batch"]
    assert finding.status == "fail"
    ev = finding.evidence
    assert ev["fitted"] < ev["examples"]
    assert {"first_loss", "last_loss", "min_loss", "steps", "loss_curve"} <= set(ev)
    assert ev["min_loss"] <= ev["first_loss"]

    healthy = s.diagnose(s.mlp(), s.digits(), CE, layers=UP_TO_OVERFIT)
    assert healthy.ok, healthy.summary()
    assert healthy["overfit.batch"].status == "pass"
    assert (
        healthy["overfit.batch"].evidence["fitted"] == healthy["overfit.batch"].evidence["examples"]
    )


def test_linear_model_cannot_memorise_xor_but_an_mlp_can():
    broken = s.diagnose(s.linear(2, 2), s.xor(), CE, lr=1e-2, layers=UP_TO_OVERFIT)
    assert broken.failed_layer == "overfit"
    assert "stayed near chance" in broken["overfit.batch"].message

    healthy = s.diagnose(s.mlp(2, 2), s.xor(), CE, lr=1e-2, layers=UP_TO_OVERFIT)
    assert healthy.ok, healthy.summary()


def test_linear_regression_cannot_memorise_a_product_but_an_mlp_can():
    broken = s.diagnose(s.linear(2, 1), s.product(), nn.MSELoss(), lr=1e-2, layers=UP_TO_OVERFIT)
    assert broken.failed_layer == "overfit"
    assert (
        "fitted" not in broken["overfit.batch"].evidence
    )  # regression is judged by its loss alone

    healthy = s.diagnose(
        s.regression_mlp(), s.product(), nn.MSELoss(), lr=3e-3, layers=UP_TO_OVERFIT
    )
    assert healthy.ok, healthy.summary()
    ev = healthy["overfit.batch"].evidence
    assert ev["last_loss"] <= 0.01 * ev["chance_loss"]


@pytest.mark.check("doctor.overfit.batch", planted=True)
def test_a_learning_rate_far_too_small_fails_and_says_so():
    model = s.mlp()
    report = s.diagnose(
        model,
        s.digits(),
        CE,
        optimizer=torch.optim.SGD(model.parameters(), lr=1e-4),
        layers=("overfit",),
    )
    finding = report["overfit.batch"]
    assert finding.status == "fail"
    assert "learning rate" in finding.message


def test_batch_is_small_balanced_and_recorded_by_index():
    X, y = s.digits()
    report = s.diagnose(s.mlp(), (X, y), CE, layers=("overfit",))
    indices = report["overfit.batch"].evidence["indices"]
    assert 8 <= len(indices) <= 32 and len(set(indices)) == len(indices)
    counts = torch.bincount(y[indices], minlength=10)
    assert counts.min() == 2 and counts.max() == 2  # 20 examples, two per digit


def test_label_smoothing_floor_is_not_mistaken_for_failure():
    report = s.diagnose(
        s.mlp(), s.digits(), nn.CrossEntropyLoss(label_smoothing=0.1), layers=("overfit",)
    )
    finding = report["overfit.batch"]
    assert finding.status == "pass", finding.message
    assert finding.evidence["loss_floor"] > 0.3  # a smoothed target cannot be fitted to zero loss


@pytest.mark.check("doctor.overfit.batch", healthy=True)
def test_single_logit_binary_classifier_memorises():
    X, y = s.xor()
    report = s.diagnose(
        s.mlp(2, 1),
        (X, y.float().unsqueeze(1)),
        nn.BCEWithLogitsLoss(),
        lr=1e-2,
        layers=("overfit",),
    )
    finding = report["overfit.batch"]
    assert finding.status == "pass", finding.message
    assert finding.evidence["classes"] == 2


class InputBlind(nn.Module):
    """A model whose output ignores the input: only a learned bias reaches the loss."""

    def __init__(self, classes: int = 10):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bias.expand(len(x), -1)


@pytest.mark.check("doctor.overfit.random_labels", healthy=True)
def test_random_labels_run_only_in_full_effort_and_catch_an_input_blind_model():
    fast = s.diagnose(s.mlp(), s.digits(), CE, layers=("overfit",))
    assert fast["overfit.random_labels"].status == "skip"

    blind = s.diagnose(
        InputBlind(), s.digits(), CE, lr=1e-2, layers=("overfit",), effort="full", run_all=True
    )
    assert blind["overfit.random_labels"].status == "fail"
    assert blind["overfit.random_labels"].evidence["examples"] == 64

    healthy = s.diagnose(s.mlp(), s.digits(), CE, lr=3e-3, layers=("overfit",), effort="full")
    assert healthy["overfit.random_labels"].status == "pass", healthy[
        "overfit.random_labels"
    ].message


@pytest.mark.check("doctor.overfit.random_labels", planted=True)
def test_random_labels_only_partly_memorised_by_a_tiny_network_warn():
    report = s.diagnose(
        s.mlp(2, 2, hidden=4), s.xor(), CE, lr=1e-2, layers=("overfit",), effort="full"
    )
    finding = report["overfit.random_labels"]
    assert finding.status == "warn", finding.message
    assert 0 < finding.evidence["fitted"] < finding.evidence["examples"]


def test_multi_label_targets_are_yes_no_questions_a_bottleneck_cannot_answer():
    X, Y = s.multilabel_digits()
    broken = s.diagnose(
        s.bottleneck(classes=3), (X, Y), nn.BCEWithLogitsLoss(), layers=("overfit",)
    )
    assert broken.task == "classification"
    finding = broken["overfit.batch"]
    assert finding.status == "fail" and finding.evidence["fitted"] < finding.evidence["examples"], (
        finding.message
    )

    healthy = s.diagnose(s.mlp(classes=3), (X, Y), nn.BCEWithLogitsLoss(), layers=("overfit",))
    finding = healthy["overfit.batch"]
    assert finding.status == "pass" and finding.evidence["loss_floor"] < 1e-3, finding.message


def test_floor_of_a_logit_loss_on_float_targets_is_found_not_assumed_at_the_targets():
    """One-hot float targets under a cross-entropy: the lowest loss is far from output = target."""
    X, y = s.digits()
    one_hot = nn.functional.one_hot(y, 10).float()
    broken = s.diagnose(s.bottleneck(), (X, one_hot), CE, layers=("overfit",))
    finding = broken["overfit.batch"]
    assert finding.status == "fail", finding.message
    assert finding.evidence["loss_floor"] < 1e-3  # output = target would have put it at 1.46

    healthy = s.diagnose(s.mlp(), (X, one_hot), CE, layers=("overfit",))
    assert healthy["overfit.batch"].status == "pass", healthy["overfit.batch"].message


def test_controls_skip_outputs_they_cannot_pair_with_targets_and_point_to_the_model_layer():
    X, y = s.product()
    two_targets = torch.cat([y, -y], dim=1)  # (N, 2) targets for a one-output head
    report = s.diagnose(
        s.regression_mlp(),
        (X, two_targets),
        nn.MSELoss(),
        layers=("model", "overfit", "shuffle"),
        run_all=True,
    )
    assert report["model.forward"].status == "fail"
    for check in ("overfit.batch", "shuffle.labels", "shuffle.pvalue"):
        assert report[check].status == "skip" and "see model.forward" in report[check].message, (
            report[check].message
        )


def test_targets_on_another_scale_fail_overfit_for_that_reason_and_are_no_leak():
    X, y = s.product()
    raw = y * 1000 + 50_000  # a regression target left in its raw units (a price, say)
    report = s.diagnose(
        s.regression_mlp(), (X, raw), nn.MSELoss(), layers=("overfit", "shuffle"), run_all=True
    )
    finding = report["overfit.batch"]
    assert finding.status == "fail" and "another scale" in finding.message, finding.message
    assert report["shuffle.labels"].status != "fail", report["shuffle.labels"].message


def test_mse_on_yes_no_targets_is_judged_as_regression():
    """A loss lowest where the output equals the 0/1 target does not read outputs as logits."""
    X, y = s.xor()
    targets = y.float().unsqueeze(1)
    healthy = s.diagnose(s.mlp(2, 1), (X, targets), nn.MSELoss(), lr=1e-2, layers=("overfit",))
    assert healthy.task == "regression"
    assert healthy["overfit.batch"].status == "pass", healthy["overfit.batch"].message

    linear = s.diagnose(s.linear(2, 1), (X, targets), nn.MSELoss(), lr=1e-2, layers=("overfit",))
    assert linear["overfit.batch"].status == "fail"
