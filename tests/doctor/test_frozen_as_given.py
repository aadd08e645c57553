"""update.frozen.as_given: a freeze that only an overridden model.train() applies (issue 9, d)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tests.doctor.helpers import diagnose, status

LAYERS = ("model", "update")


class StagedBackbone(nn.Module):
    """mmdetection's backbone pattern: ``frozen_stages`` is applied in ``train()``."""

    def __init__(self, frozen_stages: int = 1, freeze_at_init: bool = False):
        super().__init__()
        self.frozen_stages = frozen_stages
        self.stem = nn.Linear(64, 32)
        self.layer1 = nn.Linear(32, 32)
        if freeze_at_init:
            self._freeze_stages()

    def _freeze_stages(self):
        for stage in [self.stem, self.layer1][: self.frozen_stages]:
            stage.eval()
            for p in stage.parameters():
                p.requires_grad = False

    def train(self, mode: bool = True):
        super().train(mode)
        self._freeze_stages()
        return self

    def forward(self, x):
        return torch.relu(self.layer1(torch.relu(self.stem(x))))


class Detector(nn.Module):
    def __init__(self, **kw):
        torch.manual_seed(0)
        super().__init__()
        self.backbone = StagedBackbone(**kw)
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        return self.head(self.backbone(x))


@pytest.mark.check("doctor.update.frozen.as_given", planted=True)
def test_declared_frozen_stage_trainable_as_given_fails():
    model = Detector()
    report = diagnose(model, expect_frozen=["backbone.stem.*"], layers=LAYERS)
    finding = report["update.frozen.as_given"]
    assert finding.status == "fail", finding.message
    assert "backbone.stem.weight" in finding.message and "model.train()" in finding.message
    assert (
        report["update.frozen.moved"].status == "pass"
    )  # the copies' train() froze it: blind there
    assert report.failed_layer == "update"


def test_freeze_applied_at_init_too_passes():
    model = Detector(freeze_at_init=True)
    report = diagnose(model, expect_frozen=["backbone.stem.*"], layers=LAYERS)
    assert status(report, "update.frozen.as_given") == "pass"
    assert report.ok


def test_train_time_freeze_without_declaration_warns():
    finding = diagnose(Detector(), layers=LAYERS)["update.frozen.as_given"]
    assert finding.status == "warn" and "backbone.stem.weight" in finding.message


@pytest.mark.check("doctor.update.frozen.as_given", healthy=True)
def test_declared_but_frozen_by_no_grad_in_forward_passes():
    """Frozen through torch.no_grad in forward: requires_grad=True and in the optimizer, but
    nothing updates it, so nothing to fail."""

    class NoGradBackbone(nn.Module):
        def __init__(self):
            torch.manual_seed(0)
            super().__init__()
            self.backbone = nn.Linear(64, 32)
            self.head = nn.Linear(32, 10)

        def forward(self, x):
            with torch.no_grad():
                h = torch.relu(self.backbone(x))
            return self.head(h)

    report = diagnose(NoGradBackbone(), expect_frozen=["backbone.*"], layers=LAYERS)
    assert status(report, "update.frozen.as_given") == "pass"


def test_declared_frozen_left_trainable_fails_without_train_override():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    finding = diagnose(model, expect_frozen=["0.*"], layers=LAYERS)["update.frozen.as_given"]
    assert finding.status == "fail" and "get gradients and will train" in finding.message
