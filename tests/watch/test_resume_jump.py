"""resume_jump: the losses after a resume continue those before the checkpoint (issue 35).
Planted: a resume whose weights were not restored (a DDP checkpoint under strict=False), one
whose inputs are prepared differently; healthy twins: an exact resume, a run never resumed."""

from __future__ import annotations

import io

import pytest
import torch
import torch.nn.functional as F

import labcoat
from tests.watch._training import MLP, digits

CUT, AFTER = 120, 40


def fresh():
    torch.manual_seed(0)
    model = MLP()
    return model, torch.optim.Adam(model.parameters(), lr=3e-3)


def run(model, opt, gen, steps, w, scale=1.0):
    x_all, y_all = digits()
    for step in steps:
        idx = torch.randint(0, len(x_all), (32,), generator=gen)
        loss = F.cross_entropy(model(x_all[idx] * scale), y_all[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        w.observe(step=step, loss=loss)


def checkpoint():
    model, opt = fresh()
    gen = torch.Generator().manual_seed(1)
    with labcoat.watch(model, opt, every=3) as first:
        run(model, opt, gen, range(CUT), first)
        buffer = io.BytesIO()
        torch.save(
            {
                "model": {f"module.{k}": v for k, v in model.state_dict().items()},
                "opt": opt.state_dict(),
                "gen": gen.get_state(),
                "watch": first.state_dict(),
            },
            buffer,
        )
    buffer.seek(0)
    return torch.load(buffer)


def resume(ckpt, *, strip=True, scale=1.0):
    model, opt = fresh()
    state = ckpt["model"]
    if strip:
        state = {k.removeprefix("module."): v for k, v in state.items()}
    model.load_state_dict(state, strict=False)
    opt.load_state_dict(ckpt["opt"])
    gen = torch.Generator()
    gen.set_state(ckpt["gen"])
    w = labcoat.watch(model, opt, every=3)
    w.load_state_dict(ckpt["watch"])
    with w:
        run(model, opt, gen, range(CUT, CUT + AFTER), w, scale)
    return w


def finding(w):
    return next(f for f in w.findings() if f.check == "resume_jump")


@pytest.mark.check("watch.resume_jump", healthy=True)
def test_an_exact_resume_continues_the_run():
    w = resume(checkpoint())
    assert not [a for a in w.alerts if a.check == "resume_jump"], w.alerts
    assert finding(w).status == "pass", finding(w).message


@pytest.mark.check("watch.resume_jump", planted=True)
def test_weights_left_fresh_by_strict_false_jump():
    w = resume(checkpoint(), strip=False)  # module. keys match nothing; fresh weights train on
    alerts = [a for a in w.alerts if a.check == "resume_jump"]
    assert alerts and f"the resume at step {CUT} " in alerts[0].message, w.alerts
    assert "does not continue" in alerts[0].message


@pytest.mark.check("watch.resume_jump", planted=True)
def test_inputs_prepared_differently_on_resume_jump():
    w = resume(checkpoint(), scale=16.0)  # pixels left in 0-16 by the resume script
    assert [a for a in w.alerts if a.check == "resume_jump"], w.alerts


@pytest.mark.check("watch.resume_jump", healthy=True)
def test_a_run_never_resumed_has_nothing_to_judge():
    model, opt = fresh()
    with labcoat.watch(model, opt, every=3) as w:
        run(model, opt, torch.Generator().manual_seed(1), range(60), w)
    f = finding(w)
    assert f.status == "skip" and "not resumed" in f.message, f.message
