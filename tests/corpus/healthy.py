"""Healthy setups of the kinds people train; each must pass every layer.

Each case is small (a few hundred examples, a few thousand parameters) so that the whole set
runs in about a minute and a half on one core, but each is built the way the setup it stands
for is built: the same layers, losses, optimizers, step functions and data forms.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset, TensorDataset

from tests.corpus.registry import Verdict, doctor_verdict, healthy  # noqa: F401
from tests.doctor.helpers import (
    Accumulate,
    AuxiliaryHead,
    DistillStep,
    NoisyExperts,
    SchedulerStep,
    WithTarget,
    auxiliary_loss_step,
    contrastive_step,
    diabetes,
    lbfgs_step,
    scheduler_in_closure,
    standard_step,
    target_step,
)


# -- data ---------------------------------------------------------------------------------------
@functools.cache
def _digits(n: int = 500):
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    return torch.tensor(x[:n] / 16.0, dtype=torch.float32), torch.tensor(y[:n])


def digits(n: int = 500):
    x, y = _digits(n)
    return x.clone(), y.clone()


def digit_images(n: int = 500):
    x, y = digits(n)
    return x.reshape(-1, 1, 8, 8), y


@functools.cache
def _breast_cancer():
    from sklearn.datasets import load_breast_cancer

    x, y = load_breast_cancer(return_X_y=True)
    x = (x - x.mean(0)) / x.std(0)
    return torch.tensor(x, dtype=torch.float32), torch.tensor(y)


def breast_cancer():
    x, y = _breast_cancer()
    return x.clone(), y.clone()


def counting_tokens(n: int = 160, length: int = 8, vocab: int = 16, seed: int = 0):
    """Token sequences whose next token is the previous plus a per-row stride (mod V)."""
    g = torch.Generator().manual_seed(seed)
    start = torch.randint(0, vocab, (n, 1), generator=g)
    stride = torch.randint(1, 3, (n, 1), generator=g)
    seq = (start + stride * torch.arange(length + 1)) % vocab
    return seq[:, :-1].contiguous(), seq[:, 1:].contiguous()


def sentences(n: int = 320, length: int = 8, vocab: int = 20, seed: int = 0):
    """Token sequences labelled by which half of the vocabulary most of their tokens come from."""
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 2, (n,), generator=g)
    low = torch.randint(1, vocab // 2, (n, length), generator=g)
    high = torch.randint(vocab // 2, vocab, (n, length), generator=g)
    pick = torch.rand(n, length, generator=g) < 0.8
    x = torch.where(pick == y.bool().unsqueeze(1), high, low)
    return x, y


def seed(s: int = 0) -> None:
    torch.manual_seed(s)


def adam(model: nn.Module, lr: float = 1e-3, **kw) -> torch.optim.Optimizer:
    return torch.optim.Adam(model.parameters(), lr=lr, **kw)


class Squeeze(nn.Module):
    def forward(self, x):
        return x.squeeze(-1)


# -- multi-layer perceptrons ---------------------------------------------------------------------
@healthy(
    "mlp_linear_batchnorm", source="Linear -> BatchNorm1d -> ReLU MLP on a table (digits), Adam"
)
def mlp_linear_batchnorm():
    seed()
    model = nn.Sequential(nn.Linear(64, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 10))
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(), adam(model))


@healthy(
    "mlp_batchnorm_sgd_momentum",
    source="BatchNorm MLP with SGD + momentum, lr 0.05 (the classic recipe)",
)
def mlp_batchnorm_sgd_momentum():
    seed(1)
    model = nn.Sequential(
        nn.Linear(64, 48),
        nn.BatchNorm1d(48),
        nn.ReLU(),
        nn.Linear(48, 48),
        nn.BatchNorm1d(48),
        nn.ReLU(),
        nn.Linear(48, 10),
    )
    return doctor_verdict(
        model,
        digits(),
        nn.CrossEntropyLoss(),
        torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
    )


@healthy("mlp_layernorm_gelu", source="pre-norm MLP with LayerNorm and GELU, AdamW")
def mlp_layernorm_gelu():
    seed()
    model = nn.Sequential(nn.Linear(64, 64), nn.LayerNorm(64), nn.GELU(), nn.Linear(64, 10))
    return doctor_verdict(
        model,
        digits(),
        nn.CrossEntropyLoss(),
        torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01),
    )


@healthy(
    "mlp_dropout", source="MLP with dropout between layers (train-mode noise, deterministic eval)"
)
def mlp_dropout():
    seed()
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Dropout(0.3), nn.Linear(128, 10))
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(), adam(model))


@healthy("mlp_sgd_weight_decay", source="SGD with weight decay 5e-4 and Nesterov momentum")
def mlp_sgd_weight_decay():
    seed()
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    opt = torch.optim.SGD(
        model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-4
    )
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(), opt)


@healthy(
    "adamw_param_groups_no_decay",
    source="AdamW with no weight decay on biases and norms (two param groups)",
)
def adamw_param_groups_no_decay():
    seed()
    model = nn.Sequential(nn.Linear(64, 64), nn.LayerNorm(64), nn.ReLU(), nn.Linear(64, 10))
    decay = [p for n, p in model.named_parameters() if p.ndim > 1]
    no_decay = [p for n, p in model.named_parameters() if p.ndim <= 1]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}],
        lr=2e-3,
    )
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(), opt)


class ResidualMLP(nn.Module):
    def __init__(self, d_in=64, width=48, blocks=2, classes=10):
        super().__init__()
        self.inp = nn.Linear(d_in, width)
        self.blocks = nn.ModuleList(
            nn.Sequential(
                nn.LayerNorm(width), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width)
            )
            for _ in range(blocks)
        )
        self.out = nn.Linear(width, classes)

    def forward(self, x):
        h = self.inp(x)
        for block in self.blocks:
            h = h + block(h)
        return self.out(h)


@healthy("residual_mlp", source="pre-norm residual blocks (h + f(h))")
def residual_mlp():
    seed()
    model = ResidualMLP()
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(), adam(model))


@healthy(
    "residual_zero_init_last",
    source="residual blocks whose last layer starts at zero (zero-init residual, as in "
    "ResNet/GPT-2 recipes)",
)
def residual_zero_init_last():
    seed()
    model = ResidualMLP()
    for block in model.blocks:
        nn.init.zeros_(block[-1].weight)
        nn.init.zeros_(block[-1].bias)
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(), adam(model))


@healthy("logistic_regression", source="a single Linear layer (multinomial logistic regression)")
def logistic_regression():
    seed()
    model = nn.Linear(64, 10)
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(), adam(model, 1e-2))


@healthy("float64_model", source="a float64 model on float64 inputs (scientific code)")
def float64_model():
    seed()
    model = nn.Sequential(nn.Linear(64, 32), nn.Tanh(), nn.Linear(32, 10)).double()
    x, y = digits()
    return doctor_verdict(model, (x.double(), y), nn.CrossEntropyLoss(), adam(model))


@healthy("numpy_arrays", source="(X, y) as NumPy arrays straight from scikit-learn")
def numpy_arrays():
    seed()
    x, y = digits()
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    return doctor_verdict(model, (x.numpy(), y.numpy()), nn.CrossEntropyLoss(), adam(model))


@healthy("rmsprop", source="RMSprop (alpha 0.99), lr 1e-3")
def rmsprop():
    seed()
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    return doctor_verdict(
        model, digits(), nn.CrossEntropyLoss(), torch.optim.RMSprop(model.parameters(), lr=1e-3)
    )


# -- tables: binary, imbalanced, regression ------------------------------------------------------
@healthy(
    "breast_cancer_bce_logits",
    source="binary classification, one logit, BCEWithLogitsLoss on float 0/1 labels",
)
def breast_cancer_bce_logits():
    seed()
    x, y = breast_cancer()
    model = nn.Sequential(nn.Linear(30, 16), nn.ReLU(), nn.Linear(16, 1), Squeeze())
    return doctor_verdict(model, (x, y.float()), nn.BCEWithLogitsLoss(), adam(model))


@healthy(
    "breast_cancer_two_class_ce",
    source="binary classification as two classes with CrossEntropyLoss",
)
def breast_cancer_two_class_ce():
    seed()
    x, y = breast_cancer()
    model = nn.Sequential(nn.Linear(30, 16), nn.ReLU(), nn.Linear(16, 2))
    return doctor_verdict(model, (x, y), nn.CrossEntropyLoss(), adam(model))


@healthy(
    "breast_cancer_sigmoid_bce",
    source="sigmoid output with nn.BCELoss (probabilities, as documented)",
)
def breast_cancer_sigmoid_bce():
    seed()
    x, y = breast_cancer()
    model = nn.Sequential(nn.Linear(30, 16), nn.ReLU(), nn.Linear(16, 1), nn.Sigmoid())
    return doctor_verdict(model, (x, y.float().unsqueeze(1)), nn.BCELoss(), adam(model))


@healthy(
    "rare_class_bce_pos_weight",
    source="binary BCEWithLogitsLoss(pos_weight=15) with 5% positives (breast_cancer cut down)",
)
def rare_class_bce_pos_weight():
    x, y = breast_cancer()
    rows = torch.cat([torch.nonzero(y == 0).flatten()[:20], torch.nonzero(y == 1).flatten()])
    seed()
    model = nn.Sequential(nn.Linear(30, 16), nn.ReLU(), nn.Linear(16, 1), Squeeze())
    loss = nn.BCEWithLogitsLoss(pos_weight=torch.tensor(15.0))
    return doctor_verdict(model, (x[rows], (1 - y[rows]).float()), loss, adam(model))


@healthy(
    "class_imbalanced_weighted",
    source="imbalanced classes (1 positive in 10) with a class-weighted loss",
)
def class_imbalanced_weighted():
    seed()
    x, y = digits()
    y = (y == 3).long()
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 2))
    loss = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 9.0]))
    return doctor_verdict(model, (x, y), loss, adam(model))


@healthy("diabetes_regression", source="regression on a standardised target with MSE (diabetes)")
def diabetes_regression():
    seed()
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1), Squeeze())
    return doctor_verdict(model, diabetes(), nn.MSELoss(), adam(model, 3e-3))


@healthy(
    "diabetes_huber_column_target",
    source="regression with (N, 1) targets, a (N, 1) head and Huber loss",
)
def diabetes_huber_column_target():
    seed()
    x, y = diabetes()
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))
    return doctor_verdict(model, (x, y.unsqueeze(1)), nn.HuberLoss(), adam(model, 3e-3))


@healthy(
    "multi_output_regression_constant_first",
    source="multi-output regression whose first target column is constant in this data",
)
def multi_output_regression_constant_first():
    seed()
    x, y = diabetes()
    targets = torch.stack([torch.zeros_like(y), y, x[:, 2] * 0.5 + y * 0.5], dim=1)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))
    return doctor_verdict(model, (x, targets), nn.MSELoss(), adam(model, 3e-3))


@healthy(
    "autoencoder_digits",
    source="an autoencoder: targets are the inputs (digits; its first pixel is always 0)",
)
def autoencoder_digits():
    seed()
    x, _ = digits(400)
    model = nn.Sequential(
        nn.Linear(64, 32),
        nn.ReLU(),
        nn.Linear(32, 16),
        nn.ReLU(),
        nn.Linear(16, 32),
        nn.ReLU(),
        nn.Linear(32, 64),
    )
    return doctor_verdict(model, (x, x.clone()), nn.MSELoss(), adam(model, 3e-3))


@healthy("denoising_autoencoder", source="a denoising autoencoder: noisy inputs, clean targets")
def denoising_autoencoder():
    seed()
    clean, _ = digits(400)
    noisy = clean + 0.1 * torch.randn_like(clean)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 64), nn.Sigmoid())
    return doctor_verdict(model, (noisy, clean), nn.MSELoss(), adam(model, 3e-3))


# -- losses: multi-label, label smoothing, soft targets -----------------------------------------
@healthy(
    "multi_label_bce",
    source="multi-label classification: several 0/1 labels per example, BCEWithLogitsLoss",
)
def multi_label_bce():
    seed()
    x, y = digits()
    labels = torch.stack(
        [(y % 2 == 0), (y >= 5), torch.isin(y, torch.tensor([0, 6, 8, 9]))], dim=1
    ).float()
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 3))
    return doctor_verdict(model, (x, labels), nn.BCEWithLogitsLoss(), adam(model))


@healthy("label_smoothing", source="CrossEntropyLoss(label_smoothing=0.1)")
def label_smoothing():
    seed()
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(label_smoothing=0.1), adam(model))


@healthy(
    "soft_targets", source="soft (probability) targets under CrossEntropyLoss, as in distillation"
)
def soft_targets():
    seed()
    x, y = digits()
    soft = F.one_hot(y, 10).float() * 0.8 + 0.02
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    return doctor_verdict(model, (x, soft), nn.CrossEntropyLoss(), adam(model))


@healthy(
    "log_softmax_nll", source="LogSoftmax output with NLLLoss (the pre-CrossEntropyLoss idiom)"
)
def log_softmax_nll():
    seed()
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10), nn.LogSoftmax(dim=1))
    return doctor_verdict(model, digits(), nn.NLLLoss(), adam(model))


# -- convolutional networks ---------------------------------------------------------------------
@healthy("conv_bn_relu", source="Conv2d -> BatchNorm2d -> ReLU -> pool CNN on images")
def conv_bn_relu():
    seed()
    model = nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(4, 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(8, 10),
    )
    return doctor_verdict(model, digit_images(), nn.CrossEntropyLoss(), adam(model, 3e-3))


@healthy(
    "conv_groupnorm", source="a CNN with GroupNorm (small-batch detection/segmentation backbones)"
)
def conv_groupnorm():
    seed()
    model = nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1),
        nn.GroupNorm(2, 4),
        nn.ReLU(),
        nn.Conv2d(4, 4, 3, padding=1),
        nn.GroupNorm(2, 4),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(4 * 64, 10),
    )
    return doctor_verdict(model, digit_images(), nn.CrossEntropyLoss(), adam(model))


@healthy(
    "conv_bias_free_bn",
    source="Conv2d(bias=False) -> BatchNorm2d, the torchvision ResNet convention",
)
def conv_bias_free_bn():
    seed()
    model = nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1, bias=False),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.Conv2d(4, 4, 3, padding=1, bias=False),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(2),
        nn.Flatten(),
        nn.Linear(16, 10),
    )
    return doctor_verdict(model, digit_images(), nn.CrossEntropyLoss(), adam(model, 3e-3))


@healthy(
    "conv_dataloader_shuffle", source="a CNN fed by a shuffling DataLoader over a TensorDataset"
)
def conv_dataloader_shuffle():
    seed()
    x, y = digit_images()
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    model = nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 36, 10))
    return doctor_verdict(model, loader, nn.CrossEntropyLoss(), adam(model))


# -- training steps written by users ------------------------------------------------------------
def clipped_step(model, batch, optimizer, loss_fn):
    x, y = batch
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    optimizer.step()
    return loss


@healthy(
    "gradient_clipping",
    source="a user step that clips the gradient norm to 1 before optimizer.step()",
)
def gradient_clipping():
    seed()
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(), adam(model), step=clipped_step)


def bf16_step(model, batch, optimizer, loss_fn):
    x, y = batch
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(x)
    loss = loss_fn(out.float(), y)
    loss.backward()
    optimizer.step()
    return loss


@healthy(
    "bf16_autocast_cpu", source="a user step under torch.autocast('cpu', dtype=torch.bfloat16)"
)
def bf16_autocast_cpu():
    seed()
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(), adam(model, 2e-3), step=bf16_step)


def accumulating_step(model, batch, optimizer, loss_fn, micro: int = 2):
    """Gradient accumulation over micro-batches; zeroed once per optimizer step."""
    x, y = batch
    optimizer.zero_grad()
    total = 0.0
    for xs, ys in zip(x.chunk(micro), y.chunk(micro)):
        loss = loss_fn(model(xs), ys) / micro
        loss.backward()
        total += float(loss)
    optimizer.step()
    return torch.tensor(total)


@healthy(
    "gradient_accumulation", source="a user step accumulating two micro-batches per optimizer step"
)
def gradient_accumulation():
    seed()
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    return doctor_verdict(
        model, digits(), nn.CrossEntropyLoss(), adam(model), step=accumulating_step
    )


@healthy(
    "gradient_accumulation_across_calls",
    source="optimizer.step() once every 4 calls of the step (gradient_accumulation_steps=4)",
)
def gradient_accumulation_across_calls():
    seed()
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    return doctor_verdict(
        model, digits(), nn.CrossEntropyLoss(), adam(model, 3e-3), step=Accumulate(k=4)
    )


@healthy(
    "auxiliary_head_in_step",
    source="a second head trained only by the step's auxiliary loss (Inception aux logits)",
)
def auxiliary_head_in_step():
    seed()
    model = AuxiliaryHead(hidden=64)
    return doctor_verdict(
        model, digits(), nn.CrossEntropyLoss(), adam(model), step=auxiliary_loss_step
    )


@healthy(
    "onecycle_scheduler_in_step",
    source="OneCycleLR built on the optimizer, stepped after every optimizer.step() by the step",
)
def onecycle_scheduler_in_step():
    seed()
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=3e-3, total_steps=3000)
    return doctor_verdict(
        model, digits(), nn.CrossEntropyLoss(), optimizer, step=SchedulerStep(scheduler)
    )


@healthy(
    "cosine_scheduler_in_closure",
    source="a step function that calls scheduler.step() on a CosineAnnealingLR from its closure",
)
def cosine_scheduler_in_closure():
    seed()
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=2000)
    step = scheduler_in_closure(scheduler)
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(), optimizer, step=step)


class WarmupStep:
    """A step that owns a linear warm-up from lr 0 (LambdaLR), stepped after optimizer.step()."""

    def __init__(self, warmup: int = 20):
        self.warmup = warmup
        self.schedulers: dict[int, torch.optim.lr_scheduler.LambdaLR] = {}

    def __call__(self, model, batch, optimizer, loss_fn):
        sched = self.schedulers.get(id(optimizer))
        if sched is None:
            sched = torch.optim.lr_scheduler.LambdaLR(
                optimizer, lambda s: min(1.0, s / self.warmup)
            )
            self.schedulers[id(optimizer)] = sched
        loss = standard_step(model, batch, optimizer, loss_fn)
        sched.step()
        return loss


@healthy(
    "warmup_from_zero",
    source="linear warm-up from lr 0 with the scheduler stepped inside the train step",
)
def warmup_from_zero():
    seed()
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    return doctor_verdict(
        model, digits(), nn.CrossEntropyLoss(), adam(model, 3e-3), step=WarmupStep(5)
    )


def sgd_small_batch_step(model, batch, optimizer, loss_fn, size: int = 8):
    """Plain SGD on batches of 8: the step walks the batch it is given in chunks of 8."""
    x, y = batch
    loss = None
    for xs, ys in zip(x.split(size), y.split(size)):
        optimizer.zero_grad()
        loss = loss_fn(model(xs), ys)
        loss.backward()
        optimizer.step()
    return loss


@healthy(
    "sgd_small_batches", source="plain SGD (lr 0.05, no momentum) on batches of 8 from a DataLoader"
)
def sgd_small_batches():
    seed()
    x, y = digits()
    loader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    return doctor_verdict(
        model, loader, nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.05)
    )


# -- transfer learning --------------------------------------------------------------------------
class PretrainedBackboneClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(64, 48), nn.ReLU(), nn.Linear(48, 32), nn.ReLU())
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        return self.head(self.backbone(x))


@healthy(
    "frozen_pretrained_backbone",
    source="fine-tuning a head on a frozen, pretrained backbone (expect_frozen)",
)
def frozen_pretrained_backbone():
    seed()
    model = PretrainedBackboneClassifier()
    x, y = digits()
    # "pretraining": fit backbone and a throwaway head on the first half of the data
    pre = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(60):
        pre.zero_grad()
        F.cross_entropy(model(x[:250]), y[:250]).backward()
        pre.step()
    for p in model.backbone.parameters():
        p.requires_grad_(False)
    model.head.reset_parameters()
    opt = torch.optim.Adam(model.head.parameters(), lr=1e-3)
    return doctor_verdict(
        model, (x[250:], y[250:]), nn.CrossEntropyLoss(), opt, expect_frozen="backbone.*"
    )


@healthy(
    "optimizer_factory",
    source="an optimizer passed as a factory (functools.partial(torch.optim.Adam, lr=...))",
)
def optimizer_factory():
    seed()
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    return doctor_verdict(
        model, digits(), nn.CrossEntropyLoss(), functools.partial(torch.optim.Adam, lr=1e-3)
    )


# -- data forms -----------------------------------------------------------------------------------
class DigitsDataset(Dataset):
    """A map-style dataset that reads one example at a time, with a random augmentation."""

    def __init__(self, x, y, noise: float = 0.0):
        self.x, self.y, self.noise = x, y, noise

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        x = self.x[i]
        if self.noise:
            x = x + self.noise * torch.randn_like(x)
        return x, int(self.y[i])


def seed_worker(worker_id: int) -> None:
    """PyTorch's documented recipe: reseed numpy and random from the worker's torch seed."""
    import random

    worker_seed = torch.initial_seed() % 2**32
    np.random.seed(worker_seed)
    random.seed(worker_seed)


@healthy(
    "dataloader_two_workers",
    source="a DataLoader with num_workers=2 and the documented seed_worker worker_init_fn",
)
def dataloader_two_workers():
    seed()
    x, y = digits(400)
    g = torch.Generator().manual_seed(0)
    loader = DataLoader(
        DigitsDataset(x, y, noise=0.01),
        batch_size=32,
        shuffle=True,
        num_workers=2,
        worker_init_fn=seed_worker,
        generator=g,
    )
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    return doctor_verdict(model, loader, nn.CrossEntropyLoss(), adam(model))


class ShardedStream(torch.utils.data.IterableDataset):
    """An IterableDataset that gives each worker its own share (get_worker_info), as documented."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        rows = range(len(self.y))
        if info is not None:
            rows = rows[info.id :: info.num_workers]
        for i in rows:
            yield self.x[i], self.y[i]


