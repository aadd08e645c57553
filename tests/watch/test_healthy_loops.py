"""Healthy training loops of the kinds people run, watched at ``every=1`` and at the default
``every``: none may raise an alert.

Each loop is small (digits or generated data, a tiny model, one thread) and trains the way its
kind is usually written: fused/foreach Adam, LBFGS with a closure, a hand-written optimizer
through ``.data``, GradScaler with skipped steps, accumulation, parameter groups, unfreezing,
EMA, weight tying, sparse embeddings, two optimizers, periodic validation, frozen BatchNorm,
plateau/cyclic/one-cycle/warm-restart schedules, long converged runs, noisy small-batch SGD,
DataLoader epochs, full batches, alternating heads, regression (a loss that goes negative
too), pure bf16 weights, SAM, two optimizers on one model and a checkpointed LSTM.
"""

from __future__ import annotations

from typing import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import labcoat
from labcoat.watch.watcher import DEFAULT_EVERY
from tests.watch._training import CNN, MLP, digits, train, warmup_decay

pytestmark = pytest.mark.slow  # 36 training loops, twice each: make test-all

Loop = Callable[[int], list]
LOOPS: dict[str, Loop] = {}


def loop(fn: Loop) -> Loop:
    LOOPS[fn.__name__] = fn
    return fn


def batches(batch: int = 32, seed: int = 0):
    """Endless random digit batches."""
    x_all, y_all = digits()
    gen = torch.Generator().manual_seed(seed)
    while True:
        idx = torch.randint(0, len(x_all), (batch,), generator=gen)
        yield x_all[idx], y_all[idx]


def plain(model, optimizer, every, steps, *, batch=32, scheduler=None, **options):
    """The usual loop (forward, zero_grad, backward, step, schedule, observe with the batch)."""
    w = train(
        model,
        optimizer,
        steps=steps,
        batch=batch,
        scheduler=scheduler,
        observe_batch=True,
        every=every,
        **options,
    )
    return [w]


def mlp(seed=0, hidden=64):
    torch.manual_seed(seed)
    return MLP(hidden)


@loop
def adam_fused(every):
    model = mlp()
    return plain(model, torch.optim.Adam(model.parameters(), lr=2e-3, fused=True), every, 400)


@loop
def adamw_foreach(every):
    model = mlp()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.05, foreach=True)
    return plain(model, opt, every, 400)


@loop
def lbfgs_closure(every):
    model = mlp(hidden=32)
    # LBFGS as it is used: large batches and a line search
    opt = torch.optim.LBFGS(
        model.parameters(), lr=1.0, max_iter=4, history_size=10, line_search_fn="strong_wolfe"
    )
    data = batches(512)
    with labcoat.watch(model, opt, every=every) as w:
        for step in range(150):
            x, y = next(data)

            def closure():
                opt.zero_grad()
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                return loss

            loss = opt.step(closure)
            w.observe(step=step, loss=loss, batch=(x, y))
    return [w]


@loop
def sgd_nesterov(every):
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    return plain(model, opt, every, 400, scheduler=warmup_decay(opt, 20, 400, cosine=True))


class HandSGD(torch.optim.Optimizer):
    """An optimizer written by hand, writing through ``p.data`` as older code does."""

    def __init__(self, params, lr=0.05, momentum=0.9):
        super().__init__(params, {"lr": lr, "momentum": momentum})

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                buf = self.state[p].setdefault("buf", torch.zeros_like(p.data))
                buf.data = group["momentum"] * buf.data + p.grad.data
                p.data = p.data - group["lr"] * buf.data
        return None


@loop
def hand_optimizer_through_data(every):
    model = mlp()
    return plain(model, HandSGD(model.parameters()), every, 400)


@loop
def grad_scaler_fp16_autocast(every):
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    # a high starting scale and fast growth: the scaler overflows and skips steps now and then
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**20, growth_interval=25)
    data = batches(32)
    with labcoat.watch(model, opt, every=every) as w:
        for step in range(400):
            x, y = next(data)
            with torch.autocast("cpu", dtype=torch.float16):
                loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            w.observe(step=step, loss=loss, batch=(x, y))
    assert w.sampler is not None and w.sampler.applied < 400, "no step was skipped"
    return [w]


