"""Healthy setups pass every layer, controls included (run with run_all so nothing is hidden)."""

from __future__ import annotations

import pytest
from torch import nn

from labcoat.doctor import LAYERS
from tests.doctor_controls import setups as s

CE = nn.CrossEntropyLoss()

HEALTHY = {
    "mlp": lambda: (s.mlp(), s.digits(), CE, 1e-3),
    "cnn": lambda: (s.cnn(), s.digits(), CE, 3e-3),
    "logistic regression": lambda: (s.linear(64, 10), s.digits(), CE, 1e-2),
    "multi-label mlp": lambda: (
        s.mlp(classes=3),
        s.multilabel_digits(),
        nn.BCEWithLogitsLoss(),
        1e-3,
    ),
    "regression mlp": lambda: (s.regression_mlp(), s.product(), nn.MSELoss(), 3e-3),
    "gru": lambda: (s.gru(), s.markov_sequences(), s.next_token_loss, 1e-2),
    "masked transformer": lambda: (s.transformer(), s.markov_sequences(), s.next_token_loss, 1e-2),
}


#: the slowest healthy setup runs in the slow tier; the fast tier keeps a sequence model (the
#: masked transformer) and a GRU's controls in tests/doctor_controls/test_shuffle.py
SLOW = {"gru"}


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in HEALTHY]
)
def test_healthy_setup_passes_every_layer(name):
    model, data, loss_fn, lr = HEALTHY[name]()
    report = s.diagnose(model, data, loss_fn, lr=lr, run_all=True)
    failures = [f"{f.check}: {f.message}" for f in report.findings if f.failed]
    assert report.ok, failures
    assert report.layers_run == list(LAYERS)
    assert report["overfit.batch"].status == "pass"
    assert report["shuffle.pvalue"].status == "pass"
    if report.task == "sequence":
        assert report["shuffle.random_tokens"].status == "pass"
        labels = report["shuffle.labels"]
        assert (
            labels.status == "skip" and "random_tokens" in labels.message
        )  # labels live in the inputs
    else:
        assert report["shuffle.labels"].status == "pass"
    assert report.extras["selftest"]["ok"] is True