@healthy(
    "iterable_dataset_sharded_workers",
    source="a streaming IterableDataset sharded across 2 workers with get_worker_info()",
)
def iterable_dataset_sharded_workers():
    seed()
    x, y = digits(400)
    loader = DataLoader(ShardedStream(x, y), batch_size=32, num_workers=2)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    return doctor_verdict(model, loader, nn.CrossEntropyLoss(), adam(model))


@healthy(
    "dataloader_no_shuffle_natural_order",
    source="shuffle=False over data stored in collection order (classes mixed), batch 16",
)
def dataloader_no_shuffle_natural_order():
    seed()
    x, y = breast_cancer()
    loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=False)
    model = nn.Sequential(nn.Linear(30, 16), nn.ReLU(), nn.Linear(16, 2))
    return doctor_verdict(model, loader, nn.CrossEntropyLoss(), adam(model))


@healthy("dataset_map_style", source="a map-style Dataset returning (tensor, int) items")
def dataset_map_style():
    seed()
    x, y = digits(400)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    return doctor_verdict(model, DigitsDataset(x, y), nn.CrossEntropyLoss(), adam(model))


@healthy(
    "dataloader_custom_collate",
    source="a DataLoader whose collate_fn stacks dict items into (x, y)",
)
def dataloader_custom_collate():
    seed()
    x, y = digits(400)
    items = [{"pixels": x[i], "digit": int(y[i])} for i in range(len(y))]

    def collate(batch):
        return torch.stack([b["pixels"] for b in batch]), torch.tensor([b["digit"] for b in batch])

    loader = DataLoader(items, batch_size=32, shuffle=True, collate_fn=collate)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    return doctor_verdict(model, loader, nn.CrossEntropyLoss(), adam(model))