@loop
def bf16_autocast(every):
    model = mlp()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    data = batches(32)
    with labcoat.watch(model, opt, every=every) as w:
        for step in range(300):
            x, y = next(data)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            w.observe(step=step, loss=loss, batch=(x, y))
    return [w]


@loop
def accumulation_and_clipping(every):
    model = mlp()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    data = batches(8)
    k = 4
    with labcoat.watch(model, opt, every=every) as w:
        for step in range(500):
            x, y = next(data)
            loss = F.cross_entropy(model(x), y)
            (loss / k).backward()
            if (step + 1) % k == 0:
                nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                opt.zero_grad(set_to_none=True)
            w.observe(step=step, loss=loss, batch=(x, y))
    return [w]


@loop
def param_groups_one_at_zero_during_warmup(every):
    """The body waits at lr 0 while the head warms up (a common fine-tuning recipe)."""
    model = mlp()
    opt = torch.optim.AdamW(
        [
            {"params": [*model.fc1.parameters(), *model.fc2.parameters()], "lr": 1e-3},
            {"params": model.head.parameters(), "lr": 3e-3},
        ]
    )
    hold = 100

    def body(step):
        return 0.0 if step < hold else min(1.0, (step - hold) / 50)

    sched = torch.optim.lr_scheduler.LambdaLR(opt, [body, lambda step: 1.0])
    return plain(model, opt, every, 400, scheduler=sched)


@loop
def unfreeze_backbone_later(every):
    """A frozen body (requires_grad=False, not in the optimizer) unfrozen on purpose."""
    model = mlp()
    body = [*model.fc1.parameters(), *model.fc2.parameters()]
    for p in body:
        p.requires_grad_(False)
    opt = torch.optim.Adam(model.head.parameters(), lr=3e-3)
    data = batches(32)
    with labcoat.watch(model, opt, every=every) as w:
        for step in range(400):
            if step == 150:
                for p in body:
                    p.requires_grad_(True)
                opt.add_param_group({"params": body, "lr": 1e-3})
            x, y = next(data)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            w.observe(step=step, loss=loss, batch=(x, y))
    return [w]


@loop
def ema_averaged_model(every):
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    ema = torch.optim.swa_utils.AveragedModel(
        model, multi_avg_fn=torch.optim.swa_utils.get_ema_multi_avg_fn(0.99)
    )
    data = batches(32)
    with labcoat.watch(model, opt, every=every) as w:
        for step in range(400):
            x, y = next(data)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            ema.update_parameters(model)
            w.observe(step=step, loss=loss, batch=(x, y))
    return [w]


class TiedLM(nn.Module):
    """A tiny language model whose output layer shares the embedding's weight."""

    def __init__(self, vocab=32, d=32, sparse=False):
        super().__init__()
        self.embed = nn.Embedding(vocab, d, sparse=sparse)
        self.mix = nn.Linear(2 * d, d)
        self.out = nn.Linear(d, vocab, bias=False)
        if not sparse:
            self.out.weight = self.embed.weight

    def forward(self, tokens):
        h = self.embed(tokens).flatten(1)
        return self.out(torch.tanh(self.mix(h)))


def token_batches(vocab=32, batch=32, seed=0):
    """Next-token data from a fixed random bigram table (two tokens of context)."""
    gen = torch.Generator().manual_seed(seed)
    table = torch.randint(0, vocab, (vocab, vocab), generator=gen)
    while True:
        ctx = torch.randint(0, vocab, (batch, 2), generator=gen)
        noise = torch.rand(batch, generator=gen) < 0.1
        target = torch.where(
            noise, torch.randint(0, vocab, (batch,), generator=gen), table[ctx[:, 0], ctx[:, 1]]
        )
        yield ctx, target


