"""Two healthy designs that look like the bugs some checks catch: conditional computation (a
router that sends the probe batch to some experts only) looks like an unused branch, and a
target network that the train step moves under no_grad looks like a frozen layer that moved."""

import functools

import torch

from tests.doctor.helpers import NoisyExperts, WithTarget, diagnose, target_step


def experts_report(model, **kw):
    return diagnose(model, optimizer=torch.optim.Adam(model.parameters(), lr=1e-3), **kw)


def test_experts_the_router_skipped_on_the_probe_batch_are_reached_by_other_batches():
    report = experts_report(NoisyExperts(), layers=("model", "update"))
    coverage, moved = report["model.grad.coverage"], report["update.params.moved"]
    # the probe batch leaves some of the 32 experts without an example, as this test needs
    assert coverage.evidence["only_on_some_batches"], "every expert got an example"
    assert coverage.status == "pass" and "conditional computation" in coverage.message
    assert moved.status == "pass" and moved.evidence["reached_by_other_batches"]
    # a ReLU an expert ran on two or three examples is not judged dead on them
    assert report["model.dead_units"].status == "pass"
    assert report["model.dead_units"].evidence["too_few_values"]


def test_an_expert_that_no_batch_reaches_still_fails():
    report = experts_report(NoisyExperts(unreachable=1), layers=("model",))
    coverage = report["model.grad.coverage"]
    assert coverage.status == "fail" and "experts.32.0.weight" in coverage.evidence["no_grad"]
    assert "experts.32.0.weight" not in coverage.evidence["only_on_some_batches"]


def test_a_mixture_of_experts_is_healthy_on_every_layer():
    report = experts_report(NoisyExperts())
    assert report.ok, report.failed_layer


def test_a_target_network_the_step_moves_is_not_a_frozen_layer_that_moved():
    model = WithTarget()
    opt = torch.optim.SGD(model.online.parameters(), lr=0.05, momentum=0.9)
    report = diagnose(model, optimizer=opt, step=target_step)
    frozen = report["update.frozen.moved"]
    assert frozen.status == "pass" and frozen.evidence["moved_by_your_step"]
    assert "not optimizer.step()" in frozen.message
    assert report.ok, report.failed_layer


def test_a_target_network_declared_frozen_is_held_to_it():
    model = WithTarget()
    opt = torch.optim.SGD(model.online.parameters(), lr=0.05, momentum=0.9)
    report = diagnose(model, optimizer=opt, step=target_step, expect_frozen=["target.*"])
    assert report["update.frozen.moved"].status == "fail"


def test_a_target_the_optimizer_also_moves_fails():
    # the whole model, target included, handed to SGD with weight decay, and a loop that zeroes
    # gradients rather than dropping them: the target keeps a zero gradient and the optimizer
    # decays it, besides the step's own update
    model = WithTarget()
    for p in model.target.parameters():
        p.grad = torch.zeros_like(p)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=0.01)
    step = functools.partial(target_step, set_to_none=False)
    report = diagnose(model, optimizer=opt, step=step, layers=("model", "update"))
    frozen = report["update.frozen.moved"]
    assert frozen.status == "fail" and "target.0.weight" in frozen.evidence["moved"]