@healthy(
    "user_val_split", source="a user-made stratified train/validation split passed as val_data"
)
def user_val_split():
    from sklearn.model_selection import train_test_split

    seed()
    x, y = digits()
    xtr, xva, ytr, yva = train_test_split(
        x.numpy(), y.numpy(), test_size=0.25, stratify=y.numpy(), random_state=0
    )
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    return doctor_verdict(
        model, (xtr, ytr), nn.CrossEntropyLoss(), adam(model), val_data=(xva, yva)
    )


class HFStyleClassifier(nn.Module):
    """A model whose forward takes keyword inputs, as Hugging Face models do."""

    def __init__(self, vocab=20, d=16, classes=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.head = nn.Linear(d, classes)

    def forward(self, input_ids, labels=None):
        return self.head(self.embed(input_ids).mean(dim=1))


@healthy(
    "dict_batches",
    source="batches as dicts {'input_ids', 'labels'} (Hugging Face style), model(**batch)",
)
def dict_batches():
    seed()
    x, y = sentences()
    batches = [{"input_ids": x[i : i + 32], "labels": y[i : i + 32]} for i in range(0, len(y), 32)]
    model = HFStyleClassifier()
    return doctor_verdict(model, batches, nn.CrossEntropyLoss(), adam(model, 1e-2))


# -- sequences ------------------------------------------------------------------------------------
class RNNClassifier(nn.Module):
    def __init__(self, cell, vocab=20, d=16, classes=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.rnn = cell(d, d, batch_first=True)
        self.out = nn.Linear(d, classes)

    def forward(self, tokens):
        h, _ = self.rnn(self.embed(tokens))
        return self.out(h[:, -1])


@healthy("gru_classifier", source="a GRU reading token ids, classifying from its last state")
def gru_classifier():
    seed()
    model = RNNClassifier(nn.GRU)
    return doctor_verdict(model, sentences(), nn.CrossEntropyLoss(), adam(model, 1e-2))


@healthy("lstm_classifier", source="an LSTM reading token ids, classifying from its last state")
def lstm_classifier():
    seed()
    model = RNNClassifier(nn.LSTM)
    return doctor_verdict(model, sentences(), nn.CrossEntropyLoss(), adam(model, 1e-2))


class BagClassifier(nn.Module):
    def __init__(self, vocab=20, d=16, classes=2):
        super().__init__()
        self.bag = nn.EmbeddingBag(vocab, d, mode="mean")
        self.out = nn.Linear(d, classes)

    def forward(self, tokens):
        return self.out(self.bag(tokens))


@healthy("embedding_bag", source="EmbeddingBag(mode='mean') text classifier (fastText style)")
def embedding_bag():
    seed()
    model = BagClassifier()
    return doctor_verdict(model, sentences(), nn.CrossEntropyLoss(), adam(model, 1e-2))


class Conv1dText(nn.Module):
    def __init__(self, vocab=20, d=16, classes=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.conv = nn.Conv1d(d, d, 3, padding=1)
        self.out = nn.Linear(d, classes)

    def forward(self, tokens):
        h = F.relu(self.conv(self.embed(tokens).transpose(1, 2)))
        return self.out(h.amax(dim=2))


@healthy(
    "conv1d_text", source="Conv1d over embeddings with max-over-time pooling (Kim-style text CNN)"
)
def conv1d_text():
    seed()
    model = Conv1dText()
    return doctor_verdict(model, sentences(), nn.CrossEntropyLoss(), adam(model, 1e-2))


class EncoderClassifier(nn.Module):
    """A bidirectional transformer encoder with mean pooling (BERT-like, tiny)."""

    def __init__(self, vocab=20, d=16, length=8, classes=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(length, d) * 0.1)
        self.block = nn.TransformerEncoderLayer(
            d, nhead=2, dim_feedforward=32, dropout=0.1, batch_first=True
        )
        self.out = nn.Linear(d, classes)

    def forward(self, tokens):
        h = self.block(self.embed(tokens) + self.pos[: tokens.shape[1]])
        return self.out(h.mean(dim=1))


@healthy(
    "transformer_encoder_classifier",
    source="a transformer encoder classifier with dropout 0.1 and mean pooling",
)
def transformer_encoder_classifier():
    seed()
    model = EncoderClassifier()
    return doctor_verdict(model, sentences(), nn.CrossEntropyLoss(), adam(model, 3e-3))


class TiedCausalLM(nn.Module):
    """A one-block causal transformer LM whose output projection is the embedding (weight tying)."""

    def __init__(self, vocab=16, d=16, length=8):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(length, d) * 0.1)
        self.block = nn.TransformerEncoderLayer(
            d, nhead=2, dim_feedforward=32, dropout=0.0, batch_first=True, norm_first=True
        )
        self.norm = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.embed.weight

    def forward(self, tokens):
        t = tokens.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(t)
        h = self.block(self.embed(tokens) + self.pos[:t], src_mask=mask, is_causal=True)
        return self.lm_head(self.norm(h))


def lm_loss(out, y):
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))


