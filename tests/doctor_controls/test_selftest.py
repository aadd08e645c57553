"""The self-test: mutants of the user's setup must be caught, and a miss is labcoat's failure."""

from __future__ import annotations

import json

import torch
from torch import nn

from labcoat.doctor import selftest
from tests.doctor.helpers import DistillStep
from tests.doctor_controls import setups as s

CE = nn.CrossEntropyLoss()
GRADIENT_AND_UPDATE = ("model", "update")


def test_healthy_model_catches_both_mutants_and_leaves_the_callers_model_alone():
    model = s.mlp()
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    report = s.diagnose(model, s.digits(), CE, layers=GRADIENT_AND_UPDATE)
    result = report.extras["selftest"]
    assert result["ok"] is True and (result["caught"], result["mutants"]) == (2, 2)
    assert {r["mutant"] for r in result["results"]} == {"loss × 0", "output detached"}
    assert all(r["caught_by"] for r in result["results"])
    assert "self-test: the checks caught 2/2 mutants" in str(report)
    assert json.loads(json.dumps(report.to_dict()))["selftest"]["caught"] == 2
    assert all(torch.equal(before[n], p) for n, p in model.named_parameters())


def test_weight_decay_moves_a_zero_loss_model_so_only_the_gradient_check_catches_it():
    model = s.mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, weight_decay=1e-2)
    report = s.diagnose(model, s.digits(), CE, optimizer=optimizer, layers=GRADIENT_AND_UPDATE)
    by_mutant = {r["mutant"]: r for r in report.extras["selftest"]["results"]}
    assert by_mutant["loss × 0"]["caught_by"] == ["model.grad.coverage"]
    assert by_mutant["loss × 0"]["statuses"]["update.params.moved"] == "pass"
    assert report.extras["selftest"]["ok"] is True


def untouched(case):
    """A 'mutant' that changes nothing: no sound check can fail on it."""
    return selftest.fork(case)


def test_an_uncaught_mutant_is_reported_as_a_failure_of_labcoat(monkeypatch):
    monkeypatch.setattr(
        selftest, "MUTANTS", [*selftest.MUTANTS, selftest.Mutant("untouched", untouched)]
    )
    report = s.diagnose(s.mlp(), s.digits(), CE, layers=GRADIENT_AND_UPDATE)
    assert not report.ok
    assert report.failed_layer is None  # the user's setup is fine; labcoat is not
    assert report.selftest_failed
    assert "LABCOAT FAILURE" in str(report) and "self-test" in report.summary()
    data = report.to_dict()
    assert data["ok"] is False and data["selftest"]["ok"] is False
    assert (data["selftest"]["caught"], data["selftest"]["mutants"]) == (2, 3)


def test_self_test_says_when_it_cannot_run():
    report = s.diagnose(s.mlp(), s.digits(), CE, layers=("data",))
    assert report.extras["selftest"]["ok"] is None
    assert "self-test: not run" in str(report)
    assert report.ok


def test_checks_that_fail_on_the_real_setup_are_not_proven_on_mutants():
    class Detached(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = s.mlp()

        def forward(self, x):
            return self.body(x).detach() + 0 * x.sum(dim=1, keepdim=True)

    report = s.diagnose(Detached(), s.digits(), CE, layers=GRADIENT_AND_UPDATE, run_all=True)
    assert report["model.grad.coverage"].status == "fail"
    result = report.extras["selftest"]
    assert result["ok"] is None and "did not pass on the setup itself" in result["reason"]


def distillation_report():
    from tests.doctor_controls.test_shuffle import trained_teacher

    step = DistillStep(trained_teacher())
    return s.diagnose(s.mlp(hidden=16), s.digits(), CE, step=step, layers=GRADIENT_AND_UPDATE)


def test_loss_times_zero_is_spared_where_the_steps_own_loss_trains_every_parameter():
    report = distillation_report()
    result = report.extras["selftest"]
    assert result["ok"] is True and (result["caught"], result["mutants"]) == (1, 1)
    spared = {r["mutant"]: r["spared"] for r in result["results"]}
    assert "distillation" in spared["loss × 0"] and not spared["output detached"]
    assert "loss × 0 not run" in str(report)


def test_loss_times_zero_still_runs_where_the_steps_own_term_reaches_some_parameters():
    def penalised_head(model, batch, optimizer, loss_fn):
        x, y = batch
        optimizer.zero_grad()
        loss = loss_fn(model(x), y) + 1e-3 * model[-1].weight.pow(2).sum()
        loss.backward()
        optimizer.step()
        return loss

    report = s.diagnose(s.mlp(), s.digits(), CE, step=penalised_head, layers=GRADIENT_AND_UPDATE)
    by_mutant = {r["mutant"]: r for r in report.extras["selftest"]["results"]}
    assert not by_mutant["loss × 0"]["spared"] and by_mutant["loss × 0"]["caught"]
    assert report.extras["selftest"]["ok"] is True


def test_a_missed_mutant_is_still_a_failure_beside_a_spared_one(monkeypatch):
    monkeypatch.setattr(
        selftest, "MUTANTS", [*selftest.MUTANTS, selftest.Mutant("untouched", untouched)]
    )
    report = distillation_report()
    assert report.selftest_failed and "LABCOAT FAILURE" in str(report)
    assert (report.extras["selftest"]["caught"], report.extras["selftest"]["mutants"]) == (1, 2)
