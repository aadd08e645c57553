"""Train steps that accumulate gradients over calls, and heads trained only by the step's own
loss: healthy setups the doctor must pass, each beside the bug its checks must still catch."""

import pytest

from tests.doctor.helpers import (
    Accumulate,
    AuxiliaryHead,
    auxiliary_loss_step,
    diagnose,
    mlp,
    standard_step,
)

UPDATE = ("data", "model", "update")


@pytest.mark.check("doctor.update.accumulation", healthy=True)
def test_a_step_that_updates_every_fourth_call_passes_and_its_state_stays_the_callers():
    step = Accumulate(k=4)
    report = diagnose(mlp(), step=step, layers=UPDATE)
    runs = report["update.step.runs"]
    assert runs.status == "pass", runs.message
    assert runs.evidence["calls_per_update"] == 4
    assert "once every 4 calls" in runs.message
    assert report["update.params.moved"].status == "pass"
    assert report["update.accumulation"].status == "pass", report["update.accumulation"].message
    assert step.calls == 0  # each run used a copy of the step; the caller's counter never moved


@pytest.mark.check("doctor.update.accumulation", planted=True)
def test_zero_grad_before_each_accumulated_backward_fails_update_accumulation():
    report = diagnose(mlp(), step=Accumulate(k=4, zero_grad_first=True), layers=UPDATE)
    f = report["update.accumulation"]
    assert f.status == "fail", f.message
    assert "only the last call" in f.message
    assert f.evidence["calls_per_update"] == 4


def test_accumulation_is_not_judged_for_a_step_that_updates_every_call():
    report = diagnose(mlp(), layers=UPDATE)
    assert report["update.accumulation"].status == "skip"


def test_a_step_that_never_updates_fails_after_trying_as_an_accumulating_step_would():
    report = diagnose(mlp(), step=Accumulate(k=1000), layers=UPDATE)
    f = report["update.step.runs"]
    assert f.status == "fail"
    assert "in 32 calls" in f.message


class CountedAccumulate(Accumulate):
    """Accumulate that counts every call of every copy (a class attribute survives the
    doctor's per-run copies)."""

    calls_made = 0

    def __call__(self, model, batch, optimizer, loss_fn):
        CountedAccumulate.calls_made += 1
        return super().__call__(model, batch, optimizer, loss_fn)


def test_the_overfit_control_counts_updates_not_calls():
    CountedAccumulate.calls_made = 0
    diagnose(mlp(), step=CountedAccumulate(k=4), layers=UPDATE)
    before_overfit = CountedAccumulate.calls_made
    CountedAccumulate.calls_made = 0
    report = diagnose(mlp(), step=CountedAccumulate(k=4), layers=UPDATE + ("overfit",))
    f = report["overfit.batch"]
    assert f.status == "pass", f.message
    # each point of the overfit curve is one update, made of 4 calls
    assert CountedAccumulate.calls_made - before_overfit == 4 * f.evidence["steps"]


def test_a_head_trained_by_the_steps_auxiliary_loss_counts_as_reached():
    report = diagnose(AuxiliaryHead(), step=auxiliary_loss_step, layers=UPDATE)
    f = report["model.grad.coverage"]
    assert f.status == "pass", f.message
    assert sorted(f.evidence["only_through_step"]) == ["aux.bias", "aux.weight"]


def test_a_head_no_loss_reaches_still_fails_coverage_with_a_step_given():
    report = diagnose(AuxiliaryHead(), step=standard_step, layers=UPDATE)
    f = report["model.grad.coverage"]
    assert f.status == "fail"
    assert "aux.weight" in f.message
