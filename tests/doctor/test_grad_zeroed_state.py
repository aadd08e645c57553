"""update.grad.zeroed on a forward that updates state of its own (spectral norm's power
iteration): the gradients of two identical calls differ without accumulating (issue 35: a
healthy run says nothing), and a missing zero_grad is still caught beside it."""

import pytest
import torch
from torch import nn

from tests.doctor.helpers import diagnose, no_zero_grad_step


def spectral_mlp():
    torch.manual_seed(0)
    sn = nn.utils.parametrizations.spectral_norm
    return nn.Sequential(
        sn(nn.Linear(64, 64)), nn.ReLU(), sn(nn.Linear(64, 64)), nn.ReLU(), nn.Linear(64, 10)
    )


@pytest.mark.check("doctor.update.grad.zeroed", healthy=True)
def test_spectral_norm_state_explains_gradients_that_differ():
    f = diagnose(spectral_mlp(), layers=("update",))["update.grad.zeroed"]
    assert f.status == "pass", f.message


@pytest.mark.check("doctor.update.grad.zeroed", planted=True)
def test_a_missing_zero_grad_beside_spectral_norm_still_fails():
    f = diagnose(spectral_mlp(), layers=("update",), step=no_zero_grad_step)["update.grad.zeroed"]
    assert f.status == "fail", f.message