@loop
def weight_tying(every):
    torch.manual_seed(0)
    model = TiedLM()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    data = token_batches()
    with labcoat.watch(model, opt, every=every) as w:
        for step in range(500):
            x, y = next(data)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            w.observe(step=step, loss=loss, batch=(x, y))
    return [w]


@loop
def sparse_embedding_sparse_adam(every):
    torch.manual_seed(0)
    model = TiedLM(vocab=64, sparse=True)
    sparse = torch.optim.SparseAdam(model.embed.parameters(), lr=1e-2)
    dense = torch.optim.Adam([*model.mix.parameters(), *model.out.parameters()], lr=3e-3)
    data = token_batches(vocab=64, batch=16)
    with (
        labcoat.watch(model.embed, sparse, every=every) as ws,
        labcoat.watch(model, dense, every=every) as wd,
    ):
        for step in range(500):
            x, y = next(data)
            loss = F.cross_entropy(model(x), y)
            sparse.zero_grad()
            dense.zero_grad()
            loss.backward()
            sparse.step()
            dense.step()
            ws.observe(step=step, loss=loss)
            wd.observe(step=step, loss=loss, batch=(x, y))
    return [ws, wd]


@loop
def gan_two_optimizers(every):
    """A small GAN matching a 2-D Gaussian mixture: two optimizers, one watch each. Adversarial
    losses do not trend down by design, so ``no_trend`` is left out (as docs/watch.md says)."""
    torch.manual_seed(0)
    gen_net = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))
    disc = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
    opt_g = torch.optim.Adam(gen_net.parameters(), lr=1e-3, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(disc.parameters(), lr=1e-3, betas=(0.5, 0.999))
    centers = torch.tensor([[2.0, 0.0], [-2.0, 0.0], [0.0, 2.0], [0.0, -2.0]])
    g = torch.Generator().manual_seed(0)
    bce = nn.BCEWithLogitsLoss()
    kinds = [k for k in labcoat.watch.INVARIANTS.ids() if k != "no_trend"]
    with (
        labcoat.watch(gen_net, opt_g, every=every, invariants=kinds) as wg,
        labcoat.watch(disc, opt_d, every=every, invariants=kinds) as wd,
    ):
        for step in range(400):
            real = centers[torch.randint(0, 4, (64,), generator=g)] + 0.1 * torch.randn(
                64, 2, generator=g
            )
            fake = gen_net(torch.randn(64, 4, generator=g))
            d_loss = bce(disc(real), torch.ones(64, 1)) + bce(
                disc(fake.detach()), torch.zeros(64, 1)
            )
            opt_d.zero_grad()
            d_loss.backward()
            opt_d.step()
            wd.observe(step=step, loss=d_loss)
            disc.requires_grad_(False)
            g_loss = bce(disc(fake), torch.ones(64, 1))
            opt_g.zero_grad()
            g_loss.backward()
            opt_g.step()
            disc.requires_grad_(True)
            wg.observe(step=step, loss=g_loss)
    return [wg, wd]


@loop
def periodic_validation_eval_train(every):
    torch.manual_seed(0)
    model = CNN()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    x_all, y_all = digits()
    data = batches(32)
    with labcoat.watch(model, opt, every=every) as w:
        for step in range(300):
            x, y = next(data)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            w.observe(step=step, loss=loss, batch=(x, y))
            if step % 50 == 49:
                model.eval()
                with torch.no_grad():
                    F.cross_entropy(model(x_all[:300]), y_all[:300])
                model.train()
    return [w]


@loop
def batchnorm_frozen_by_eval_finetune(every):
    """Fine-tuning with BatchNorm statistics frozen by model.eval() from the start."""
    torch.manual_seed(0)
    model = CNN()
    pre = torch.optim.Adam(model.parameters(), lr=3e-3)
    data = batches(64, seed=1)
    for _ in range(60):  # "pretraining", unwatched
        x, y = next(data)
        pre.zero_grad()
        F.cross_entropy(model(x), y).backward()
        pre.step()
    model.eval()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    bn = ["features.1.running_mean", "features.1.running_var"]  # its affine weights train
    return plain(model, opt, every, 300, batch=16, expect_frozen=bn)


@loop
def reduce_lr_on_plateau(every):
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.3, patience=2)
    data = batches(32)
    x_all, y_all = digits()
    with labcoat.watch(model, opt, every=every) as w:
        for step in range(600):
            x, y = next(data)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            w.observe(step=step, loss=loss, batch=(x, y))
            if step % 25 == 24:
                with torch.no_grad():
                    sched.step(F.cross_entropy(model(x_all), y_all).item())
    return [w]


