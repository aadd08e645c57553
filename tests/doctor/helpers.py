"""Small real setups for doctor tests: digits (classification), diabetes (regression), tokens."""

from __future__ import annotations

import functools

import numpy as np
import torch
from sklearn.datasets import load_diabetes, load_digits
from torch import nn

import labcoat
from labcoat.doctor.case import standard_step


@functools.lru_cache(maxsize=None)
def _digits():
    x, y = load_digits(return_X_y=True)
    return torch.tensor(x[:800] / 16.0, dtype=torch.float32), torch.tensor(y[:800])


def digits():
    x, y = _digits()
    return x.clone(), y.clone()


@functools.lru_cache(maxsize=None)
def _diabetes():
    x, y = load_diabetes(return_X_y=True)
    x = (x - x.mean(0)) / x.std(0)
    y = (y - y.mean()) / y.std()
    return torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)


def diabetes():
    x, y = _diabetes()
    return x.clone(), y.clone()


def mlp(d_in=64, d_out=10, hidden=32, seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, d_out))


class Squeeze(nn.Module):
    def forward(self, x):
        return x.squeeze(-1)


def regressor(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1), Squeeze())


def diagnose(model, data=None, loss_fn=None, optimizer=None, **kw):
    data = digits() if data is None else data
    loss_fn = nn.CrossEntropyLoss() if loss_fn is None else loss_fn
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3) if optimizer is None else optimizer
    kw.setdefault("run_all", True)
    kw.setdefault("layers", ("data", "model", "update"))
    kw.setdefault("ledger", False)
    return labcoat.diagnose(model, data, loss_fn, optimizer, **kw)


def status(report, check_id):
    return report[check_id].status


class TinyLM(nn.Module):
    """A one-block transformer language model; ``causal=False`` plants a missing mask."""

    def __init__(self, vocab=16, d=32, length=12, causal=True, seed=0):
        torch.manual_seed(seed)
        super().__init__()
        self.causal = causal
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(length, d) * 0.1)
        self.block = nn.TransformerEncoderLayer(
            d, nhead=2, dim_feedforward=64, dropout=0.0, batch_first=True
        )
        self.out = nn.Linear(d, vocab)

    def forward(self, tokens):
        t = tokens.shape[1]
        h = self.embed(tokens) + self.pos[:t]
        mask = nn.Transformer.generate_square_subsequent_mask(t) if self.causal else None
        return self.out(self.block(h, src_mask=mask, is_causal=self.causal))


def token_data(n=256, length=12, vocab=16, seed=0):
    """Next-token data from a deterministic rule (each token is the previous plus one, mod V)."""
    g = torch.Generator().manual_seed(seed)
    start = torch.randint(0, vocab, (n, 1), generator=g)
    seq = (start + torch.arange(length + 1)) % vocab
    return seq[:, :-1].contiguous(), seq[:, 1:].contiguous()


class PaddedLM(nn.Module):
    """A causal language model whose embedding knows the pad id (0)."""

    def __init__(self, vocab=16, d=16, length=8):
        torch.manual_seed(0)
        super().__init__()
        self.embed = nn.Embedding(vocab, d, padding_idx=0)
        self.pos = nn.Parameter(torch.randn(length, d) * 0.1)
        self.block = nn.TransformerEncoderLayer(d, 2, 32, dropout=0.0, batch_first=True)
        self.out = nn.Linear(d, vocab)

    def forward(self, tokens):
        t = tokens.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(t)
        return self.out(
            self.block(self.embed(tokens) + self.pos[:t], src_mask=mask, is_causal=True)
        )


def padded_lm_data(n=160, length=8):
    """Counting sequences of tokens 1..15 cut at random lengths and padded with 0."""
    g = torch.Generator().manual_seed(0)
    start = torch.randint(1, 15, (n, 1), generator=g)
    seq = (start + torch.arange(length + 1)) % 15 + 1
    ends = torch.randint(4, length + 1, (n, 1), generator=g)
    seq = seq.masked_fill(torch.arange(length + 1) > ends, 0)
    return seq[:, :-1].contiguous(), seq[:, 1:].contiguous()


def lm_loss(out, y):
    return nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))


def as_numpy(data):
    return tuple(np.asarray(t) for t in data)


class Tagger(nn.Module):
    """A token tagger that reads the whole sentence (a bidirectional GRU): not causal, and need not
    be."""

    def __init__(self, vocab=16, tags=4, d=16, seed=0):
        torch.manual_seed(seed)
        super().__init__()
        self.embed = nn.Embedding(vocab, d, padding_idx=0)
        self.rnn = nn.GRU(d, d, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * d, tags)

    def forward(self, tokens):
        return self.out(self.rnn(self.embed(tokens))[0])


def tag_data(n=256, length=12, vocab=16, seed=0):
    """Padded sentences (token 0) with one tag per token; padding positions are tagged -100."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(1, vocab, (n, length), generator=g)
    pad = torch.arange(length) >= torch.randint(4, length + 1, (n, 1), generator=g)
    x[pad] = 0
    y = x % 4
    y[pad] = -100
    return x, y


class SchedulerStep:
    """The textbook step, then ``scheduler.step()``: a learning-rate scheduler built on the
    caller's optimizer and held by the step object, as training scripts hold it."""

    def __init__(self, scheduler):
        self.scheduler = scheduler

    def __call__(self, model, batch, optimizer, loss_fn):
        loss = standard_step(model, batch, optimizer, loss_fn)
        self.scheduler.step()
        return loss


