"""model.mode_state: eval mode reading state that only a train-mode forward sets (issue 9, c)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tests.doctor.helpers import diagnose, digits, status

sn = nn.utils.spectral_norm
LAYERS = ("model",)


def spectral_mlp(warm: bool = False) -> nn.Module:
    torch.manual_seed(0)
    model = nn.Sequential(
        sn(nn.Linear(64, 64)), nn.ReLU(), sn(nn.Linear(64, 64)), nn.ReLU(), sn(nn.Linear(64, 10))
    )
    if warm:  # the fix from pytorch/pytorch#51800: one forward in train mode first
        with torch.no_grad():
            model(digits()[0][:16])
    return model


@pytest.mark.check("doctor.model.mode_state", planted=True)
def test_spectral_norm_never_run_in_train_mode_fails_naming_its_modules():
    report = diagnose(spectral_mlp(), layers=LAYERS)
    finding = report["model.mode_state"]
    assert finding.status == "fail"
    assert "0 (Linear)" in finding.message and "train mode" in finding.message
    assert finding.evidence["output_scale_ratio"] > 10
    assert "0.weight_u" in finding.evidence["buffers_changed_by_train_forward"]
    assert report.failed_layer == "model"


def test_spectral_norm_after_a_train_mode_forward_passes():
    assert status(diagnose(spectral_mlp(warm=True), layers=LAYERS), "model.mode_state") == "pass"


def test_parametrized_spectral_norm_initialises_itself_and_passes():
    torch.manual_seed(0)
    psn = nn.utils.parametrizations.spectral_norm
    model = nn.Sequential(psn(nn.Linear(64, 64)), nn.ReLU(), psn(nn.Linear(64, 10)))
    assert status(diagnose(model, layers=LAYERS), "model.mode_state") == "pass"


def test_batchnorm_running_statistics_at_init_are_normal():
    """Unscaled inputs make BatchNorm's eval mode at init far off; that is what running
    statistics at init are, not a bug (momentum=None fills them in one forward, too)."""
    x, y = digits()
    for momentum in (0.1, None):
        torch.manual_seed(0)
        model = nn.Sequential(
            nn.Linear(64, 64), nn.BatchNorm1d(64, momentum=momentum), nn.ReLU(), nn.Linear(64, 10)
        )
        finding = diagnose(model, (x * 16, y), layers=LAYERS)["model.mode_state"]
        assert finding.status == "pass", finding.message
        assert "running statistics" in finding.message


@pytest.mark.check("doctor.model.mode_state", healthy=True)
def test_dropout_net_passes():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Dropout(0.5), nn.Linear(64, 10))
    assert status(diagnose(model, layers=LAYERS), "model.mode_state") == "pass"


class ActNorm(nn.Module):
    """Glow's data-dependent init: the first train-mode forward sets scale and shift."""

    def __init__(self, d: int):
        super().__init__()
        self.log_scale = nn.Parameter(torch.zeros(d))
        self.shift = nn.Parameter(torch.zeros(d))
        self.register_buffer("initialised", torch.tensor(False))

    def forward(self, x):
        if self.training and not self.initialised:
            with torch.no_grad():
                self.shift.copy_(-x.mean(0))
                self.log_scale.copy_(-torch.log(x.std(0) + 1e-6))
                self.initialised.fill_(True)
        return (x + self.shift) * self.log_scale.exp()


def test_data_dependent_init_needing_train_mode_with_sane_scale_passes():
    """State that train mode sets, but eval mode at init is not far off: nothing to report."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 32), ActNorm(32), nn.ReLU(), nn.Linear(32, 10))
    finding = diagnose(model, layers=LAYERS)["model.mode_state"]
    assert finding.status == "pass" and "1 (ActNorm)" in finding.message