@healthy(
    "causal_lm_weight_tying",
    source="a causal transformer LM with tied input/output embeddings, next-token targets",
)
def causal_lm_weight_tying():
    seed()
    model = TiedCausalLM()
    return doctor_verdict(model, counting_tokens(), lm_loss, adam(model, 3e-3))


def shifting_lm_loss(out, labels):
    """Hugging Face's convention: labels are the inputs; the loss shifts them by one."""
    return F.cross_entropy(out[:, :-1].reshape(-1, out.shape[-1]), labels[:, 1:].reshape(-1))


@healthy(
    "causal_lm_labels_are_inputs",
    source="a causal LM whose labels are its inputs and whose loss shifts them (HF convention)",
)
def causal_lm_labels_are_inputs():
    seed()
    model = TiedCausalLM()
    x, _ = counting_tokens()
    return doctor_verdict(model, (x, x.clone()), shifting_lm_loss, adam(model, 3e-3))


@healthy(
    "lm_repeated_sequences",
    source="language-model data in which some sequences occur several times (no val_data given)",
)
def lm_repeated_sequences():
    seed()
    x, y = counting_tokens(120)
    x, y = torch.cat([x, x[:40]]), torch.cat([y, y[:40]])
    model = TiedCausalLM()
    return doctor_verdict(model, (x, y), lm_loss, adam(model, 3e-3))


class Tagger(nn.Module):
    def __init__(self, vocab=16, tags=4, d=8):
        super().__init__()
        self.embed = nn.Embedding(vocab, d, padding_idx=0)
        self.rnn = nn.GRU(d, d, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * d, tags)

    def forward(self, tokens):
        return self.out(self.rnn(self.embed(tokens))[0]).transpose(1, 2)


@healthy(
    "bigru_tagger_padding",
    source="a bidirectional GRU tagger; padding tagged -100 (ignore_index), output (N, C, T)",
)
def bigru_tagger_padding():
    seed()
    g = torch.Generator().manual_seed(0)
    x = torch.randint(1, 16, (240, 8), generator=g)
    pad = torch.arange(8) >= torch.randint(3, 9, (240, 1), generator=g)
    x[pad] = 0
    y = (x + x.roll(1, dims=1)) % 4
    y[pad] = -100
    model = Tagger()
    return doctor_verdict(model, (x, y), nn.CrossEntropyLoss(), adam(model, 1e-2))


# -- optimizers beyond Adam and SGD ------------------------------------------------------------
@healthy(
    "lbfgs_closure_step",
    source="torch.optim.LBFGS with optimizer.step(closure) on a small table (scientific ML)",
)
def lbfgs_closure_step():
    seed()
    x, y = breast_cancer()
    model = nn.Sequential(nn.Linear(30, 16), nn.Tanh(), nn.Linear(16, 2))
    opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=3, history_size=10)
    return doctor_verdict(model, (x, y), nn.CrossEntropyLoss(), opt, step=lbfgs_step)


def small_mlp(act: type[nn.Module] = nn.ReLU, hidden: int = 32) -> nn.Module:
    return nn.Sequential(nn.Linear(64, hidden), act(), nn.Linear(hidden, 10))


@healthy("nadam", source="NAdam (Adam with Nesterov momentum), lr 2e-3")
def nadam():
    seed()
    model = small_mlp()
    opt = torch.optim.NAdam(model.parameters(), lr=2e-3)
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(), opt)


@healthy(
    "radam_decoupled_weight_decay",
    source="RAdam (rectified warm-up of the variance) with decoupled weight decay 1e-2",
)
def radam_decoupled_weight_decay():
    seed()
    model = small_mlp()
    opt = torch.optim.RAdam(
        model.parameters(), lr=1e-3, weight_decay=1e-2, decoupled_weight_decay=True
    )
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(), opt)


@healthy("adamax", source="Adamax (the infinity-norm Adam variant), lr 2e-3")
def adamax():
    seed()
    model = small_mlp()
    opt = torch.optim.Adamax(model.parameters(), lr=2e-3)
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(), opt)


@healthy("adagrad_default_lr", source="Adagrad at its default lr 0.01 (sparse-feature recipes)")
def adagrad_default_lr():
    seed()
    model = small_mlp()
    opt = torch.optim.Adagrad(model.parameters(), lr=1e-2)
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(), opt)


# -- normalisation, activations and layer layouts ----------------------------------------------
@healthy(
    "instance_norm_conv",
    source="a CNN with InstanceNorm2d(affine=True) (style-transfer and small-batch backbones)",
)
def instance_norm_conv():
    seed()
    model = nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1),
        nn.InstanceNorm2d(4, affine=True),
        nn.ReLU(),
        nn.Conv2d(4, 4, 3, padding=1),
        nn.InstanceNorm2d(4, affine=True),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(2),
        nn.Flatten(),
        nn.Linear(16, 10),
    )
    return doctor_verdict(model, digit_images(), nn.CrossEntropyLoss(), adam(model, 1e-2))


@healthy(
    "batchnorm_no_running_stats",
    source="BatchNorm1d(track_running_stats=False): batch statistics in eval mode too (MAML, "
    "some GAN discriminators)",
)
def batchnorm_no_running_stats():
    seed()
    model = nn.Sequential(
        nn.Linear(64, 48),
        nn.BatchNorm1d(48, track_running_stats=False),
        nn.ReLU(),
        nn.Linear(48, 10),
    )
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(), adam(model))


def depthwise_separable(c_in: int, c_out: int) -> nn.Module:
    """MobileNet's block: a 3x3 depthwise conv, then a 1x1 pointwise one, each BN + ReLU6."""
    return nn.Sequential(
        nn.Conv2d(c_in, c_in, 3, padding=1, groups=c_in, bias=False),
        nn.BatchNorm2d(c_in),
        nn.ReLU6(),
        nn.Conv2d(c_in, c_out, 1, bias=False),
        nn.BatchNorm2d(c_out),
        nn.ReLU6(),
    )


@healthy(
    "depthwise_separable_conv",
    source="MobileNet-style depthwise-separable blocks with MaxPool, Dropout2d and Hardswish",
)
def depthwise_separable_conv():
    seed()
    model = nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1),
        nn.ReLU(),
        depthwise_separable(4, 8),
        nn.MaxPool2d(2),
        nn.Dropout2d(0.1),
        nn.AdaptiveAvgPool2d(2),
        nn.Flatten(),
        nn.Hardswish(),
        nn.Linear(32, 10),
    )
    return doctor_verdict(model, digit_images(400), nn.CrossEntropyLoss(), adam(model, 1e-2))


@healthy(
    "channels_last_conv",
    source="a CNN and its images in torch.channels_last memory format (the AMP/tensor-core recipe)",
)
def channels_last_conv():
    seed()
    x, y = digit_images()
    model = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(8 * 16, 10),
    ).to(memory_format=torch.channels_last)
    x = x.contiguous(memory_format=torch.channels_last)
    return doctor_verdict(model, (x, y), nn.CrossEntropyLoss(), adam(model, 3e-3))


class SharedLayer(nn.Module):
    """One Linear applied twice in a row (weight sharing across depth, as in ALBERT)."""

    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(64, 32)
        self.shared = nn.Linear(32, 32)
        self.out = nn.Linear(32, 10)

    def forward(self, x):
        h = torch.relu(self.inp(x))
        for _ in range(2):
            h = torch.relu(self.shared(h))
        return self.out(h)


@healthy("weight_sharing_across_depth", source="one layer applied twice (ALBERT-style sharing)")
def weight_sharing_across_depth():
    seed()
    model = SharedLayer()
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(), adam(model))


@healthy("prelu_mlp", source="PReLU activations, one shared slope and one per channel")
def prelu_mlp():
    seed()
    model = nn.Sequential(
        nn.Linear(64, 48), nn.PReLU(), nn.Linear(48, 48), nn.PReLU(48), nn.Linear(48, 10)
    )
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(), adam(model))


