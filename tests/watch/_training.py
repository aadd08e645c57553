"""Small real training runs for the watch tests: models, data and a plain training loop.

Data are scikit-learn's bundled handwritten digits (8x8 images, 10 classes): an MLP sees 64
pixels, a CNN an 8x8 image, a tiny transformer 8 tokens of 8 pixels (one per row).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

import labcoat


@lru_cache(maxsize=1)
def digits() -> tuple[torch.Tensor, torch.Tensor]:
    from sklearn.datasets import load_digits

    data = load_digits()
    x = torch.tensor(data.data, dtype=torch.float32) / 16.0
    y = torch.tensor(data.target, dtype=torch.long)
    return x, y


class MLP(nn.Module):
    def __init__(self, hidden: int = 64):
        super().__init__()
        self.fc1 = nn.Linear(64, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, 10)
        self.detach_at_fc2 = False  # planted bug: cut the graph below the head

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.fc1(x))
        h = F.relu(self.fc2(h))
        if self.detach_at_fc2:
            h = h.detach()
        return self.head(h)


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.Conv2d(8, 16, 3),
            nn.ReLU(),
        )
        self.head = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.features(x.view(-1, 1, 8, 8))
        return self.head(h.mean(dim=(2, 3)))


class TinyTransformer(nn.Module):
    def __init__(self, d: int = 32):
        super().__init__()
        self.embed = nn.Linear(8, d)
        self.pos = nn.Parameter(torch.zeros(8, d))
        layer = nn.TransformerEncoderLayer(
            d, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = nn.Linear(d, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embed(x.view(-1, 8, 8)) + self.pos
        return self.head(self.encoder(h).mean(dim=1))


def warmup_decay(optimizer: torch.optim.Optimizer, warmup: int, total: int, cosine: bool = False):
    """Linear warm-up from zero (as Hugging Face schedules do), then linear or cosine decay."""

    def factor(step: int) -> float:
        if step < warmup:
            return step / warmup
        progress = min(1.0, (step - warmup) / max(1, total - warmup))
        return 0.5 * (1 + math.cos(math.pi * progress)) if cosine else 1.0 - progress

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


Plant = Callable[[int, nn.Module, torch.optim.Optimizer, torch.Tensor, torch.Tensor], tuple]


def train(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    *,
    steps: int,
    plant: Plant | None = None,
    scheduler=None,
    scaler=None,
    observe_batch: bool = False,
    batch: int = 32,
    seed: int = 0,
    loss_fn: Callable[[nn.Module, torch.Tensor, torch.Tensor, int], torch.Tensor] | None = None,
    set_to_none: bool = True,
    **watch_options,
):
    """Train on digits with the user's loop unchanged, watched; ``plant`` may alter the batch
    (or the model/optimizer) before each step; ``observe_batch`` hands each batch to
    ``observe`` too; ``loss_fn(model, x, y, step)`` replaces the cross-entropy of the model's
    output; ``set_to_none=False`` zeroes gradients rather than dropping them, as loops written
    for torch before 2.0 do. Returns the watcher."""
    x_all, y_all = digits()
    gen = torch.Generator().manual_seed(seed)
    with labcoat.watch(model, optimizer, **watch_options) as w:
        for step in range(steps):
            idx = torch.randint(0, len(x_all), (batch,), generator=gen)
            x, y = x_all[idx], y_all[idx]
            if plant is not None:
                x, y = plant(step, model, optimizer, x, y)
            loss = F.cross_entropy(model(x), y) if loss_fn is None else loss_fn(model, x, y, step)
            optimizer.zero_grad(set_to_none=set_to_none)
            if scaler is None:
                loss.backward()
                optimizer.step()
            else:
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            if scheduler is not None:
                scheduler.step()
            w.observe(step=step, loss=loss, batch=(x, y) if observe_batch else None)
    return w


def healthy_runs():
    """(name, model, optimizer, scheduler, steps) for three healthy runs with warm-up and decay."""
    torch.manual_seed(0)
    mlp = MLP()
    opt = torch.optim.SGD(mlp.parameters(), lr=0.1, momentum=0.9)
    yield "mlp", mlp, opt, warmup_decay(opt, 20, 300, cosine=True), 300
    torch.manual_seed(0)
    cnn = CNN()
    opt = torch.optim.Adam(cnn.parameters(), lr=3e-3)
    yield "cnn", cnn, opt, warmup_decay(opt, 20, 250), 250
    torch.manual_seed(0)
    tf = TinyTransformer()
    opt = torch.optim.AdamW(tf.parameters(), lr=2e-3, weight_decay=0.01)
    yield "transformer", tf, opt, warmup_decay(opt, 30, 250), 250


# -- the frameworks' own trainers (the caller passes the imported module, so this file needs
# neither) -----------------------------------------------------------------------------------


def lightning_fit(pl, callback, steps: int, *, ckpt_path=None, shuffle: bool = False):
    """A real Lightning ``Trainer`` fitting the MLP on digits for ``steps`` steps on the CPU,
    with ``callback``; ``ckpt_path`` resumes from a checkpoint. Returns the trainer."""

    class Module(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = MLP()

        def training_step(self, batch, batch_idx):
            x, y = batch
            return F.cross_entropy(self.net(x), y)

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=3e-3)

    x, y = digits()
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(x, y), batch_size=32, shuffle=shuffle
    )
    torch.manual_seed(0)
    trainer = pl.Trainer(
        max_steps=steps,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[callback],
    )
    trainer.fit(Module(), loader, ckpt_path=ckpt_path)
    return trainer


def hf_train(transformers, callback, out, steps: int, *, save_steps=None, resume=None) -> None:
    """A real Hugging Face ``Trainer`` training the MLP on digits for ``steps`` steps on the
    CPU, with ``callback``; checkpoints every ``save_steps`` (None: none) into ``out``, and
    ``resume`` resumes from one."""

    class Classifier(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = MLP()

        def forward(self, x, labels=None):
            logits = self.net(x)
            return {"loss": F.cross_entropy(logits, labels), "logits": logits}

    x, y = digits()
    data = [{"x": x[i], "labels": y[i]} for i in range(512)]
    saving = (
        {"save_strategy": "no"}
        if save_steps is None
        else {"save_strategy": "steps", "save_steps": save_steps}
    )
    args = transformers.TrainingArguments(
        output_dir=str(out),
        max_steps=steps,
        per_device_train_batch_size=32,
        logging_steps=1,
        learning_rate=3e-3,
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
        **saving,
    )
    torch.manual_seed(0)
    trainer = transformers.Trainer(
        model=Classifier(), args=args, train_dataset=data, callbacks=[callback]
    )
    trainer.train(resume_from_checkpoint=resume)