@loop
def one_cycle(every):
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.2, total_steps=400)
    return plain(model, opt, every, 400, scheduler=sched)


@loop
def cyclic_lr(every):
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    sched = torch.optim.lr_scheduler.CyclicLR(opt, 1e-3, 0.1, step_size_up=50)
    return plain(model, opt, every, 500, scheduler=sched)


@loop
def long_converged(every):
    """4000 steps of Adam on digits with a linear model: the loss is flat after a few hundred."""
    torch.manual_seed(0)
    model = nn.Linear(64, 10)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    return plain(model, opt, every, 4000, batch=16)


@loop
def long_converged_cosine_to_zero(every):
    """A cosine schedule that ends at lr 0 on the last step, 4000 steps."""
    model = mlp(hidden=16)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4000)
    return plain(model, opt, every, 4000, batch=16, scheduler=sched)


@loop
def dataloader_epochs(every):
    """Epochs over a small DataLoader, shuffled and not, with a short last batch."""
    from torch.utils.data import DataLoader, TensorDataset

    x_all, y_all = digits()
    watchers = []
    for shuffle in (True, False):
        model = mlp()
        opt = torch.optim.Adam(model.parameters(), lr=2e-3)
        loader = DataLoader(TensorDataset(x_all[:300], y_all[:300]), batch_size=32, shuffle=shuffle)
        torch.manual_seed(1)
        with labcoat.watch(model, opt, every=every) as w:
            step = 0
            for _ in range(25):
                for x, y in loader:
                    loss = F.cross_entropy(model(x), y)
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    opt.step()
                    w.observe(step=step, loss=loss, batch=(x, y))
                    step += 1
        watchers.append(w)
    return watchers


@loop
def full_batch_gradient_descent(every):
    x_all, y_all = digits()
    model = mlp(hidden=32)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, y = x_all[:512], y_all[:512]
    with labcoat.watch(model, opt, every=every) as w:
        for step in range(300):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            w.observe(step=step, loss=loss, batch=(x, y))
    return [w]


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(64, 64), nn.ReLU())
        self.digit = nn.Linear(64, 10)
        self.parity = nn.Linear(64, 2)

    def forward(self, x, task):
        h = self.body(x)
        return self.digit(h) if task == "digit" else self.parity(h)


@loop
def multitask_alternating_heads(every):
    """Tasks alternate step by step, so each head has a gradient only every other step."""
    torch.manual_seed(0)
    model = TwoHeads()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    data = batches(32)
    with labcoat.watch(model, opt, every=every) as w:
        for step in range(400):
            x, y = next(data)
            task = "digit" if step % 2 == 0 else "parity"
            target = y if task == "digit" else y % 2
            loss = F.cross_entropy(model(x, task), target)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            w.observe(step=step, loss=loss, batch=(x, y))
    return [w]


@loop
def adagrad_and_rmsprop(every):
    watchers = []
    for make in (
        lambda ps: torch.optim.Adagrad(ps, lr=0.05),
        lambda ps: torch.optim.RMSprop(ps, lr=1e-3),
    ):
        model = mlp()
        watchers += plain(model, make(model.parameters()), every, 300)
    return watchers


class BagOfTokens(nn.Module):
    """Token ids padded with 0 (padding_idx): the padding row never gets a gradient."""

    def __init__(self, vocab=50, d=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, d, padding_idx=0)
        self.head = nn.Linear(d, 2)

    def forward(self, tokens):
        mask = (tokens != 0).float().unsqueeze(-1)
        h = (self.embed(tokens) * mask).sum(1) / mask.sum(1).clamp(min=1)
        return self.head(h)