@healthy("silu_mish_mlp", source="SiLU and Mish activations (EfficientNet, YOLOv4)")
def silu_mish_mlp():
    seed()
    model = nn.Sequential(
        nn.Linear(64, 48), nn.SiLU(), nn.Linear(48, 48), nn.Mish(), nn.Linear(48, 10)
    )
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(), adam(model))


@healthy(
    "weight_norm_parametrization",
    source="torch.nn.utils.parametrizations.weight_norm on every Linear (WaveNet, GAN recipes)",
)
def weight_norm_parametrization():
    from torch.nn.utils.parametrizations import weight_norm

    seed()
    model = nn.Sequential(weight_norm(nn.Linear(64, 32)), nn.ReLU(), weight_norm(nn.Linear(32, 10)))
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(), adam(model))


class DropPathResidual(nn.Module):
    """Residual blocks dropped per example in training (stochastic depth / DropPath)."""

    def __init__(self, width: int = 48, p: float = 0.2):
        super().__init__()
        self.inp = nn.Linear(64, width)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(width), nn.Linear(width, width), nn.GELU()) for _ in range(2)
        )
        self.p = p
        self.out = nn.Linear(width, 10)

    def forward(self, x):
        h = self.inp(x)
        for block in self.blocks:
            if self.training:
                keep = (torch.rand(x.shape[0], 1) > self.p).float() / (1 - self.p)
                h = h + block(h) * keep
            else:
                h = h + block(h)
        return self.out(h)


@healthy("stochastic_depth", source="residual blocks with DropPath 0.2 (timm's ViT/ConvNeXt)")
def stochastic_depth():
    seed()
    model = DropPathResidual()
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(), adam(model, 2e-3))


# -- losses of their own -----------------------------------------------------------------------
def focal_loss(logits, y, gamma: float = 2.0):
    """Lin et al.'s focal loss for multi-class logits."""
    log_p = F.log_softmax(logits, dim=1).gather(1, y[:, None]).squeeze(1)
    return (-((1 - log_p.exp()) ** gamma) * log_p).mean()


@healthy("focal_loss", source="a hand-written focal loss (gamma 2) on multi-class logits")
def focal_loss_case():
    seed()
    model = small_mlp()
    return doctor_verdict(model, digits(), focal_loss, adam(model))


QUANTILES = torch.tensor([0.1, 0.5, 0.9])


def pinball_loss(out, y):
    """The quantile (pinball) loss of three quantile heads against one target."""
    err = y[:, None] - out
    return torch.maximum(QUANTILES * err, (QUANTILES - 1) * err).mean()


@healthy(
    "quantile_regression",
    source="quantile regression: (N, 3) heads for the 10/50/90% quantiles, pinball loss",
)
def quantile_regression():
    seed()
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))
    return doctor_verdict(model, diabetes(), pinball_loss, adam(model, 3e-3))


def gaussian_nll(out, y):
    """A predicted mean and variance (softplus) under GaussianNLLLoss."""
    return F.gaussian_nll_loss(out[:, 0], y, F.softplus(out[:, 1]) + 1e-4)


@healthy(
    "gaussian_nll_predicted_variance",
    source="heteroscedastic regression: a mean and a variance head under F.gaussian_nll_loss",
)
def gaussian_nll_predicted_variance():
    seed()
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2))
    return doctor_verdict(model, diabetes(), gaussian_nll, adam(model, 3e-3))


@healthy("poisson_counts", source="count regression with PoissonNLLLoss(log_input=True)")
def poisson_counts():
    seed()
    x, y = diabetes()
    counts = torch.poisson(torch.exp(0.6 * y + 1.0), generator=torch.Generator().manual_seed(0))
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1), Squeeze())
    return doctor_verdict(model, (x, counts), nn.PoissonNLLLoss(log_input=True), adam(model, 3e-3))


@healthy(
    "raw_unit_regression",
    source="regression on the raw target in its own units (diabetes, 25 to 346), MSE, Adam 1e-2",
)
def raw_unit_regression():
    from sklearn.datasets import load_diabetes

    seed()
    x, y = load_diabetes(return_X_y=True)
    x = torch.tensor((x - x.mean(0)) / x.std(0), dtype=torch.float32)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1), Squeeze())
    y = torch.tensor(y, dtype=torch.float32)
    return doctor_verdict(model, (x, y), nn.MSELoss(), adam(model, 1e-2))


def diabetes_grades():
    """The diabetes inputs and their target's quartile, 0-3, as an ordinal grade."""
    x, y = diabetes()
    return x, torch.bucketize(y, torch.quantile(y, torch.tensor([0.25, 0.5, 0.75])))


@healthy(
    "ordinal_cumulative_targets",
    source="ordinal regression as cumulative binary targets P(grade > k), BCEWithLogitsLoss",
)
def ordinal_cumulative_targets():
    seed()
    x, grade = diabetes_grades()
    cumulative = (grade[:, None] > torch.arange(3)).float()
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))
    return doctor_verdict(model, (x, cumulative), nn.BCEWithLogitsLoss(), adam(model, 3e-3))


def coral_loss(logits, ranks):
    """CORAL (Cao et al. 2020): K-1 logits P(rank > k) against an integer rank, the cumulative
    binary targets built inside the loss as coral-pytorch's levels_from_labelbatch does."""
    levels = (ranks[:, None] > torch.arange(logits.shape[1], device=ranks.device)).float()
    return F.binary_cross_entropy_with_logits(logits, levels)


@healthy(
    "ordinal_coral_integer_ranks",
    source="CORAL ordinal regression: integer ranks 0-3 and 3 logits, the levels made in the loss",
)
def ordinal_coral_integer_ranks():
    seed()
    x, ranks = diabetes_grades()
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))
    return doctor_verdict(model, (x, ranks), coral_loss, adam(model, 3e-3))


@healthy(
    "poisson_integer_counts",
    source="count regression with integer (int64) counts and PoissonNLLLoss(log_input=True)",
)
def poisson_integer_counts():
    seed()
    x, y = diabetes()
    rates = torch.exp(0.6 * y + 1.0)
    counts = torch.poisson(rates, generator=torch.Generator().manual_seed(0)).long()
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1), Squeeze())
    return doctor_verdict(model, (x, counts), nn.PoissonNLLLoss(log_input=True), adam(model, 3e-3))


def digit_pairs(n: int = 400):
    """Pairs of digits, half of them of the same digit, labelled 1 when they are."""
    x, y = digits()
    g = torch.Generator().manual_seed(0)
    i = torch.randint(0, len(y), (n,), generator=g)
    j = torch.randint(0, len(y), (n,), generator=g)
    for k in range(0, n, 2):
        same = torch.nonzero(y == y[i[k]]).flatten()
        j[k] = same[torch.randint(0, len(same), (1,), generator=g)]
    return torch.stack([x[i], x[j]], dim=1), (y[i] == y[j]).float()


