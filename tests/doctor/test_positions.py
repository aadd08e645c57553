"""model.positions: a model meant to read token order must change its output when the order of
its tokens changes (issue 35). Planted: the positional embedding computed but not added, added
after the attention, indexed by the batch row, position ids all zero; healthy twins: learned
absolute positions, rotary and ALiBi attention, and a bag of tokens (order-blind by design)."""

import math

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from tests.corpus.healthy import BagClassifier, EncoderClassifier, sentences
from tests.doctor.helpers import diagnose


def positions(model, data=None, loss_fn=None):
    data = sentences() if data is None else data
    loss_fn = nn.CrossEntropyLoss() if loss_fn is None else loss_fn
    return diagnose(model, data, loss_fn, layers=("model",))["model.positions"]


def sinusoid(length: int, d: int) -> torch.Tensor:
    pos = torch.arange(length)[:, None]
    freq = torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))
    table = torch.zeros(length, d)
    table[:, 0::2], table[:, 1::2] = torch.sin(pos * freq), torch.cos(pos * freq)
    return table


class Encoder(nn.Module):
    """A one-block encoder classifier whose positions are wired by ``how``."""

    def __init__(self, how: str, vocab=20, d=16, length=8, classes=2):
        torch.manual_seed(0)
        super().__init__()
        self.how = how
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(length, d) * 0.1)
        self.position_embed = nn.Embedding(length, d)
        self.register_buffer("sinusoid", sinusoid(length, d))
        self.block = nn.TransformerEncoderLayer(
            d, nhead=2, dim_feedforward=32, dropout=0.0, batch_first=True
        )
        self.out = nn.Linear(d, classes)

    def forward(self, tokens):
        n, t = tokens.shape
        h = self.embed(tokens)
        if self.how == "not_added":  # computed, then forgotten
            _ = h + self.sinusoid[:t]
        elif self.how == "after_attention":
            return self.out((self.block(h) + self.pos[:t]).mean(dim=1))
        elif self.how == "by_batch_row":  # pos[:n]: one vector per example, not per position
            h = h + self.pos[:n].unsqueeze(1) if n <= len(self.pos) else h
        elif self.how == "ids_reset":  # position ids that never count up
            h = h + self.position_embed(torch.zeros_like(tokens))
        elif self.how == "sinusoid":
            h = h + self.sinusoid[:t]
        return self.out(self.block(h).mean(dim=1))


class RelativeAttention(nn.Module):
    """One head of self-attention with rotary position encoding or ALiBi biases."""

    def __init__(self, d: int, kind: str):
        super().__init__()
        self.kind, self.d = kind, d
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def rotate(self, z: torch.Tensor) -> torch.Tensor:
        t, half = z.shape[1], self.d // 2
        freq = 1.0 / (10000 ** (torch.arange(half) / half))
        angle = torch.arange(t)[:, None] * freq
        cos, sin = angle.cos(), angle.sin()
        a, b = z[..., :half], z[..., half:]
        return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)

    def forward(self, h):
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        t = h.shape[1]
        bias = None
        if self.kind == "rotary":
            q, k = self.rotate(q), self.rotate(k)
        else:  # ALiBi: a penalty growing with distance
            distance = (torch.arange(t)[None, :] - torch.arange(t)[:, None]).abs()
            bias = -0.5 * distance.float()
        return self.proj(F.scaled_dot_product_attention(q, k, v, attn_mask=bias))


class RelativeEncoder(nn.Module):
    def __init__(self, kind: str, vocab=20, d=16, classes=2):
        torch.manual_seed(0)
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.attn = RelativeAttention(d, kind)
        self.out = nn.Linear(d, classes)

    def forward(self, tokens):
        h = self.embed(tokens)
        return self.out((h + self.attn(h)).mean(dim=1))


class Tagger(nn.Module):
    """A bidirectional encoder tagging every token, (N, T, C) output."""

    def __init__(self, add_positions: bool, vocab=16, d=16, length=12, tags=4):
        torch.manual_seed(0)
        super().__init__()
        self.add_positions = add_positions
        self.embed = nn.Embedding(vocab, d)
        self.pos_embed = nn.Parameter(torch.randn(length, d) * 0.1)
        self.block = nn.TransformerEncoderLayer(d, 2, 32, dropout=0.0, batch_first=True)
        self.out = nn.Linear(d, tags)

    def forward(self, tokens):
        h = self.embed(tokens)
        if self.add_positions:
            h = h + self.pos_embed[: tokens.shape[1]]
        return self.out(self.block(h))


def tags(n=128, length=12, vocab=16):
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, vocab, (n, length), generator=g)
    return x, (torch.arange(length) % 4).expand(n, length).contiguous()


def tag_loss(out, y):
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))


@pytest.mark.check("doctor.model.positions", planted=True)
@pytest.mark.parametrize("how", ["not_added", "after_attention", "by_batch_row", "ids_reset"])
def test_positions_that_never_reach_the_attention_fail(how):
    f = positions(Encoder(how))
    assert f.status == "fail", f.message
    assert "blind to order" in f.message and f.evidence["positional"]


@pytest.mark.check("doctor.model.positions", healthy=True)
@pytest.mark.parametrize("how", ["learned", "sinusoid"])
def test_absolute_positions_added_before_the_attention_pass(how):
    model = EncoderClassifier() if how == "learned" else Encoder("sinusoid")
    torch.manual_seed(0)
    f = positions(model)
    assert f.status == "pass", f.message


@pytest.mark.check("doctor.model.positions", healthy=True)
@pytest.mark.parametrize("kind", ["rotary", "alibi"])
def test_relative_positions_in_the_attention_pass(kind):
    f = positions(RelativeEncoder(kind))
    assert f.status == "pass", f.message


@pytest.mark.check("doctor.model.positions", planted=True)
def test_a_tagger_whose_positions_are_not_added_fails_and_its_fix_passes():
    # per-token outputs of a blind model only move with the tokens: that is still blindness
    f = positions(Tagger(add_positions=False), tags(), tag_loss)
    assert f.status == "fail" and f.evidence["per_position_output"], f.message
    assert positions(Tagger(add_positions=True), tags(), tag_loss).status == "pass"


def test_attention_with_no_positional_part_at_all_warns_and_a_bag_of_tokens_is_left_alone():
    class NoPositions(nn.Module):
        def __init__(self):
            torch.manual_seed(0)
            super().__init__()
            self.embed = nn.Embedding(20, 16)
            self.block = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
            self.out = nn.Linear(16, 2)

        def forward(self, tokens):
            return self.out(self.block(self.embed(tokens)).mean(dim=1))

    f = positions(NoPositions())
    assert f.status == "warn" and "reads a set" in f.message
    torch.manual_seed(0)
    assert positions(BagClassifier()).status == "skip"
