"""Small real setups for the controls: digits, 2-D toy data and next-token sequences.

Each factory seeds torch itself, so a test's outcome does not depend on which tests ran before.
"""

from __future__ import annotations

from functools import lru_cache

import torch
from torch import nn


@lru_cache(maxsize=None)
def digits(n: int = 800) -> tuple[torch.Tensor, torch.Tensor]:
    """scikit-learn's 8x8 digits, scaled to [0, 1]."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    return torch.tensor(X[:n] / 16.0, dtype=torch.float32), torch.tensor(y[:n])


def multilabel_digits(n: int = 800) -> tuple[torch.Tensor, torch.Tensor]:
    """Digits with three yes/no labels each (at least 5? even? has a closed loop?): float 0/1
    targets."""
    X, y = digits(n)
    loops = torch.isin(y, torch.tensor([0, 4, 6, 8, 9]))
    return X, torch.stack([y >= 5, y % 2 == 0, loops], dim=1).float()


def xor(n: int = 400, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Two features whose signs' XOR is the label: no line separates the classes."""
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, 2, generator=g) * 2 - 1
    return X, ((X[:, 0] > 0) ^ (X[:, 1] > 0)).long()


def product(n: int = 400, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """A regression target no linear function of the inputs approximates: 3 * x1 * x2."""
    X = xor(n, seed)[0]
    return X, (3 * X[:, 0] * X[:, 1]).unsqueeze(1)


VOCAB, LENGTH = 12, 10


def markov_sequences(n: int = 400, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Token sequences where each token has two equally likely successors; targets are next
    tokens."""
    g = torch.Generator().manual_seed(seed)
    successors = torch.stack([torch.randperm(VOCAB, generator=g)[:2] for _ in range(VOCAB)])
    seq = torch.empty(n, LENGTH + 1, dtype=torch.long)
    seq[:, 0] = torch.randint(VOCAB, (n,), generator=g)
    for t in range(LENGTH):
        pick = torch.randint(2, (n,), generator=g)
        seq[:, t + 1] = successors[seq[:, t], pick]
    return seq[:, :-1].contiguous(), seq[:, 1:].contiguous()


def seeded(factory):
    def build(*args, **kwargs):
        torch.manual_seed(0)
        return factory(*args, **kwargs)

    build.__name__ = factory.__name__
    return build


@seeded
def mlp(d_in: int = 64, classes: int = 10, hidden: int = 64) -> nn.Module:
    return nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, classes))


@seeded
def bottleneck(d_in: int = 64, classes: int = 10) -> nn.Module:
    """An MLP whose hidden representation is squeezed through a single unit."""
    return nn.Sequential(nn.Linear(d_in, 64), nn.ReLU(), nn.Linear(64, 1), nn.Linear(1, classes))


@seeded
def linear(d_in: int, d_out: int) -> nn.Module:
    return nn.Linear(d_in, d_out)


@seeded
def regression_mlp(d_in: int = 2) -> nn.Module:
    return nn.Sequential(
        nn.Linear(d_in, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1)
    )


class Image(nn.Module):
    """Flat 64-pixel digits as 1x8x8 images."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(len(x), 1, 8, 8)


@seeded
def cnn() -> nn.Module:
    return nn.Sequential(
        Image(),
        nn.Conv2d(1, 8, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(8 * 4 * 4, 10),
    )


class GRULanguageModel(nn.Module):
    def __init__(self, width: int = 24):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, width)
        self.rnn = nn.GRU(width, width, batch_first=True)
        self.head = nn.Linear(width, VOCAB)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.rnn(self.embed(x))[0])


class TinyTransformer(nn.Module):
    """One pre-norm attention block; ``causal=False`` is the planted bug (no mask)."""

    def __init__(self, width: int = 24, causal: bool = True):
        super().__init__()
        self.causal = causal
        self.embed = nn.Embedding(VOCAB, width)
        self.position = nn.Parameter(torch.randn(LENGTH, width) * 0.1)
        layer = nn.TransformerEncoderLayer(
            width, 2, 2 * width, dropout=0.0, batch_first=True, norm_first=True
        )
        self.blocks = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.head = nn.Linear(width, VOCAB)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(t) if self.causal else None
        return self.head(
            self.blocks(self.embed(x) + self.position[:t], mask=mask, is_causal=self.causal)
        )


gru = seeded(GRULanguageModel)
transformer = seeded(TinyTransformer)


def next_token_loss(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))


def adam(model: nn.Module, lr: float = 1e-3) -> torch.optim.Optimizer:
    return torch.optim.Adam(model.parameters(), lr=lr)


def diagnose(model: nn.Module, data, loss_fn, *, lr: float = 1e-3, optimizer=None, **kwargs):
    """``labcoat.diagnose`` with Adam, no ledger and no progress bars."""
    import labcoat

    return labcoat.diagnose(
        model, data, loss_fn, optimizer or adam(model, lr), ledger=False, progress=False, **kwargs
    )