def scheduler_in_closure(scheduler):
    """The textbook step as a plain function that steps ``scheduler``, read from its closure."""

    def step(model, batch, optimizer, loss_fn):
        loss = standard_step(model, batch, optimizer, loss_fn)
        scheduler.step()
        return loss

    return step


class Accumulate:
    """Gradient accumulation over calls: optimizer.step() every ``k`` calls, zero_grad() after
    it; ``zero_grad_first`` zeroes before every backward instead (the bug: only the last call's
    gradient is applied)."""

    def __init__(self, k=4, zero_grad_first=False):
        self.k, self.zero_grad_first, self.calls = k, zero_grad_first, 0

    def __call__(self, model, batch, optimizer, loss_fn):
        if self.zero_grad_first:
            optimizer.zero_grad()
        x, y = batch
        loss = loss_fn(model(x), y)
        (loss / self.k).backward()
        self.calls += 1
        if self.calls % self.k == 0:
            optimizer.step()
            if not self.zero_grad_first:
                optimizer.zero_grad()
        return loss


class AuxiliaryHead(nn.Module):
    """A classifier whose second head only an auxiliary loss in the train step trains
    (Inception's auxiliary logits, deep supervision); forward returns the main head."""

    def __init__(self, hidden=32, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.body = nn.Sequential(nn.Linear(64, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, 10)
        self.aux = nn.Linear(hidden, 10)

    def forward(self, x):
        return self.head(self.body(x))


def auxiliary_loss_step(model, batch, optimizer, loss_fn):
    """The step that trains both heads of :class:`AuxiliaryHead`."""
    x, y = batch
    h = model.body(x)
    loss = loss_fn(model.head(h), y) + 0.3 * loss_fn(model.aux(h), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss


def lbfgs_step(model, batch, optimizer, loss_fn):
    """LBFGS re-evaluates the loss through a closure, several times per call."""
    x, y = batch

    def closure():
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        return loss

    return optimizer.step(closure)


def no_zero_grad_step(model, batch, optimizer, loss_fn):
    """Planted bug: gradients are never zeroed, so they pile up across calls."""
    x, y = batch
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss


class DistillStep:
    """Knowledge distillation: CE on the labels plus T^2 * KL to a frozen teacher's softened
    outputs (Hinton et al.); the teacher is held by the step."""

    def __init__(self, teacher: nn.Module, temperature: float = 2.0, alpha: float = 0.5):
        self.teacher, self.t, self.alpha = teacher, temperature, alpha

    def __call__(self, model, batch, optimizer, loss_fn):
        x, y = batch
        with torch.no_grad():
            soft = torch.log_softmax(self.teacher(x) / self.t, dim=1)
        optimizer.zero_grad()
        out = model(x)
        kd = nn.functional.kl_div(
            torch.log_softmax(out / self.t, dim=1), soft, log_target=True, reduction="batchmean"
        )
        loss = self.alpha * loss_fn(out, y) + (1 - self.alpha) * self.t**2 * kd
        loss.backward()
        optimizer.step()
        return loss


class NoisyExperts(nn.Module):
    """A mixture-of-experts classifier: a router sends each example to one of ``experts`` MLPs,
    with Gaussian noise on its logits while training (noisy top-1 gating, as in Shazeer et al.
    2017), so that every expert gets examples; an expert that no example of a batch was sent
    to gets no gradient from it. ``unreachable`` experts are built but never routed to (an
    unused branch)."""

    def __init__(self, experts=32, width=32, unreachable=0, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.inp = nn.Linear(64, width)
        self.router = nn.Linear(width, experts)
        self.experts = nn.ModuleList(
            nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width))
            for _ in range(experts + unreachable)
        )
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        h = torch.relu(self.inp(x))
        logits = self.router(h)
        if self.training:
            logits = logits + torch.randn_like(logits)
        gates = torch.softmax(logits, dim=-1)
        chosen = gates.argmax(dim=-1)
        mixed = torch.zeros_like(h)
        for e, expert in enumerate(self.experts[: gates.shape[1]]):
            routed = chosen == e
            if routed.any():
                mixed[routed] = expert(h[routed]) * gates[routed, e : e + 1]
        return self.head(h + mixed)


class WithTarget(nn.Module):
    """An online MLP and a target copy of it with requires_grad off, which :class:`TargetStep`
    moves toward the online one (a momentum encoder as in MoCo and BYOL, a mean teacher)."""

    def __init__(self, seed=0):
        super().__init__()
        self.online = mlp(seed=seed)
        self.target = mlp(seed=seed).requires_grad_(False)

    def forward(self, x):
        return self.online(x)


def target_step(model, batch, optimizer, loss_fn, set_to_none=True):
    """Move the target 1% of the way to the online network under no_grad, then train the online
    one on the labels and on the target's predictions."""
    x, y = batch
    with torch.no_grad():
        for target, online in zip(model.target.parameters(), model.online.parameters()):
            target.lerp_(online, 0.01)
        teacher = model.target(x).softmax(dim=1)
    optimizer.zero_grad(set_to_none=set_to_none)
    out = model(x)
    loss = loss_fn(out, y) + nn.functional.cross_entropy(out, teacher)
    loss.backward()
    optimizer.step()
    return loss


def contrastive_step(model, batch, optimizer, loss_fn, temperature=0.2):
    """SimCLR-style self-supervised step: two noisy views of each input, InfoNCE over the
    batch; the targets it is given are not used."""
    x, _ = batch
    views = [nn.functional.normalize(model(x + 0.1 * torch.randn_like(x)), dim=1) for _ in "ab"]
    logits = views[0] @ views[1].T / temperature
    loss = nn.functional.cross_entropy(logits, torch.arange(len(x), device=x.device))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss
