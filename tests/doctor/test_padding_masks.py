"""model.mask.padding: padding never reaches the outputs at real tokens (issue 35). Planted: a
boolean key-padding mask with the opposite meaning, a 0/1 float mask added to the scores,
mean pooling over the padding beside a right mask, in plain and dict batches; healthy twins:
the right boolean mask, a -inf float mask, masked pooling, and a recurrent tagger told of no
mask (left alone)."""

import pytest
import torch
from torch import nn

from tests.corpus.healthy import Tagger, padded_sentences
from tests.doctor.helpers import diagnose


class Encoder(nn.Module):
    """A transformer classifier over padded tokens (pad id 0); ``mask`` is how the key-padding
    mask is made from the tokens, ``pool`` whether the mean skips the padding."""

    def __init__(self, mask: str = "bool", pool: str = "masked", vocab=20, d=16, length=8):
        torch.manual_seed(0)
        super().__init__()
        self.mask, self.pool = mask, pool
        self.embed = nn.Embedding(vocab, d, padding_idx=0)
        self.pos = nn.Parameter(torch.randn(length, d) * 0.1)
        self.block = nn.TransformerEncoderLayer(d, 2, 32, dropout=0.0, batch_first=True)
        self.out = nn.Linear(d, 2)

    def key_padding(self, tokens):
        pad = tokens == 0
        if self.mask == "bool":
            return pad
        if self.mask == "inverted":  # a Hugging Face attention_mask (1 = keep) passed as is
            return tokens != 0
        if self.mask == "float01":  # attention_mask.float(): added to the scores, hides nothing
            return (tokens != 0).float()
        return torch.zeros(tokens.shape).masked_fill(pad, float("-inf"))  # "neg_inf"

    def forward(self, tokens):
        h = self.embed(tokens) + self.pos[: tokens.shape[1]]
        h = self.block(h, src_key_padding_mask=self.key_padding(tokens))
        if self.pool == "mean":  # the padding's outputs in the mean
            return self.out(h.mean(dim=1))
        keep = (tokens != 0).unsqueeze(-1).float()
        return self.out((h * keep).sum(1) / keep.sum(1))


def padding_finding(model, data=None):
    data = padded_sentences() if data is None else data
    return diagnose(model, data, nn.CrossEntropyLoss(), layers=("model",))["model.mask.padding"]


@pytest.mark.check("doctor.model.mask.padding", planted=True)
@pytest.mark.parametrize("mask", ["inverted", "float01"])
def test_a_key_padding_mask_in_the_wrong_form_fails(mask):
    f = padding_finding(Encoder(mask))
    assert f.status == "fail", f.message
    assert ("opposite" in f.message or "True at the real tokens" in f.message) == (
        mask == "inverted"
    )
    assert ("hides nothing" in f.message) == (mask == "float01")


@pytest.mark.check("doctor.model.mask.padding", healthy=True)
@pytest.mark.parametrize("mask", ["bool", "neg_inf"])
def test_a_right_key_padding_mask_with_masked_pooling_passes(mask):
    f = padding_finding(Encoder(mask))
    assert f.status == "pass", f.message


@pytest.mark.check("doctor.model.mask.padding", planted=True)
def test_mean_pooling_over_the_padding_beside_a_right_mask_fails():
    f = padding_finding(Encoder("bool", pool="mean"))
    assert f.status == "fail" and "trailing padding is cut" in f.message, f.message


class HFStyle(nn.Module):
    """forward(input_ids, attention_mask) as Hugging Face models take them (1 = a real token)."""

    def __init__(self, how: str = "right", vocab=20, d=16, length=8):
        torch.manual_seed(0)
        super().__init__()
        self.how = how
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(length, d) * 0.1)
        self.block = nn.TransformerEncoderLayer(d, 2, 32, dropout=0.0, batch_first=True)
        self.out = nn.Linear(d, 2)

    def forward(self, input_ids, attention_mask):
        h = self.embed(input_ids) + self.pos[: input_ids.shape[1]]
        ignore = attention_mask.bool() if self.how == "inverted" else attention_mask == 0
        h = self.block(h, src_key_padding_mask=ignore)
        if self.how == "mean":
            return self.out(h.mean(dim=1))
        keep = attention_mask.unsqueeze(-1).float()
        return self.out((h * keep).sum(1) / keep.sum(1))


def dict_batches():
    x, y = padded_sentences()
    mask = (x != 0).long()
    return [
        {"input_ids": x[i : i + 32], "attention_mask": mask[i : i + 32], "labels": y[i : i + 32]}
        for i in range(0, len(y), 32)
    ]


@pytest.mark.check("doctor.model.mask.padding", planted=True)
@pytest.mark.parametrize("how", ["inverted", "mean"])
def test_dict_batches_whose_padding_is_read_fail(how):
    f = padding_finding(HFStyle(how), dict_batches())
    assert f.status == "fail", f.message
    if how == "mean":
        assert "padding's token ids change" in f.message


@pytest.mark.check("doctor.model.mask.padding", healthy=True)
def test_dict_batches_with_a_right_attention_mask_pass():
    f = padding_finding(HFStyle("right"), dict_batches())
    assert f.status == "pass" and "padding's token ids change" in f.message, f.message


def test_a_recurrent_tagger_told_of_no_mask_is_left_alone():
    g = torch.Generator().manual_seed(0)
    x = torch.randint(1, 16, (64, 8), generator=g)
    x[:, 6:] = 0
    y = x % 4
    y[:, 6:] = -100
    torch.manual_seed(0)
    f = diagnose(Tagger(), (x, y), nn.CrossEntropyLoss(), layers=("model",))["model.mask.padding"]
    assert f.status == "skip" and "no key-padding mask" in f.message
