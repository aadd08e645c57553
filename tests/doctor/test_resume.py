"""labcoat.check_resume: a resumed run must continue the run it resumes (issue 35). Planted: a
DDP (module.) or torch.compile (_orig_mod.) checkpoint loaded with strict=False, a fresh
optimizer, a fresh scheduler; healthy twin: an exact resume, the prefix stripped."""

import pytest
import torch
from torch import nn

import labcoat
from labcoat.errors import InputError


def run(steps=5, seed=0):
    """A few steps of a small run with Adam and a warm-up scheduler, and its checkpoint."""
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 2))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=10)
    x, y = torch.randn(64, 8), torch.randint(0, 2, (64,))
    for _ in range(steps):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        sched.step()
    return model, opt, sched


def checkpoint_of(model, opt, sched, prefix=""):
    return {
        "model": {prefix + k: v.clone() for k, v in model.state_dict().items()},
        "optimizer": opt.state_dict(),
        "scheduler": sched.state_dict(),
        "step": 5,
    }


def fresh():
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 2))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=10)
    return model, opt, sched


def resumed(ckpt, *, strict=True, optimizer=True, scheduler=True, strip=False):
    model, opt, sched = fresh()
    state = ckpt["model"]
    if strip:
        state = {k.removeprefix("module."): v for k, v in state.items()}
    model.load_state_dict(state, strict=strict)
    if optimizer:
        opt.load_state_dict(ckpt["optimizer"])
    if scheduler:
        sched.load_state_dict(ckpt["scheduler"])
    return model, opt, sched


def check(model, opt, sched, ckpt):
    return labcoat.check_resume(model, opt, sched, ckpt, ledger=False)


@pytest.mark.check("doctor.update.resume.model", healthy=True)
@pytest.mark.check("doctor.update.resume.optimizer", healthy=True)
@pytest.mark.check("doctor.update.resume.scheduler", healthy=True)
def test_an_exact_resume_passes_every_check(tmp_path):
    ckpt = checkpoint_of(*run())
    report = check(*resumed(ckpt), ckpt)
    statuses = {f.check: f.status for f in report.findings}
    assert report.ok and statuses.pop("update.resume.loss") == "skip"  # no data given
    assert set(statuses.values()) == {"pass"}, report.findings
    path = tmp_path / "ckpt.pt"
    torch.save(ckpt, path)
    assert check(*resumed(ckpt), path).ok  # a path reads the same


@pytest.mark.check("doctor.update.resume.model", planted=True)
@pytest.mark.parametrize("prefix", ["module.", "_orig_mod."])
def test_a_wrapped_checkpoint_loaded_with_strict_false_fails_naming_the_prefix(prefix):
    ckpt = checkpoint_of(*run(), prefix=prefix)
    model, opt, sched = resumed(ckpt, strict=False)  # matches nothing, says nothing
    f = check(model, opt, sched, ckpt)["update.resume.model"]
    assert f.status == "fail" and repr(prefix) in f.message, f.message
    assert f.evidence["wrapper_prefixes"] == [prefix]


@pytest.mark.check("doctor.update.resume.model", healthy=True)
def test_a_wrapped_checkpoint_whose_prefix_was_stripped_passes():
    ckpt = checkpoint_of(*run(), prefix="module.")
    f = check(*resumed(ckpt, strip=True), ckpt)["update.resume.model"]
    assert f.status == "pass" and "stripped" in f.message, f.message


@pytest.mark.check("doctor.update.resume.model", planted=True)
def test_a_buffer_left_out_of_the_checkpoint_fails():
    model, opt, sched = run()
    ckpt = checkpoint_of(model, opt, sched)
    del ckpt["model"]["1.running_var"]
    f = check(*resumed(ckpt, strict=False), ckpt)["update.resume.model"]
    assert f.status == "fail" and "1.running_var" in f.message, f.message


@pytest.mark.check("doctor.update.resume.optimizer", planted=True)
def test_a_fresh_optimizer_fails():
    ckpt = checkpoint_of(*run())
    f = check(*resumed(ckpt, optimizer=False), ckpt)["update.resume.optimizer"]
    assert f.status == "fail" and "start from zero" in f.message, f.message


@pytest.mark.check("doctor.update.resume.scheduler", planted=True)
def test_a_fresh_scheduler_fails():
    ckpt = checkpoint_of(*run())
    f = check(*resumed(ckpt, scheduler=False), ckpt)["update.resume.scheduler"]
    assert f.status == "fail" and "last_epoch 0 (checkpoint: 5)" in f.message, f.message


def test_a_checkpoint_without_optimizer_or_scheduler_state_warns_and_bad_input_is_refused():
    model, opt, sched = run()
    ckpt = {"model": model.state_dict()}
    report = check(model, opt, sched, ckpt)
    assert report["update.resume.optimizer"].status == "warn"
    assert report["update.resume.scheduler"].status == "warn"
    assert report["update.resume.model"].status == "pass"
    with pytest.raises(InputError, match="checkpoint"):
        labcoat.check_resume(model, opt, sched, 3)
    with pytest.raises(InputError, match="no file"):
        labcoat.check_resume(model, opt, sched, "missing.pt")


def test_the_doctor_ladder_skips_the_resume_checks():
    from tests.doctor.helpers import diagnose, mlp

    report = diagnose(mlp(), layers=("update",))
    assert report["update.resume.model"].status == "skip"