class SiameseVerifier(nn.Module):
    """Koch et al.'s verification net: a shared encoder, a logit from |enc(a) - enc(b)| (the
    encoder's last bias cancels in the difference, so it never trains)."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 16))
        self.head = nn.Linear(16, 1)

    def forward(self, pairs):
        gap = (self.enc(pairs[:, 0]) - self.enc(pairs[:, 1])).abs()
        return self.head(gap).squeeze(-1)


@healthy(
    "siamese_pairs_bce",
    source="a siamese verification net on pairs of digits (same/different), BCEWithLogitsLoss",
)
def siamese_pairs_bce():
    seed()
    model = SiameseVerifier()
    return doctor_verdict(model, digit_pairs(), nn.BCEWithLogitsLoss(), adam(model, 3e-3))


# -- train steps with more than one loss --------------------------------------------------------
@healthy(
    "distillation_frozen_teacher",
    source="knowledge distillation from a frozen, trained teacher inside the train step",
)
def distillation_frozen_teacher():
    seed()
    x, y = digits()
    teacher = small_mlp(hidden=64)
    opt = torch.optim.Adam(teacher.parameters(), lr=3e-3)
    for _ in range(80):
        opt.zero_grad()
        F.cross_entropy(teacher(x), y).backward()
        opt.step()
    teacher.eval().requires_grad_(False)
    model = small_mlp(hidden=16)
    step = DistillStep(teacher)
    return doctor_verdict(model, (x, y), nn.CrossEntropyLoss(), adam(model, 3e-3), step=step)


@healthy(
    "rare_positive_class",
    source="binary classification with 1% positives (8 of 800, a subtle minority of one digit), "
    "as fraud or a rare diagnosis is, under BCEWithLogitsLoss with pos_weight",
)
def rare_positive_class():
    seed()
    x, y = digits(800)
    target = ((y == 0) & (x[:, 20] > 0.5)).float()
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 1), Squeeze())
    loss_fn = nn.BCEWithLogitsLoss(pos_weight=torch.tensor(20.0))
    return doctor_verdict(model, (x, target), loss_fn, adam(model))


@healthy(
    "contrastive_self_supervised_step",
    source="SimCLR-style contrastive pretraining: two noisy views, InfoNCE over the batch, in a "
    "train step that does not use the labels it is given",
)
def contrastive_self_supervised_step():
    seed()
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 32))
    return doctor_verdict(
        model, digits(), nn.CrossEntropyLoss(), adam(model), step=contrastive_step
    )


@healthy(
    "momentum_target_network",
    source="a target network (momentum encoder as in MoCo and BYOL, mean teacher) inside the "
    "model, requires_grad off, moved toward the online network by the train step",
)
def momentum_target_network():
    model = WithTarget()
    opt = torch.optim.SGD(model.online.parameters(), lr=0.05, momentum=0.9)
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(), opt, step=target_step)


@healthy(
    "mixture_of_experts_noisy_router",
    source="a mixture-of-experts layer with noisy top-1 gating over 8 experts (Shazeer et al. "
    "2017); tests/doctor/test_conditional_computation_and_targets.py has one with 32, whose "
    "probe batch reaches some experts only",
)
def mixture_of_experts_noisy_router():
    model = NoisyExperts(experts=8)
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(), adam(model))


class MixupStep:
    """mixup (Zhang et al.): inputs and losses mixed with a shuffled copy of the batch."""

    def __init__(self, alpha: float = 0.2):
        self.alpha = alpha

    def __call__(self, model, batch, optimizer, loss_fn):
        x, y = batch
        lam = float(torch.distributions.Beta(self.alpha, self.alpha).sample())
        perm = torch.randperm(len(y))
        optimizer.zero_grad()
        out = model(lam * x + (1 - lam) * x[perm])
        loss = lam * loss_fn(out, y) + (1 - lam) * loss_fn(out, y[perm])
        loss.backward()
        optimizer.step()
        return loss


@healthy("mixup_step", source="mixup (alpha 0.2) inside the user's train step")
def mixup_step():
    seed()
    model = small_mlp(hidden=64)
    return doctor_verdict(
        model, digits(), nn.CrossEntropyLoss(), adam(model, 3e-3), step=MixupStep()
    )


# -- tables and tokens in other forms ----------------------------------------------------------
@healthy(
    "pandas_dataframe_wine",
    source="(DataFrame, Series) straight from scikit-learn's as_frame=True, a float64 model",
)
def pandas_dataframe_wine():
    from sklearn.datasets import load_wine

    seed()
    frame = load_wine(as_frame=True).frame
    features = frame.drop(columns="target")
    features = (features - features.mean()) / features.std()
    model = nn.Sequential(nn.Linear(13, 16), nn.ReLU(), nn.Linear(16, 3)).double()
    return doctor_verdict(
        model, (features, frame["target"]), nn.CrossEntropyLoss(), adam(model, 3e-3)
    )


class TabularWithCategory(nn.Module):
    """A table whose first column is a category id, embedded; the rest are numbers."""

    def __init__(self, categories: int = 4):
        super().__init__()
        self.category = nn.Embedding(categories, 4)
        self.net = nn.Sequential(nn.Linear(9 + 4, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, x):
        cat = self.category(x[:, 0].long())
        return self.net(torch.cat([x[:, 1:], cat], dim=1)).squeeze(-1)


@healthy(
    "tabular_category_embedding",
    source="a category column (age quartile) embedded beside numeric features (entity embeddings)",
)
def tabular_category_embedding():
    seed()
    x, y = diabetes()
    age = x[:, 0].contiguous()
    quartile = torch.bucketize(age, torch.quantile(age, torch.tensor([0.25, 0.5, 0.75])))
    x = torch.cat([quartile[:, None].float(), x[:, 1:]], dim=1)
    model = TabularWithCategory()
    return doctor_verdict(model, (x, y), nn.MSELoss(), adam(model, 3e-3))


class SparseBag(nn.Module):
    def __init__(self, vocab: int = 20, d: int = 16, classes: int = 2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d, sparse=True)
        self.out = nn.Linear(d, classes)

    def forward(self, tokens):
        return self.out(self.embed(tokens).mean(dim=1))


@healthy(
    "sparse_embedding_sgd",
    source="nn.Embedding(sparse=True) trained by SGD, which takes sparse gradients (recsys)",
)
def sparse_embedding_sgd():
    seed()
    model = SparseBag()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    return doctor_verdict(model, sentences(), nn.CrossEntropyLoss(), opt)


def padded_sentences(n: int = 256, length: int = 8, vocab: int = 20):
    """:func:`sentences` cut to random lengths, padded with token 0 at the end."""
    x, y = sentences(n, length, vocab)
    lengths = torch.randint(3, length + 1, (n,), generator=torch.Generator().manual_seed(1))
    return x.masked_fill(torch.arange(length) >= lengths[:, None], 0), y


class MaskedEncoderClassifier(nn.Module):
    """A transformer encoder over padded tokens with src_key_padding_mask and masked mean
    pooling (BERT-style attention masks)."""

    def __init__(self, vocab: int = 20, d: int = 16, length: int = 8, classes: int = 2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d, padding_idx=0)
        self.pos = nn.Parameter(torch.randn(length, d) * 0.1)
        self.block = nn.TransformerEncoderLayer(
            d, nhead=2, dim_feedforward=32, dropout=0.1, batch_first=True
        )
        self.out = nn.Linear(d, classes)

    def forward(self, tokens):
        pad = tokens == 0
        h = self.block(self.embed(tokens) + self.pos[: tokens.shape[1]], src_key_padding_mask=pad)
        keep = (~pad).unsqueeze(-1).float()
        return self.out((h * keep).sum(1) / keep.sum(1))


@healthy(
    "transformer_key_padding_mask",
    source="a transformer classifier over padded token sequences with a key padding mask",
)
def transformer_key_padding_mask():
    seed()
    model = MaskedEncoderClassifier()
    return doctor_verdict(model, padded_sentences(), nn.CrossEntropyLoss(), adam(model, 1e-2))


# -- training tricks that change the graph, the output scale or the step -------------------------
@healthy(
    "zero_init_classifier_head",
    source="an MLP whose output layer starts at zero (no gradient reaches the hidden layers on "
    "the first step)",
)
def zero_init_classifier_head():
    seed()
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    nn.init.zeros_(model[2].weight)
    nn.init.zeros_(model[2].bias)
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(), adam(model))


class BinaryStraightThrough(nn.Module):
    """Binarised hidden units trained through a straight-through estimator (sign forward, the
    tanh's gradient backward), as in binary networks and VQ-style codes."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(64, 32), nn.Linear(32, 10)

    def forward(self, x):
        h = torch.tanh(self.a(x))
        return self.b(h + (torch.sign(h) - h).detach())


@healthy("straight_through_estimator", source="binary hidden units with a straight-through grad")
def straight_through_estimator():
    seed()
    model = BinaryStraightThrough()
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(), adam(model, 3e-3))