@loop
def padded_embedding_classifier(every):
    torch.manual_seed(0)
    model = BagOfTokens()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    gen = torch.Generator().manual_seed(0)
    with labcoat.watch(model, opt, every=every) as w:
        for step in range(400):
            tokens = torch.randint(1, 50, (32, 12), generator=gen)
            lengths = torch.randint(3, 13, (32, 1), generator=gen)
            tokens = tokens.masked_fill(torch.arange(12) >= lengths, 0)
            y = ((tokens > 25) & (tokens != 0)).sum(1).gt(lengths.squeeze(1) / 2).long()
            loss = F.cross_entropy(model(tokens), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            w.observe(step=step, loss=loss, batch=(tokens, y))
    return [w]


@loop
def noisy_small_batch_sgd(every):
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.02)
    return plain(model, opt, every, 1200, batch=4)


@loop
def cosine_warm_restarts(every):
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=100)
    return plain(model, opt, every, 500, scheduler=sched)


@loop
def step_lr_label_smoothing_dropout(every):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Dropout(0.5), nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=100, gamma=0.1)
    data = batches(32)
    with labcoat.watch(model, opt, every=every) as w:
        for step in range(400):
            x, y = next(data)
            loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            w.observe(step=step, loss=loss, batch=(x, y))
    return [w]


def regression(model, opt, every, steps, loss_fn, noise=0.0, batch=32):
    gen = torch.Generator().manual_seed(0)
    with labcoat.watch(model, opt, every=every) as w:
        for step in range(steps):
            x = torch.rand(batch, 1, generator=gen) * 6 - 3
            y = torch.sin(x) + noise * torch.randn(batch, 1, generator=gen)
            loss = loss_fn(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            w.observe(step=step, loss=loss, batch=(x, y))
    return [w]


@loop
def noiseless_regression_mse(every):
    """Fitting a smooth function exactly: the MSE falls by orders of magnitude."""
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1)
    )
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    return regression(model, opt, every, 1500, F.mse_loss)


class GaussianHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(1, 32), nn.Tanh())
        self.mean = nn.Linear(32, 1)
        self.log_var = nn.Linear(32, 1)

    def forward(self, x):
        h = self.body(x)
        return self.mean(h), self.log_var(h)


@loop
def gaussian_nll_negative_loss(every):
    """A learned-variance likelihood: the loss crosses zero and keeps falling below it."""
    torch.manual_seed(0)
    model = GaussianHead()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)

    def nll(out, y):
        mean, log_var = out
        return F.gaussian_nll_loss(mean, y, log_var.exp())

    return regression(model, opt, every, 800, nll, noise=0.05)


