"""Checkpoints that reference the user's own (labcoat.replay.storage): what they keep, the
checks when recording (a file that does not hold the state gets no checkpoint) and when
replaying (a file changed or gone is refused), both formats."""

from __future__ import annotations

import json
import warnings

import pytest
import torch
from torch import nn

import labcoat
from labcoat.errors import InputError
from labcoat.replay.checkpoint import Store

torch.set_num_threads(1)


def _train(root, save, *, every="saved", steps=8, before_step=False):
    """A small Adam loop that saves its own checkpoint every 4 steps with ``save(path, model,
    opt)`` and tells the recorder; ``before_step``: saves before the optimizer steps (the
    file then does not hold the state the next step starts from)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 256), nn.ReLU(), nn.Linear(256, 256), nn.Linear(256, 2))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    with labcoat.replayable(model=model, optimizer=opt, every=every, dir=root, ledger=False) as rec:
        for _ in rec.loop("step", range(steps)):
            loss = model(torch.randn(4, 6)).pow(2).mean()
            loss.backward()
            if before_step and rec.step % 4 == 3:
                rec.checkpoint_saved(save(root / f"user-{rec.step}", model, opt))
            opt.step()
            opt.zero_grad()  # after the step: no gradient is left for the checkpoint to keep
            if not before_step and rec.step % 4 == 3:
                rec.checkpoint_saved(save(root / f"user-{rec.step}", model, opt))
            rec.log(loss=loss)
    return rec.dir, model, opt


def torch_save(path, model, opt):
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict()}, path)
    return path


def dcp_save(path, model, opt):
    import torch.distributed.checkpoint as dcp

    state = {"model": model.state_dict(), "optimizer": opt.state_dict()}
    dcp.save(state, checkpoint_id=str(path), no_dist=True)
    return path


def _manifest(run, step):
    return json.loads((run / "checkpoints" / f"{step:08d}.json").read_text())


@pytest.mark.parametrize("save", [torch_save, dcp_save], ids=["torch.save", "dcp"])
def test_a_referenced_checkpoint_keeps_only_what_the_file_lacks_and_loads_back(tmp_path, save):
    run, model, opt = _train(tmp_path, save)
    store = Store(run)
    assert store.steps() == [4, 8]  # every="saved": only where the user saved
    manifest = _manifest(run, 4)
    n = sum(p.numel() for p in model.parameters())
    assert manifest["external"]["objects"] == ["models.model", "optimizers.optimizer"]
    assert manifest["bytes_total"] < n  # RNGs, positions, structure: not 12-16 bytes/param
    state = store.load(8)  # the state at the end: what the live objects hold now
    for name, t in model.state_dict().items():
        assert torch.equal(state["models"]["model"][name], t)
    live = opt.state_dict()["state"]
    for i, slot in live.items():
        assert torch.equal(
            state["optimizers"]["optimizer"]["state"][i]["exp_avg_sq"], slot["exp_avg_sq"]
        )


def test_a_changed_or_lost_user_checkpoint_is_refused(tmp_path):
    run, model, opt = _train(tmp_path, torch_save)
    store = Store(run)
    path = tmp_path / "user-3"
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict()}, path)  # overwritten
    with pytest.raises(InputError, match="changed since it was recorded"):
        store.load(4)
    path.unlink()
    with pytest.raises(InputError, match="which is gone"):
        store.load(4)
    store.load(8)  # the other one is intact


def test_a_file_saved_before_the_optimizer_step_gets_no_checkpoint(tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run, _, _ = _train(tmp_path, torch_save, before_step=True)
    assert Store(run).steps() == []
    text = " ".join(str(w.message) for w in caught)
    assert "does not hold models['model']" in text and "its values differ" in text


def test_its_own_checkpoints_still_come_every_n_steps_beside_the_users(tmp_path):
    run, _, _ = _train(tmp_path, torch_save, every=5, steps=10)
    store = Store(run)
    assert store.steps() == [0, 4, 5, 8, 10]
    assert "external" in _manifest(run, 4) and "external" not in _manifest(run, 5)
    assert _manifest(run, 5)["bytes_total"] > 12 * 256 * 256  # a full one: params + Adam


def test_bad_keys_and_calls_outside_the_recording_are_refused(tmp_path):
    model = nn.Linear(2, 2)
    with labcoat.replayable(model=model, dir=tmp_path, ledger=False) as rec:
        with pytest.raises(InputError, match="names no object"):
            rec.checkpoint_saved(tmp_path / "x", keys={"nope": "model"})
    with pytest.raises(InputError, match="outside the recording"):
        rec.checkpoint_saved(tmp_path / "x")
    with pytest.raises(InputError, match="'saved'"):
        labcoat.replayable(model=model, every="sometimes")


USER_SCRIPT = r"""
import torch
from torch import nn
import labcoat

torch.set_num_threads(1)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 2))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
with labcoat.replayable(model=model, optimizer=opt, every="saved", ledger=False) as rec:
    for epoch in rec.loop("epoch", range(2)):
        for i in rec.loop("step", range(5)):
            loss = model(torch.randn(8, 6)).pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            rec.log(loss=loss)
            if rec.step % 3 == 2 and not rec.replaying:
                path = f"user-{rec.step}.pt"
                torch.save({"model": model.state_dict(), "optimizer": opt.state_dict()}, path)
                rec.checkpoint_saved(path)
print(rec.dir)
"""


@pytest.mark.slow
def test_a_run_recorded_on_the_users_checkpoints_replays_exactly_and_refuses_a_changed_one(
    tmp_path,
):
    from tests.replay.scripts import cli, record, write_script

    run = record(tmp_path, script=write_script(tmp_path, text=USER_SCRIPT))
    assert Store(run).steps() == [3, 6, 9]  # one after each save, none of its own
    code, out, err = cli(tmp_path, "replay", str(run), "--from", "4", "--json")
    assert code == 0, err
    assert out["checkpoint"] == 3 and out["first_mismatch"] is None
    assert [s["step"] for s in out["steps"]] == list(range(4, 10))
    (tmp_path / "user-2.pt").write_bytes(b"not the checkpoint")
    code, _, err = cli(tmp_path, "replay", str(run), "--from", "4")
    assert code == 2 and "changed since it was recorded" in err, err
    code, out, err = cli(tmp_path, "replay", str(run), "--from", "7", "--json")
    assert code == 0 and out["checkpoint"] == 6, err  # the others are intact
