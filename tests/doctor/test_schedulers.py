"""Learning-rate schedulers the train step drives: each run steps a copy bound to its own
optimizer copy, the caller's scheduler and optimizer are left as they were, and a schedule that
collapses the learning rate is named when the overfit control fails."""

import pytest
import torch

from tests.doctor.helpers import SchedulerStep, diagnose, mlp, scheduler_in_closure

LAYERS = ("data", "model", "update", "overfit")


def test_a_scheduler_held_by_a_step_object_drives_the_copies_not_the_callers_optimizer():
    model = mlp()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=3e-3, total_steps=3000)
    lr, epoch = optimizer.param_groups[0]["lr"], scheduler.last_epoch
    report = diagnose(model, optimizer=optimizer, step=SchedulerStep(scheduler), layers=LAYERS)
    assert report["update.step.isolated"].status == "pass", report["update.step.isolated"].message
    assert report.ok, report.summary()
    assert (optimizer.param_groups[0]["lr"], scheduler.last_epoch) == (lr, epoch)


@pytest.mark.check("doctor.update.step.isolated", healthy=True)
def test_a_scheduler_a_step_function_reads_from_its_closure_is_swapped_for_a_copy():
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=2000)
    step = scheduler_in_closure(scheduler)
    report = diagnose(model, optimizer=optimizer, step=step, layers=LAYERS)
    assert report["update.step.isolated"].status == "pass", report["update.step.isolated"].message
    assert scheduler.last_epoch == 0 and optimizer.param_groups[0]["lr"] == 0.1


GLOBAL_MODEL = mlp(seed=3)


def test_a_step_function_training_a_global_model_is_still_caught():
    def step(model, batch, optimizer, loss_fn):  # trains GLOBAL_MODEL, not its argument
        x, y = batch
        loss = loss_fn(GLOBAL_MODEL(x), y)
        loss.backward()
        with torch.no_grad():
            for p in GLOBAL_MODEL.parameters():
                p -= 0.1 * p.grad
        optimizer.step()
        return loss

    before = [p.detach().clone() for p in GLOBAL_MODEL.parameters()]
    report = diagnose(GLOBAL_MODEL, step=step, layers=("data", "model", "update"))
    assert report["update.step.isolated"].status == "fail"
    assert all(torch.equal(a, b) for a, b in zip(before, GLOBAL_MODEL.parameters()))


def test_a_schedule_that_collapses_the_learning_rate_is_named_by_the_overfit_failure():
    model = mlp()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=5, gamma=0.1)
    report = diagnose(model, optimizer=optimizer, step=SchedulerStep(scheduler), layers=LAYERS)
    f = report["overfit.batch"]
    assert f.status == "fail"
    assert "learning rate fell from 0.001" in f.message
    assert f.evidence["lr_last"] < 1e-20


def test_a_schedule_that_keeps_the_rate_up_is_not_blamed():
    model = mlp()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=5000, gamma=0.1)
    report = diagnose(model, optimizer=optimizer, step=SchedulerStep(scheduler), layers=LAYERS)
    f = report["overfit.batch"]
    assert f.status == "pass", f.message
    assert f.evidence["lr_first"] == f.evidence["lr_last"] == 1e-3


def test_an_ema_model_and_a_grad_scaler_in_the_steps_closure_are_copied_for_each_run():
    model = mlp()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    ema = torch.optim.swa_utils.AveragedModel(
        model, multi_avg_fn=torch.optim.swa_utils.get_ema_multi_avg_fn(0.99)
    )
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**4)
    ema_before = [p.detach().clone() for p in ema.parameters()]

    def step(model, batch, optimizer, loss_fn):
        x, y = batch
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        ema.update_parameters(model)
        return loss

    report = diagnose(model, optimizer=optimizer, step=step, layers=LAYERS)
    assert report.ok, report.summary()
    assert int(ema.n_averaged) == 0  # the caller's EMA never saw the doctor's copies
    assert all(torch.equal(a, b) for a, b in zip(ema_before, ema.parameters()))
    assert scaler.get_scale() == 2.0**4 and scaler._growth_tracker is None
