"""Sequence-model silent errors (issue 35): positions, masks, targets and hand-written
gradients, each a bug reduced from a public report beside healthy setups that look like it.

The bugs are rebuilt on generated token sequences (the ascending-run data of
``tests/doctor/test_signal_small_data.py``, where order carries the label) and on digits;
each names the layer where the doctor must stop.
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F
from torch import nn

from tests.corpus.healthy import adam, digits, padded_sentences, seed, sentences
from tests.corpus.registry import Verdict, bug, doctor_verdict, healthy


def _ascents(n: int = 256, length: int = 8, vocab: int = 20):
    """Padded token sequences labelled by whether they rise more often than they fall."""
    g = torch.Generator().manual_seed(0)
    x = torch.randint(1, vocab, (n, length), generator=g)
    lengths = torch.randint(4, length + 1, (n,), generator=g)
    real = torch.arange(length) < lengths[:, None]
    up = ((x[:, 1:] > x[:, :-1]) & real[:, 1:]).sum(1)
    down = ((x[:, 1:] < x[:, :-1]) & real[:, 1:]).sum(1)
    return x.masked_fill(~real, 0), (up > down).long()


def _sinusoid(length: int, d: int) -> torch.Tensor:
    """Sinusoidal encodings of positions 0..length, shaped (1, length + 1, d)."""
    freq = torch.exp(torch.arange(0, d, 2) * (-torch.log(torch.tensor(10000.0)) / d))
    table = torch.zeros(1, length + 1, d)
    table[0, :, 0::2] = torch.sin(torch.arange(length + 1)[:, None] * freq)
    table[0, :, 1::2] = torch.cos(torch.arange(length + 1)[:, None] * freq)
    return table


class SinusoidEncoder(nn.Module):
    """A transformer classifier with a sinusoidal positional encoding added by ``how``."""

    def __init__(self, how: str = "right", vocab=20, d=16, length=8, classes=2):
        super().__init__()
        self.how = how
        self.embed = nn.Embedding(vocab, d, padding_idx=0)
        self.register_buffer("pe", _sinusoid(length, d))
        self.block = nn.TransformerEncoderLayer(
            d, nhead=2, dim_feedforward=32, dropout=0.1, batch_first=True
        )
        self.out = nn.Linear(d, classes)

    def forward(self, tokens):
        h = self.embed(tokens)
        t = tokens.shape[1]
        if self.how == "right":
            h = h + self.pe[:, :t, :]
        elif self.how == "one_position":  # pe[:, t, :]: the slice's colon is missing
            h = h + self.pe[:, t, :].unsqueeze(1)
        pad = tokens == 0
        h = self.block(h, src_key_padding_mask=pad)
        keep = (~pad).unsqueeze(-1).float()
        return self.out((h * keep).sum(1) / keep.sum(1))


@bug(
    "positional_encoding_of_one_position",
    expect="model",
    source="https://github.com/DiffPoseTalk/DiffPoseTalk/issues/20",
)
def positional_encoding_of_one_position() -> Verdict:
    """``x + self.pe[:, x.shape[1], :]`` adds the encoding of position T to every position (the
    slice's colon is missing): the transformer reads a bag of tokens. Reduced to a classifier
    whose label is the order of its tokens."""
    seed()
    model = SinusoidEncoder("one_position")
    return doctor_verdict(
        model, _ascents(), nn.CrossEntropyLoss(), adam(model, 3e-3), run_all=False
    )


@bug(
    "positional_encoding_never_added",
    expect="model",
    source="https://github.com/guocheng2025/Transformer-Encoder/issues/1",
)
def positional_encoding_never_added() -> Verdict:
    """The positional encoding module is defined but never applied to the inputs."""
    seed()
    model = SinusoidEncoder("never")
    return doctor_verdict(
        model, _ascents(), nn.CrossEntropyLoss(), adam(model, 3e-3), run_all=False
    )


@healthy(
    "sinusoidal_positions_padding_mask",
    source="a transformer classifier with sinusoidal positions and a key padding mask",
)
def sinusoidal_positions_padding_mask():
    seed()
    model = SinusoidEncoder("right")
    return doctor_verdict(model, _ascents(), nn.CrossEntropyLoss(), adam(model, 3e-3))


class RotaryClassifier(nn.Module):
    """One head of self-attention with rotary position encoding (RoFormer/LLaMA style)."""

    def __init__(self, vocab=20, d=16, classes=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.norm = nn.LayerNorm(d)
        self.out = nn.Linear(d, classes)
        half = d // 2
        self.register_buffer("rotary_freq", 1.0 / (10000 ** (torch.arange(half) / half)))

    def rotate(self, z):
        angle = torch.arange(z.shape[1])[:, None] * self.rotary_freq
        half = z.shape[-1] // 2
        a, b = z[..., :half], z[..., half:]
        return torch.cat([a * angle.cos() - b * angle.sin(), a * angle.sin() + b * angle.cos()], -1)

    def forward(self, tokens):
        h = self.embed(tokens)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        attn = F.scaled_dot_product_attention(self.rotate(q), self.rotate(k), v)
        h = self.norm(h + self.proj(attn))
        return self.out(h.mean(dim=1))


@healthy("rotary_attention_classifier", source="self-attention with rotary positions (RoPE)")
def rotary_attention_classifier():
    seed()
    model = RotaryClassifier()
    return doctor_verdict(model, sentences(), nn.CrossEntropyLoss(), adam(model, 1e-2))


class KeyPaddingEncoder(nn.Module):
    """A transformer classifier whose key padding mask is built from ``keep`` (1 = a token)."""

    def __init__(self, inverted: bool, vocab=20, d=16, length=8, classes=2):
        super().__init__()
        self.inverted = inverted
        self.embed = nn.Embedding(vocab, d, padding_idx=0)
        self.pos = nn.Parameter(torch.randn(length, d) * 0.1)
        self.block = nn.TransformerEncoderLayer(d, 2, 32, dropout=0.1, batch_first=True)
        self.out = nn.Linear(d, classes)

    def forward(self, tokens):
        keep = tokens != 0
        h = self.embed(tokens) + self.pos[: tokens.shape[1]]
        h = self.block(h, src_key_padding_mask=keep if self.inverted else ~keep)
        weights = keep.unsqueeze(-1).float()
        return self.out((h * weights).sum(1) / weights.sum(1).clamp_min(1))


@bug(
    "key_padding_mask_with_the_opposite_meaning",
    expect="model",
    source="https://github.com/mlwithme/TransformerTranslation/issues/2",
)
def key_padding_mask_with_the_opposite_meaning() -> Verdict:
    """``padding_mask = (src != PAD_IDX)`` passed as the key padding mask: PyTorch ignores the
    keys where it is True, so every real token is hidden and only padding is attended."""
    seed()
    x, y = padded_sentences()
    model = KeyPaddingEncoder(inverted=True)
    return doctor_verdict(model, (x, y), nn.CrossEntropyLoss(), adam(model, 1e-2), run_all=False)


def shifting_lm_loss(out, labels):
    """A causal LM loss that shifts the labels itself (Hugging Face's ForCausalLMLoss)."""
    return F.cross_entropy(out[:, :-1].reshape(-1, out.shape[-1]), labels[:, 1:].reshape(-1))


@bug(
    "labels_shifted_in_the_data_and_the_loss",
    expect="data",
    source="https://github.com/huggingface/transformers/pull/46898",
)
def labels_shifted_in_the_data_and_the_loss() -> Verdict:
    """Florence2 shifted its labels before a loss that shifts them again, so the model trained
    to predict the token after next (also Moonshine, CohereASR; transformers#32944 for users
    who pre-shift). Reduced to a tiny causal LM given next-token targets and a shifting loss."""
    from tests.doctor.helpers import TinyLM, token_data

    model = TinyLM()
    return doctor_verdict(model, token_data(), shifting_lm_loss, adam(model, 3e-3), run_all=False)


class ISRLU(torch.autograd.Function):
    """The inverse square root linear unit; ``drop_grad_out`` is the reported backward."""

    drop_grad_out = False

    @staticmethod
    def forward(ctx, x):
        negatives = torch.clamp(x, max=0)
        nisr = torch.rsqrt(1.0 + negatives**2)
        ctx.save_for_backward(nisr)
        return x * nisr

    @staticmethod
    def backward(ctx, grad_out):
        (nisr,) = ctx.saved_tensors
        return nisr**3 if ISRLU.drop_grad_out else grad_out * nisr**3


class ISRLUNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(64, 32), nn.Linear(32, 10)

    def forward(self, x):
        return self.b(ISRLU.apply(self.a(x)))


@functools.cache
def _isrlu_verdict(buggy: bool) -> Verdict:
    ISRLU.drop_grad_out = buggy
    try:
        seed()
        model = ISRLUNet()
        return doctor_verdict(
            model, digits(), nn.CrossEntropyLoss(), adam(model, 3e-3), run_all=not buggy
        )
    finally:
        ISRLU.drop_grad_out = False


@bug(
    "custom_function_backward_drops_grad_output",
    expect="model",
    source="https://github.com/pytorch/pytorch/issues/4355",
)
def custom_function_backward_drops_grad_output() -> Verdict:
    """An ISRLU activation whose backward returns ``ctx.nisr ** 3`` without multiplying by the
    incoming gradient: the loss still falls a little, along the wrong direction."""
    return _isrlu_verdict(True)


@healthy("custom_function_right_backward", source="a custom autograd.Function (ISRLU), right")
def custom_function_right_backward():
    return _isrlu_verdict(False)


@healthy(
    "padded_causal_lm_pad_is_ignore_index",
    source="a causal LM over sequences padded with id 0, cross_entropy(ignore_index=0)",
)
def padded_causal_lm_pad_is_ignore_index():
    """Its padding counted as targets to fit and as a token to draw: overfit.batch and
    shuffle.random_tokens failed it."""
    from tests.doctor.helpers import PaddedLM, padded_lm_data

    def loss(out, y):
        return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1), ignore_index=0)

    model = PaddedLM()
    return doctor_verdict(model, padded_lm_data(), loss, adam(model, 3e-3))
