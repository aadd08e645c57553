"""A warning is named in the verdict and carried by to_dict (issue 24, item 2): a setup that only
warns is "healthy, with N warnings: …", never "healthy: no check failed". Twins: the same setups
done on purpose (a declared frozen layer, eval mode with nothing mode-dependent) warn of nothing.
"""

from __future__ import annotations

import torch

from tests.doctor.helpers import diagnose, digits, mlp


def _data():
    x, y = digits()
    keep = (x > 0).float().mean(0) > 0.1  # no constant pixel, of which data.features.* warns
    return x[:, keep], y


def _frozen_first_layer(expect_frozen=()):
    x, y = _data()
    model = mlp(d_in=x.shape[1])
    for p in model[0].parameters():
        p.requires_grad_(False)
    trainable = [p for p in model.parameters() if p.requires_grad]
    return diagnose(
        model, (x, y), optimizer=torch.optim.Adam(trainable, 1e-3), expect_frozen=expect_frozen
    )


def test_a_layer_frozen_by_mistake_is_named_in_the_verdict():
    report = _frozen_first_layer()
    assert report.ok and [f.check for f in report.warnings] == ["model.params.frozen"]
    assert report.summary().startswith("healthy, with 1 warning: model.params.frozen (")
    data = report.to_dict()
    assert data["verdict"] == report.summary()
    assert data["warnings"] == [
        {"check": "model.params.frozen", "message": report["model.params.frozen"].message}
    ]
    assert str(report).splitlines()[-1] == report.summary()


def test_a_declared_frozen_layer_warns_of_nothing():
    report = _frozen_first_layer(expect_frozen=["0.*"])
    assert report.ok and report.warnings == [], [f.message for f in report.warnings]
    assert report.summary().startswith("healthy: no check failed")
    assert report.to_dict()["warnings"] == []


def _eval_mode(dropout: bool):
    x, y = _data()
    torch.manual_seed(0)
    layers = [torch.nn.Linear(x.shape[1], 32), torch.nn.ReLU()]
    layers += [torch.nn.Dropout(0.3)] if dropout else []
    model = torch.nn.Sequential(*layers, torch.nn.Linear(32, 10)).eval()
    return diagnose(model, (x, y))


def test_dropout_left_in_eval_mode_is_named_in_the_verdict():
    report = _eval_mode(dropout=True)
    assert report.ok and "update.mode.as_given" in [f.check for f in report.warnings]
    assert "update.mode.as_given" in report.summary()
    assert report.summary().startswith(f"healthy, with {len(report.warnings)} warning")


def test_eval_mode_without_dropout_warns_of_nothing():
    report = _eval_mode(dropout=False)
    assert report.ok and report.warnings == [], [f.message for f in report.warnings]
    assert report.summary().startswith("healthy: no check failed")