class CheckpointedMLP(nn.Module):
    """Activation checkpointing: the trunk's activations are recomputed in the backward pass."""

    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        from torch.utils.checkpoint import checkpoint

        return self.head(checkpoint(self.trunk, x, use_reentrant=False))


@healthy("activation_checkpointing", source="torch.utils.checkpoint around the trunk")
def activation_checkpointing():
    seed()
    model = CheckpointedMLP()
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(), adam(model))


class LearnedTemperature(nn.Module):
    """Logits times exp(a learned scalar), starting at 1 (CLIP's logit_scale)."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
        self.logit_scale = nn.Parameter(torch.tensor(0.0))

    def forward(self, x):
        return self.net(x) * self.logit_scale.exp()


@healthy("learned_temperature", source="a learned scalar temperature on the logits (CLIP-style)")
def learned_temperature():
    seed()
    model = LearnedTemperature()
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(), adam(model))


class CosineClassifier(nn.Module):
    """Normalised features against normalised class weights, times a fixed scale of 16
    (cosine-softmax / NormFace heads)."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 32))
        self.weight = nn.Parameter(torch.randn(10, 32))

    def forward(self, x):
        return 16.0 * F.normalize(self.net(x), dim=1) @ F.normalize(self.weight, dim=1).T


@healthy("cosine_classifier", source="a cosine-softmax head with a fixed scale")
def cosine_classifier():
    seed()
    model = CosineClassifier()
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(), adam(model, 3e-3))


def sam_step(model, batch, optimizer, loss_fn, rho: float = 0.05):
    """Sharpness-aware minimisation: ascend to the worst nearby weights, take the gradient
    there, come back, step."""
    x, y = batch
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    params = [p for p in model.parameters() if p.grad is not None]
    norm = torch.norm(torch.stack([p.grad.norm() for p in params])) + 1e-12
    eps = [rho * p.grad / norm for p in params]
    with torch.no_grad():
        for p, e in zip(params, eps):
            p.add_(e)
    optimizer.zero_grad()
    loss_fn(model(x), y).backward()
    with torch.no_grad():
        for p, e in zip(params, eps):
            p.sub_(e)
    optimizer.step()
    return loss


@healthy("sharpness_aware_step", source="a SAM step: two forward-backward passes per update")
def sharpness_aware_step():
    seed()
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(), opt, step=sam_step)


class EmaStep:
    """A standard step that also keeps an exponential moving average of the weights."""

    def __init__(self, decay: float = 0.99):
        self.decay, self.ema = decay, {}

    def __call__(self, model, batch, optimizer, loss_fn):
        loss = standard_step(model, batch, optimizer, loss_fn)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name not in self.ema:
                    self.ema[name] = p.detach().clone()
                else:
                    self.ema[name].mul_(self.decay).add_(p.detach(), alpha=1 - self.decay)
        return loss


@healthy("weight_ema_in_step", source="a step that updates an EMA copy of the weights")
def weight_ema_in_step():
    seed()
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(), adam(model), step=EmaStep())


class FakeQuantised(nn.Module):
    """Quantisation-aware training: 8-bit fake quantisation of the hidden activations."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(64, 32), nn.Linear(32, 10)

    def forward(self, x):
        h = torch.fake_quantize_per_tensor_affine(F.relu(self.a(x)), 0.05, 0, 0, 255)
        return self.b(h)


@healthy("fake_quantisation_aware", source="QAT: fake-quantised activations (uint8)")
def fake_quantisation_aware():
    seed()
    model = FakeQuantised()
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(), adam(model, 3e-3))


@healthy(
    "spectral_norm_hidden_layers",
    source="spectral normalisation on the hidden layers, a plain output layer (SNGP-style)",
)
def spectral_norm_hidden_layers():
    seed()
    sn = nn.utils.parametrizations.spectral_norm
    model = nn.Sequential(
        sn(nn.Linear(64, 64)), nn.ReLU(), sn(nn.Linear(64, 64)), nn.ReLU(), nn.Linear(64, 10)
    )
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(), adam(model, 3e-3))


class RowsAsTokens(nn.Module):
    """Multi-head self-attention over the image's rows as tokens, mean-pooled."""

    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(8, 32)
        self.att = nn.MultiheadAttention(32, 4, batch_first=True)
        self.out = nn.Linear(32, 10)

    def forward(self, x):
        h = self.inp(x.view(-1, 8, 8))
        a, _ = self.att(h, h, h, need_weights=False)
        return self.out((h + a).mean(1))


@healthy("multihead_attention_rows", source="nn.MultiheadAttention over rows as tokens")
def multihead_attention_rows():
    seed()
    model = RowsAsTokens()
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(), adam(model, 3e-3))


@healthy(
    "batchnorm_heavy_dropout_sgd",
    source="Linear -> BatchNorm -> ReLU -> Dropout(0.5), SGD lr 0.1 with momentum and decay",
)
def batchnorm_heavy_dropout_sgd():
    seed()
    model = nn.Sequential(
        nn.Linear(64, 128), nn.BatchNorm1d(128), nn.ReLU(), nn.Dropout(0.5), nn.Linear(128, 10)
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    return doctor_verdict(model, digits(), nn.CrossEntropyLoss(), opt)


def _standardised_table(load) -> tuple[torch.Tensor, torch.Tensor]:
    x, y = load(return_X_y=True)
    x = torch.tensor(x, dtype=torch.float32)
    return (x - x.mean(0)) / x.std(0), torch.tensor(y)


@healthy("iris_small_table", source="iris: 150 rows, 4 features, one nearly separating class")
def iris_small_table():
    from sklearn.datasets import load_iris

    seed()
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
    return doctor_verdict(
        model, _standardised_table(load_iris), nn.CrossEntropyLoss(), adam(model, 1e-2)
    )


@healthy("wine_small_table", source="wine: 178 rows, 13 features, strongly predictive columns")
def wine_small_table():
    from sklearn.datasets import load_wine

    seed()
    model = nn.Sequential(nn.Linear(13, 16), nn.ReLU(), nn.Linear(16, 3))
    return doctor_verdict(
        model, _standardised_table(load_wine), nn.CrossEntropyLoss(), adam(model, 1e-2)
    )


@healthy(
    "linnerud_small_multi_output",
    source="linnerud: 20 rows, 3 features, 3 standardised targets; a small MLP with Adam's "
    "default learning rate",
)
def linnerud_small_multi_output():
    from sklearn.datasets import load_linnerud

    x, y = _standardised_table(load_linnerud)
    y = y.float()
    seed()
    model = nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 3))
    return doctor_verdict(model, (x, (y - y.mean(0)) / y.std(0)), nn.MSELoss(), adam(model))
