"""A healthy run says nothing (issue 35): facts that demand no action are notes in the
evidence, and each check still warns on the suspicious variant of the same fact."""

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from tests.doctor.helpers import diagnose, digits, mlp
from tests.doctor.test_update_layer import Siamese


def data_finding(check_id, data, loss_fn=None, model=None, **kw):
    model = mlp() if model is None else model
    loss_fn = nn.CrossEntropyLoss() if loss_fn is None else loss_fn
    return diagnose(model, data, loss_fn, layers=("data",), **kw)[check_id]


# -- data.inputs.duplicates ---------------------------------------------------------------------
class MostlyItemZero(Dataset):
    """A dataset whose __getitem__ ignores most indices (``self.x[0]`` where ``i`` was meant)."""

    def __init__(self):
        self.x, self.y = digits()

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return (self.x[0] if i % 4 else self.x[i]), self.y[i]


@pytest.mark.check("doctor.data.inputs.duplicates", planted=True)
def test_a_loader_returning_one_item_for_most_indices_warns():
    f = data_finding("data.inputs.duplicates", DataLoader(MostlyItemZero(), batch_size=32))
    assert f.status == "warn" and f.evidence["most_repeated_input"] > 0.5 * f.evidence["examples"]


@pytest.mark.check("doctor.data.inputs.duplicates", healthy=True)
def test_inputs_repeated_evenly_are_a_note():
    x, y = digits()
    x, y = x[:150].repeat(4, 1), y[:150].repeat(4)  # each example four times, as in a small set
    f = data_finding("data.inputs.duplicates", (x, y))
    assert f.status == "pass" and "repeated about" in f.evidence["note"], f.message


# -- data.labels.degenerate ---------------------------------------------------------------------
def rare_positives():
    x, y = digits()
    return x, ((y == 0) & (x[:, 20] > 0.5)).float()


def one_logit():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 16), nn.ReLU(), nn.Linear(16, 1), nn.Flatten(0))


@pytest.mark.check("doctor.data.labels.degenerate", planted=True)
def test_a_rare_class_under_an_unweighted_loss_warns():
    f = data_finding(
        "data.labels.degenerate", rare_positives(), nn.BCEWithLogitsLoss(), one_logit()
    )
    assert f.status == "warn" and "does not weight" in f.message, f.message


@pytest.mark.check("doctor.data.labels.degenerate", healthy=True)
def test_a_rare_class_under_a_weighted_loss_is_a_note():
    loss = nn.BCEWithLogitsLoss(pos_weight=torch.tensor(20.0))
    f = data_finding("data.labels.degenerate", rare_positives(), loss, one_logit())
    assert f.status == "pass" and "weights the classes" in f.evidence["note"], f.message


# -- model.grad.coverage ------------------------------------------------------------------------
def pairs():
    x, y = digits()
    return x[:400, ::2].reshape(200, 64), (y[:400:2] == y[1:400:2]).long()


@pytest.mark.check("doctor.model.grad.coverage", healthy=True)
def test_a_zero_gradient_the_output_does_not_depend_on_is_a_note():
    f = diagnose(Siamese(), pairs(), layers=("model",))["model.grad.coverage"]
    assert f.status == "pass" and f.evidence["without_effect"] == ["enc.2.bias"], f.message
    assert "could be removed" in f.evidence["note"]


@pytest.mark.check("doctor.model.grad.coverage", planted=True)
def test_a_zero_gradient_of_a_parameter_the_output_depends_on_still_warns():
    class Clamped(nn.Module):  # clamp(0, 0) zeroes the gradient, the bias still shifts the output
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.a, self.b = nn.Linear(64, 16), nn.Linear(16, 10)

        def forward(self, x):
            h = self.a(x)
            return self.b(h - self.a.bias + self.a.bias.clamp(0, 0) + self.a.bias.detach())

    f = diagnose(Clamped(), digits(), layers=("model",))["model.grad.coverage"]
    assert f.status == "warn" and "a.bias" in f.message, f.message
