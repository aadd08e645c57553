"""Training scripts on the frameworks' own trainers, for the replay tests: a Lightning
``Trainer.fit``, a Hugging Face ``Trainer.train`` and an Accelerate-prepared hand loop.

Each trains a tiny MLP with dropout on 96 shuffled points (augmented with torch noise in
``__getitem__`` where the loader is the user's) for three epochs of six batches, inside
``with labcoat.replayable(...)`` written as a user would: nothing framework-specific is passed to
the recorder. ``# HINDSIGHT`` is where a test adds a value the recording never logged.
"""

from __future__ import annotations

COMMON = r"""
import torch
from torch import nn
import torch.nn.functional as F
import labcoat

torch.set_num_threads(1)
torch.manual_seed(0)
G = torch.Generator().manual_seed(1)
X = torch.randn(96, 6, generator=G)
Y = (X[:, 0] + X[:, 1] > 0).long()

class Data(torch.utils.data.Dataset):
    def __len__(self):
        return len(X)
    def __getitem__(self, i):
        return X[i] + 0.1 * torch.randn(6), Y[i]

def mlp():
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 2))
"""

LIGHTNING = (
    "import lightning.pytorch as pl\n"
    + COMMON
    + r"""
class Module(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = mlp()
    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self.net(x), y)
        self.log("train_loss", loss)
        # HINDSIGHT
        return loss
    def configure_optimizers(self):
        opt = torch.optim.Adam(self.parameters(), lr=1e-2)
        return {"optimizer": opt, "lr_scheduler": torch.optim.lr_scheduler.StepLR(opt, 1, 0.5)}

model = Module()
loader = torch.utils.data.DataLoader(Data(), batch_size=16, shuffle=True)
trainer = pl.Trainer(
    max_epochs=3, accelerator="cpu", logger=False, enable_checkpointing=False,
    enable_progress_bar=False, enable_model_summary=False,
)
with labcoat.replayable(model=model, every=4, ledger=False) as rec:
    trainer.fit(model, loader)
print(rec.dir)
"""
)

LIGHTNING_HINDSIGHT = 'self.log("weight_norm", self.net[0].weight.norm())'

HUGGINGFACE = (
    "import transformers\n"
    + COMMON
    + r"""
class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = mlp()
    def forward(self, x, labels=None):
        logits = self.net(x)
        # HINDSIGHT
        return {"loss": F.cross_entropy(logits, labels), "logits": logits}

data = [{"x": X[i], "labels": Y[i]} for i in range(len(X))]
args = transformers.TrainingArguments(
    output_dir="hf_out", num_train_epochs=3, per_device_train_batch_size=16, logging_steps=1,
    learning_rate=1e-2, lr_scheduler_type="linear", warmup_steps=2, report_to=[], use_cpu=True,
    disable_tqdm=True, save_strategy="no",
)
trainer = transformers.Trainer(model=Classifier(), args=args, train_dataset=data)
with labcoat.replayable(every=4, ledger=False) as rec:
    trainer.train()
print(rec.dir)
"""
)

HUGGINGFACE_HINDSIGHT = "rec.log(weight_norm=float(self.net[0].weight.norm()))"

ACCELERATE = (
    "from accelerate import Accelerator\n"
    + COMMON
    + r"""
accelerator = Accelerator(cpu=True, gradient_accumulation_steps=2)
model = mlp()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
sched = torch.optim.lr_scheduler.StepLR(opt, 3, 0.5)
loader = torch.utils.data.DataLoader(Data(), batch_size=16, shuffle=True)
model, opt, loader, sched = accelerator.prepare(model, opt, loader, sched)
with labcoat.replayable(model=model, optimizer=opt, scheduler=sched, every=3, ledger=False) as rec:
    for epoch in rec.loop("epoch", range(3)):
        for x, y in rec.loop("step", loader):
            with accelerator.accumulate(model):
                loss = F.cross_entropy(model(x), y)
                accelerator.backward(loss)
                opt.step()
                sched.step()
                opt.zero_grad()
            rec.log(loss=loss)
            # HINDSIGHT
print(rec.dir)
"""
)

ACCELERATE_HINDSIGHT = "rec.log(weight_norm=float(model[0].weight.norm()))"


def hindsight(script: str, line: str) -> str:
    """``script`` with ``line`` added at its ``# HINDSIGHT`` mark (same indentation)."""
    return script.replace("# HINDSIGHT", line)
