"""A resumed Lightning or Hugging Face run keeps its watch: the callbacks save
``Watcher.state_dict`` with the trainer's checkpoints and restore it on resume (issue 24,
item 12). Real tiny Trainers; each test is skipped where its framework is not installed."""

from __future__ import annotations

import os

import pytest
import torch

from tests.watch._training import hf_train, lightning_fit

pytestmark = pytest.mark.slow


# -- Lightning ----------------------------------------------------------------------------------


def test_lightning_resume_keeps_the_watch(tmp_path):
    pl = pytest.importorskip("lightning.pytorch")
    from labcoat.watch.integrations.lightning import LabcoatWatch

    first = LabcoatWatch(every=1)
    trainer = lightning_fit(pl, first, 12)
    ckpt = tmp_path / "step12.ckpt"
    trainer.save_checkpoint(ckpt)
    saved = torch.load(ckpt, weights_only=False)["callbacks"]
    assert any("watch" in state for state in saved.values())  # the watch is in the checkpoint
    resumed = LabcoatWatch(every=1)
    lightning_fit(pl, resumed, 20, ckpt_path=ckpt)
    assert resumed.watcher.observed == 20  # 12 restored + 8 trained: the windows went on
    fresh = LabcoatWatch(every=1)  # the twin: a run that does not resume starts at zero
    lightning_fit(pl, fresh, 8)
    assert fresh.watcher.observed == 8 and resumed.alerts == []


# -- Hugging Face -------------------------------------------------------------------------------


def test_huggingface_resume_keeps_the_watch(tmp_path):
    transformers = pytest.importorskip("transformers")
    from labcoat.watch.integrations.huggingface import LabcoatWatchCallback

    hf_train(transformers, LabcoatWatchCallback(every=1), tmp_path, 12, save_steps=12)
    checkpoint = tmp_path / "checkpoint-12"
    assert (checkpoint / LabcoatWatchCallback.STATE_FILE).is_file()
    resumed = LabcoatWatchCallback(every=1)
    hf_train(transformers, resumed, tmp_path, 20, save_steps=12, resume=str(checkpoint))
    assert resumed.watcher.observed == 20  # 12 restored + 8 trained
    # the planted case: the state is gone from the checkpoint; the watch says so, starts over
    os.remove(checkpoint / LabcoatWatchCallback.STATE_FILE)
    lost = LabcoatWatchCallback(every=1)
    with pytest.warns(UserWarning, match="the watch starts with empty windows"):
        hf_train(transformers, lost, tmp_path, 20, save_steps=12, resume=str(checkpoint))
    assert lost.watcher.observed == 8
