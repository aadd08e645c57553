"""data.targets.padding: targets at padded positions must be ones the loss skips (issue 35).
Planted: a tagger whose padding is tagged 0 (a real tag) and a language model whose padded
targets are the pad id, both under a loss without ignore_index; healthy twins: padding tagged
-100, and the pad id passed as ignore_index."""

import functools

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from tests.corpus.healthy import Tagger
from tests.doctor.helpers import PaddedLM, diagnose, padded_lm_data


def tagged(pad_tag: int, n: int = 160, length: int = 8):
    g = torch.Generator().manual_seed(0)
    x = torch.randint(1, 16, (n, length), generator=g)
    pad = torch.arange(length) >= torch.randint(3, length + 1, (n, 1), generator=g)
    x[pad] = 0
    y = (x + x.roll(1, dims=1)) % 4
    y[pad] = pad_tag
    return x, y


def padded_targets(model, data, loss_fn):
    torch.manual_seed(0)
    return diagnose(model, data, loss_fn, layers=("data",))["data.targets.padding"]


@pytest.mark.check("doctor.data.targets.padding", planted=True)
def test_padding_tagged_with_a_real_tag_fails():
    f = padded_targets(Tagger(), tagged(0), nn.CrossEntropyLoss())
    assert f.status == "fail" and f.evidence["scored_values"] == [0], f.message
    assert "ignore_index" in f.message


@pytest.mark.check("doctor.data.targets.padding", healthy=True)
def test_padding_tagged_minus_100_passes():
    f = padded_targets(Tagger(), tagged(-100), nn.CrossEntropyLoss())
    assert f.status == "pass", f.message


def lm_loss(out, y, **kw):
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1), **kw)


@pytest.mark.check("doctor.data.targets.padding", planted=True)
def test_a_language_model_scoring_its_padding_fails():
    f = padded_targets(PaddedLM(), padded_lm_data(), lm_loss)
    assert f.status == "fail" and "ignore_index=0" in f.message, f.message


@pytest.mark.check("doctor.data.targets.padding", healthy=True)
def test_the_pad_id_passed_as_ignore_index_passes():
    f = padded_targets(PaddedLM(), padded_lm_data(), functools.partial(lm_loss, ignore_index=0))
    assert f.status == "pass", f.message


# -- data.targets.shift ---------------------------------------------------------------------------
def shifting_lm_loss(out, labels):
    """Hugging Face's convention: the loss shifts the labels by one."""
    return lm_loss(out[:, :-1], labels[:, 1:])


@pytest.mark.check("doctor.data.targets.shift", planted=True)
def test_targets_shifted_in_the_data_and_again_in_the_loss_fail():
    from tests.doctor.helpers import TinyLM, token_data

    f = diagnose(TinyLM(), token_data(), shifting_lm_loss, layers=("data",))["data.targets.shift"]
    assert f.status == "fail" and "token after next" in f.message, f.message


@pytest.mark.check("doctor.data.targets.shift", healthy=True)
def test_targets_shifted_once_pass_in_the_data_or_in_the_loss():
    from tests.doctor.helpers import TinyLM, token_data

    x, y = token_data()
    f = diagnose(TinyLM(), (x, y), lm_loss, layers=("data",))["data.targets.shift"]
    assert f.status == "pass", f.message
    g = diagnose(TinyLM(), (x, x.clone()), shifting_lm_loss, layers=("data",))
    assert g["data.targets.shift"].status == "skip"  # labels are the inputs: the loss shifts
