"""Record and replay on the frameworks' own trainers: a Lightning ``Trainer.fit``, a Hugging
Face ``Trainer.train`` and an Accelerate-prepared hand loop, each replayed bit for bit from a
checkpoint inside the run (across an epoch boundary) with a value added in hindsight.

Each records a script and replays it in subprocesses (tests/replay/trainer_scripts.py), so all
are slow; the framework is skipped where it is not installed.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from tests.replay.scripts import cli, env, write_script
from tests.replay.trainer_scripts import (
    ACCELERATE,
    ACCELERATE_HINDSIGHT,
    HUGGINGFACE,
    HUGGINGFACE_HINDSIGHT,
    LIGHTNING,
    LIGHTNING_HINDSIGHT,
    hindsight,
)


def _checkpoints(run):
    return sorted(int(p.stem) for p in (run / "checkpoints").glob("*.json"))


def _record_and_replay_with_hindsight(tmp_path, text, line, window, checkpoint):
    """Record ``text``, add ``line`` in hindsight, replay ``window``: every recorded value is
    replayed identically and the new one comes back at every replayed step."""
    script = write_script(tmp_path, text=text)
    proc = subprocess.run(
        [sys.executable, "-W", "always", str(script)],
        cwd=tmp_path,
        env=env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "NothingRecorded" not in proc.stderr and "NotHooked" not in proc.stderr
    run = Path(proc.stdout.strip().splitlines()[-1])
    cps = _checkpoints(run)
    assert checkpoint in cps and len(cps) >= 3, cps
    script.write_text(hindsight(text, line))
    lo, hi = window
    code, out, err = cli(tmp_path, "replay", str(run), "--from", str(lo), "--to", str(hi), "--json")
    assert code == 0, (err, out)
    assert out["checkpoint"] == checkpoint and out["first_mismatch"] is None, out
    assert [s["step"] for s in out["steps"]] == list(range(lo, hi + 1))
    for row in out["steps"]:
        assert row["recorded"] and row["recorded"] == {
            k: v for k, v in row["replayed"].items() if k != "weight_norm"
        }
    assert [s for s, _ in out["new"]["weight_norm"]] == list(range(lo, hi + 1))
    return run, out


@pytest.mark.slow
def test_a_lightning_fit_replays_bit_for_bit_from_inside_an_epoch_with_hindsight(tmp_path):
    """Shuffled, augmented batches, dropout, Adam and an epoch-wise StepLR: replayed from the
    checkpoint at batch 8 (epoch 1, batch 2) across the start of epoch 2. Checkpoint 12 (the
    first batch of epoch 2) is not taken: Lightning resumes mid-epoch, not there."""
    pytest.importorskip("lightning")
    run, out = _record_and_replay_with_hindsight(
        tmp_path, LIGHTNING, LIGHTNING_HINDSIGHT, (9, 14), checkpoint=8
    )
    assert 12 not in _checkpoints(run)
    assert set(out["steps"][0]["recorded"]) == {"train_loss", "loss"}


@pytest.mark.slow
def test_a_hugging_face_trainer_replays_bit_for_bit_from_a_mid_run_checkpoint(tmp_path):
    """Its logs (loss, grad_norm, learning_rate with warm-up and decay, epoch) replayed from
    the checkpoint at step 8 across an epoch boundary; rec.log inside forward in hindsight."""
    pytest.importorskip("transformers")
    _, out = _record_and_replay_with_hindsight(
        tmp_path, HUGGINGFACE, HUGGINGFACE_HINDSIGHT, (9, 14), checkpoint=8
    )
    assert {"loss", "grad_norm", "learning_rate"} <= set(out["steps"][0]["recorded"])


@pytest.mark.slow
def test_an_accelerate_loop_replays_from_inside_a_gradient_accumulation(tmp_path):
    """Checkpoint 3 falls between the two batches of an accumulation: the Accelerator's step
    counter comes back with it, so the replay syncs and steps on the same batches."""
    pytest.importorskip("accelerate")
    _record_and_replay_with_hindsight(
        tmp_path, ACCELERATE, ACCELERATE_HINDSIGHT, (4, 10), checkpoint=3
    )


# -- the end of a block that recorded nothing ------------------------------------------------


def test_a_block_whose_loop_is_not_rec_loop_warns_what_to_do(tmp_path):
    """Planted: the training loop iterates the data itself (as a trainer's loop did before
    trainers were hooked): the block's end says nothing was recorded and what to do."""
    import torch

    import labcoat
    from labcoat.replay.integrations import NothingRecorded

    model = torch.nn.Linear(2, 1)
    with pytest.warns(NothingRecorded, match=r"0 steps.*rec\.loop"):
        with labcoat.replayable(model=model, every=2, dir=tmp_path, ledger=False):
            for _ in range(3):
                model(torch.randn(4, 2)).sum().backward()


