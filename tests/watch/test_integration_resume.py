"""A resumed Lightning or Hugging Face run keeps its watch: the callbacks save
``Watcher.state_dict`` with the trainer's checkpoints and restore it on resume (issue 24,
item 12). Real tiny Trainers; each test is skipped where its framework is not installed."""

from __future__ import annotations

import os

import pytest
import torch
import torch.nn.functional as F

from tests.watch._training import MLP, digits

pytestmark = pytest.mark.slow


# -- Lightning ----------------------------------------------------------------------------------


def _lightning_fit(pl, cb, steps, ckpt_path=None):
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
        torch.utils.data.TensorDataset(x, y), batch_size=32, shuffle=False
    )
    torch.manual_seed(0)
    trainer = pl.Trainer(
        max_steps=steps,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[cb],
    )
    trainer.fit(Module(), loader, ckpt_path=ckpt_path)
    return trainer


def test_lightning_resume_keeps_the_watch(tmp_path):
    pl = pytest.importorskip("lightning.pytorch")
    from labcoat.watch.integrations.lightning import LabcoatWatch

    first = LabcoatWatch(every=1)
    trainer = _lightning_fit(pl, first, 12)
    ckpt = tmp_path / "step12.ckpt"
    trainer.save_checkpoint(ckpt)
    saved = torch.load(ckpt, weights_only=False)["callbacks"]
    assert any("watch" in state for state in saved.values())  # the watch is in the checkpoint
    resumed = LabcoatWatch(every=1)
    _lightning_fit(pl, resumed, 20, ckpt_path=ckpt)
    assert resumed.watcher.observed == 20  # 12 restored + 8 trained: the windows went on
    fresh = LabcoatWatch(every=1)  # the twin: a run that does not resume starts at zero
    _lightning_fit(pl, fresh, 8)
    assert fresh.watcher.observed == 8 and resumed.alerts == []


# -- Hugging Face -------------------------------------------------------------------------------


def _hf_train(transformers, cb, out, steps, resume=None):
    class Classifier(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = MLP()

        def forward(self, x, labels=None):
            logits = self.net(x)
            return {"loss": F.cross_entropy(logits, labels), "logits": logits}

    x, y = digits()
    data = [{"x": x[i], "labels": y[i]} for i in range(512)]
    args = transformers.TrainingArguments(
        output_dir=str(out),
        max_steps=steps,
        per_device_train_batch_size=32,
        logging_steps=1,
        learning_rate=3e-3,
        report_to=[],
        save_strategy="steps",
        save_steps=12,
        use_cpu=True,
        disable_tqdm=True,
    )
    torch.manual_seed(0)
    trainer = transformers.Trainer(
        model=Classifier(), args=args, train_dataset=data, callbacks=[cb]
    )
    trainer.train(resume_from_checkpoint=resume)


def test_huggingface_resume_keeps_the_watch(tmp_path):
    transformers = pytest.importorskip("transformers")
    from labcoat.watch.integrations.huggingface import LabcoatWatchCallback

    _hf_train(transformers, LabcoatWatchCallback(every=1), tmp_path, 12)
    checkpoint = tmp_path / "checkpoint-12"
    assert (checkpoint / LabcoatWatchCallback.STATE_FILE).is_file()
    resumed = LabcoatWatchCallback(every=1)
    _hf_train(transformers, resumed, tmp_path, 20, resume=str(checkpoint))
    assert resumed.watcher.observed == 20  # 12 restored + 8 trained
    # the planted case: the state is gone from the checkpoint; the watch says so, starts over
    os.remove(checkpoint / LabcoatWatchCallback.STATE_FILE)
    lost = LabcoatWatchCallback(every=1)
    with pytest.warns(UserWarning, match="the watch starts with empty windows"):
        _hf_train(transformers, lost, tmp_path, 20, resume=str(checkpoint))
    assert lost.watcher.observed == 8
