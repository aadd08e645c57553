"""data.labels.skipped: a loss whose ignore_index is a label real targets carry."""

from __future__ import annotations

import functools

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from tests.doctor.helpers import Tagger, diagnose, digits, mlp, tag_data

LAYERS = ("data",)
CHECK = "data.labels.skipped"


def token_loss(out, y, ignore_index=-100):
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1), ignore_index=ignore_index)


skip_zero = functools.partial(token_loss, ignore_index=0)


def finding(model, data, loss_fn):
    return diagnose(model, data, loss_fn, layers=LAYERS)[CHECK]


def padded_with_zero(tags_from_one: bool = False, left: bool = False):
    """tag_data with padding tagged 0; ``tags_from_one``: real tags are 1..3, so 0 is only
    padding; ``left``: the padding moved to the start of each row."""
    x, y = tag_data()
    pad = x == 0
    if tags_from_one:
        y = torch.where(pad, y, y % 3 + 1)
    y[pad] = 0
    if left:
        x, y = x.flip(1), y.flip(1)
    return x, y


@pytest.mark.check("doctor.data.labels.skipped", planted=True)
def test_padding_index_that_is_also_a_real_tag_fails():
    found = finding(Tagger(), padded_with_zero(), skip_zero)
    assert found.status == "fail", found.message
    assert found.evidence["skipped_labels"] == [0] and "-100" in found.message
    assert found.evidence["between_scored_targets"] > 100


def test_the_same_ignore_index_read_from_a_loss_module_fails():
    class TokenCE(nn.CrossEntropyLoss):
        def forward(self, out, y):
            return super().forward(out.reshape(-1, out.shape[-1]), y.reshape(-1))

    assert finding(Tagger(), padded_with_zero(), TokenCE(ignore_index=0)).status == "fail"


def test_zero_used_only_for_padding_at_either_end_passes():
    for left in (False, True):
        found = finding(Tagger(), padded_with_zero(tags_from_one=True, left=left), skip_zero)
        assert found.status == "pass" and "ends of sequences" in found.message, found.message


@pytest.mark.check("doctor.data.labels.skipped", healthy=True)
def test_padding_tagged_minus_100_passes():
    found = finding(Tagger(), tag_data(), token_loss)
    assert found.status == "pass" and "every label" in found.message


def test_classifier_scoring_every_class_passes():
    assert finding(mlp(), digits(), nn.CrossEntropyLoss()).status == "pass"


def test_classifier_skipping_a_class_warns():
    found = finding(mlp(), digits(), nn.CrossEntropyLoss(ignore_index=0))
    assert found.status == "warn" and found.evidence["skipped_labels"] == [0]


class SureOfThree(nn.Module):
    """A classifier certain that everything is a 3 (a pretrained model far from this data):
    softmax rounds to exactly 1, so its own output gives label 3 no gradient, though the loss
    scores it."""

    def __init__(self):
        super().__init__()
        self.body = mlp()
        self.register_buffer("prior", 1e4 * F.one_hot(torch.tensor(3), 10).float())

    def forward(self, x):
        return self.body(x) + self.prior


def test_a_saturated_confident_classifier_is_not_read_as_skipping_its_class():
    found = finding(SureOfThree(), digits(), nn.CrossEntropyLoss())
    assert found.status == "pass", found.message