def test_a_hand_loop_does_not_warn(tmp_path):
    """Healthy twin: the same loop through rec.loop records its steps and says nothing."""
    import torch

    import labcoat
    from labcoat.replay.integrations import NothingRecorded

    model = torch.nn.Linear(2, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NothingRecorded)
        with labcoat.replayable(model=model, every=2, dir=tmp_path, ledger=False) as rec:
            for _ in rec.loop("step", range(3)):
                model(torch.randn(4, 2)).sum().backward()
    assert rec.step == 3


@pytest.mark.slow
def test_a_lightning_trainer_with_its_own_fit_loop_is_named_and_the_block_warns(tmp_path):
    """Planted: a Trainer whose fit loop is the user's own cannot be hooked: fit says so, and
    the block (which then recorded nothing, as every Lightning run did before trainers were
    hooked) says so at its end."""
    pl = pytest.importorskip("lightning.pytorch")
    import torch
    from lightning.pytorch.loops.fit_loop import _FitLoop

    import labcoat
    from labcoat.replay.integrations import NothingRecorded, NotHooked

    class OwnLoop(_FitLoop):
        pass

    class Module(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Linear(2, 1)

        def training_step(self, batch, batch_idx):
            return self.net(batch[0]).pow(2).mean()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    data = torch.utils.data.TensorDataset(torch.randn(8, 2))
    trainer = pl.Trainer(
        max_steps=2,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit_loop = OwnLoop(trainer, max_epochs=1)
    model = Module()
    with pytest.warns(NothingRecorded), pytest.warns(NotHooked, match="OwnLoop"):
        with labcoat.replayable(model=model, every=1, dir=tmp_path, ledger=False):
            trainer.fit(model, torch.utils.data.DataLoader(data, batch_size=4))


@pytest.mark.slow
def test_a_hugging_face_trainer_that_overrides_its_training_loop_is_named(tmp_path):
    """Planted: a Trainer subclass with its own _inner_training_loop is named loudly (its steps
    are recorded only if it still calls the callbacks); the stock Trainer is not (healthy)."""
    transformers = pytest.importorskip("transformers")
    import torch

    import labcoat
    from labcoat.replay.integrations import NotHooked

    class Own(transformers.Trainer):
        def _inner_training_loop(self, *args, **kwargs):
            raise RuntimeError("stop here")

    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Linear(2, 1)

        def forward(self, x, labels=None):
            return {"loss": self.net(x).pow(2).mean()}

    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"), max_steps=1, report_to=[], use_cpu=True
    )
    data = [{"x": torch.randn(2)} for _ in range(4)]
    with pytest.warns(NotHooked, match=r"Own overrides Trainer\._inner_training_loop"):
        with pytest.raises(RuntimeError, match="stop here"):
            with labcoat.replayable(dir=tmp_path, ledger=False):
                Own(model=Tiny(), args=args, train_dataset=data).train()


def test_a_prepared_loader_resumes_its_epoch_order_past_the_batches_used():
    """The data side of a Lightning resume, without Lightning: the loader's state (the epoch's
    RNG entry state and the batches used) makes a fresh iteration draw the same order and skip
    the used batches; the main process's RNG states before the first batch fetched past them
    (the recorder keeps them: Lightning fetches ahead) give the rest identically augmented."""
    import torch

    from labcoat.replay.integrations.lightning import prepare_loader

    class Noisy(torch.utils.data.Dataset):
        def __len__(self):
            return 24

        def __getitem__(self, i):
            return torch.tensor(float(i)) + 0.01 * torch.randn(())

    def loader():
        return torch.utils.data.DataLoader(Noisy(), batch_size=4, shuffle=True)

    torch.manual_seed(0)
    first = loader()
    entry = prepare_loader(first)
    assert prepare_loader(first) is entry  # once
    batches = [b.tolist() for b in first]
    entry.used = 2
    state = first.state_dict()
    fetch = {2: entry.fetch_states()[2]}
    torch.manual_seed(123)  # the replaying process is elsewhere in its RNG stream
    second = loader()
    resumed = prepare_loader(second)
    second.load_state_dict(state)
    resumed.fetch = fetch
    assert [b.tolist() for b in second] == batches[2:]
    assert [b.tolist() for b in second] != batches  # the next epoch: a new order, from 0
