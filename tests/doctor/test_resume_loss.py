"""update.resume.loss: the resumed model's loss continues the loss its checkpoint recorded
(issue 35). Planted: a checkpoint written from another object than the trained model (its
state dicts still match the resume), inputs prepared differently on resume; healthy twins: an
exact resume, a loss recorded as an epoch's running mean, a single batch."""

import pytest
import torch
from torch import nn

import labcoat
from labcoat.errors import InputError
from tests.doctor.helpers import digits, mlp

loss_fn = nn.CrossEntropyLoss()


def trained(epochs=3, seed=0):
    """A digits MLP trained a few epochs; its checkpoint records the last batch's loss and the
    epoch's running mean."""
    x, y = digits()
    x = (x - x.mean(0)) / (x.std(0) + 1e-6)
    model = mlp(seed=seed)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        total = 0.0
        order = torch.randperm(len(x), generator=g)
        batches = list(zip(x[order].split(32), y[order].split(32)))
        for xb, yb in batches:
            opt.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            total += loss.item()
    ckpt = {
        "model": {k: v.clone() for k, v in model.state_dict().items()},
        "optimizer": opt.state_dict(),
        "loss": loss.item(),
        "epoch_loss": total / len(batches),
    }
    return ckpt, batches


def resume(ckpt):
    model = mlp(seed=1)
    model.load_state_dict(ckpt["model"])
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    opt.load_state_dict(ckpt["optimizer"])
    return model, opt


def finding(ckpt, data):
    model, opt = resume(ckpt)
    report = labcoat.check_resume(model, opt, None, ckpt, data=data, loss_fn=loss_fn, ledger=False)
    return report["update.resume.loss"], report


@pytest.mark.check("doctor.update.resume.loss", healthy=True)
def test_an_exact_resume_continues_the_recorded_loss():
    ckpt, batches = trained()
    f, report = finding(ckpt, batches)
    assert f.status == "pass" and report.ok, f.message
    assert f.evidence["checkpoint_loss"] == ckpt["loss"]


@pytest.mark.check("doctor.update.resume.loss", healthy=True)
def test_an_epochs_running_mean_and_a_single_batch_pass():
    ckpt, batches = trained()
    ckpt["loss"] = ckpt.pop("epoch_loss")  # above the model's loss at the epoch's end
    f, _ = finding(ckpt, batches)
    assert f.status == "pass", f.message
    f, _ = finding(ckpt, batches[0])  # one batch, cut in parts for its noise
    assert f.status == "pass", f.message


@pytest.mark.check("doctor.update.resume.loss", planted=True)
def test_a_checkpoint_written_from_a_fresh_model_fails_though_its_state_matches():
    ckpt, batches = trained()
    ckpt["model"] = mlp(seed=2).state_dict()  # saved the wrong object; the loss is the run's
    f, report = finding(ckpt, batches)
    assert report["update.resume.model"].status == "pass"  # what was saved was restored
    assert f.status == "fail" and "does not continue" in f.message, f.message


@pytest.mark.check("doctor.update.resume.loss", planted=True)
def test_inputs_prepared_differently_on_resume_fail():
    ckpt, batches = trained()
    x, y = digits()  # the resume script forgot to standardise
    f, _ = finding(ckpt, list(zip(x.split(32), y.split(32))))
    assert f.status == "fail", f.message


def test_without_data_the_loss_check_is_skipped_and_half_an_input_is_refused():
    ckpt, batches = trained(epochs=1)
    model, opt = resume(ckpt)
    report = labcoat.check_resume(model, opt, None, ckpt, ledger=False)
    assert report["update.resume.loss"].status == "skip"
    with pytest.raises(InputError, match="both"):
        labcoat.check_resume(model, opt, None, ckpt, data=batches, ledger=False)
    with pytest.raises(InputError, match="data"):
        labcoat.check_resume(model, opt, None, ckpt, data=3, loss_fn=loss_fn, ledger=False)