@loop
def pure_bf16_weights(every):
    torch.manual_seed(0)
    model = MLP().to(torch.bfloat16)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    data = batches(32)
    with labcoat.watch(model, opt, every=every) as w:
        for step in range(300):
            x, y = next(data)
            loss = F.cross_entropy(model(x.to(torch.bfloat16)).float(), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            w.observe(step=step, loss=loss, batch=(x, y))
    return [w]


class SAM(torch.optim.Optimizer):
    """Sharpness-aware minimisation as it is commonly written: step(closure) climbs to the
    worst nearby point, recomputes the gradient there, climbs back and lets a base optimizer
    step."""

    def __init__(self, params, base, rho=0.05, **kwargs):
        super().__init__(params, {"rho": rho, **kwargs})
        self.base = base(self.param_groups, **kwargs)
        self.param_groups = self.base.param_groups

    @torch.no_grad()
    def step(self, closure=None):
        grads = [p.grad for g in self.param_groups for p in g["params"] if p.grad is not None]
        scale = self.param_groups[0]["rho"] / (
            torch.norm(torch.stack([g.norm() for g in grads])) + 1e-12
        )
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    self.state[p]["e_w"] = e_w = p.grad * scale
                    p.add_(e_w)
        with torch.enable_grad():
            self.zero_grad()
            closure()
        for group in self.param_groups:
            for p in group["params"]:
                if "e_w" in self.state[p]:
                    p.sub_(self.state[p]["e_w"])
        self.base.step()


@loop
def sharpness_aware_minimisation(every):
    model = mlp()
    opt = SAM(model.parameters(), torch.optim.SGD, lr=0.05, momentum=0.9)
    data = batches(32)
    with labcoat.watch(model, opt, every=every) as w:
        for step in range(300):
            x, y = next(data)

            def closure():
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                return loss

            loss = closure()
            opt.step(closure)
            opt.zero_grad()
            w.observe(step=step, loss=loss, batch=(x, y))
    return [w]


@loop
def two_optimizers_one_model(every):
    """Body and head stepped by different optimizers, each watched over the whole model."""
    model = mlp()
    body = torch.optim.SGD([*model.fc1.parameters(), *model.fc2.parameters()], lr=0.05)
    head = torch.optim.Adam(model.head.parameters(), lr=3e-3)
    data = batches(32)
    with (
        labcoat.watch(model, body, every=every) as wb,
        labcoat.watch(model, head, every=every) as wh,
    ):
        for step in range(300):
            x, y = next(data)
            loss = F.cross_entropy(model(x), y)
            body.zero_grad()
            head.zero_grad()
            loss.backward()
            head.step()
            if step % 2 == 0:  # the body steps half as often
                body.step()
            wb.observe(step=step, loss=loss, batch=(x, y))
            wh.observe(step=step, loss=loss, batch=(x, y))
    return [wb, wh]


@loop
def grad_scaler_with_accumulation(every):
    """fp16 autocast, a GradScaler that skips now and then, and a step every 3 calls."""
    model = mlp()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**20, growth_interval=10)
    data = batches(16)
    with labcoat.watch(model, opt, every=every) as w:
        for step in range(450):
            x, y = next(data)
            with torch.autocast("cpu", dtype=torch.float16):
                loss = F.cross_entropy(model(x), y)
            scaler.scale(loss / 3).backward()
            if (step + 1) % 3 == 0:
                scaler.step(opt)
                scaler.update()
                opt.zero_grad(set_to_none=True)
            w.observe(step=step, loss=loss, batch=(x, y))
    assert w.sampler is not None and w.sampler.applied < 150, "no step was skipped"
    return [w]


class LSTMLanguageModel(nn.Module):
    def __init__(self, vocab=20, d=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.rnn = nn.LSTM(d, d, batch_first=True)
        self.out = nn.Linear(d, vocab)

    def forward(self, tokens):
        h = self.embed(tokens)  # the LSTM is recomputed in the backward pass
        h = torch.utils.checkpoint.checkpoint(lambda t: self.rnn(t)[0], h, use_reentrant=False)
        return self.out(h)


@loop
def lstm_clipped_with_checkpointing(every):
    """A noisy counting language: each sequence steps by its own k; 5 % of tokens are noise."""
    torch.manual_seed(0)
    model = LSTMLanguageModel()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(0)
    with labcoat.watch(model, opt, every=every) as w:
        for step in range(400):
            k = torch.randint(1, 4, (16, 1), generator=gen)
            seq = (torch.randint(0, 20, (16, 1), generator=gen) + k * torch.arange(25)) % 20
            noise = torch.rand(16, 25, generator=gen) < 0.05
            seq = torch.where(noise, torch.randint(0, 20, (16, 25), generator=gen), seq)
            x, y = seq[:, :-1], seq[:, 1:]
            loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
            opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            w.observe(step=step, loss=loss, batch=(x, y))
    return [w]


#: the 4000-step runs take most of this file's time
SLOW = {"long_converged", "long_converged_cosine_to_zero"}


@pytest.mark.parametrize("every", [1, DEFAULT_EVERY])
@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in sorted(LOOPS)]
)
def test_healthy_loop_raises_no_alert(name, every):
    for w in LOOPS[name](every):
        assert w.alerts == [], [(a.check, a.step, a.message) for a in w.alerts]
