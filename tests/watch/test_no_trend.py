"""no_trend on real, noisy training loops: plain SGD on batches of 8 digits, across seeds.

Per-batch losses at batch size 8 are so noisy that a real decrease is often not significant
over one window of 100 steps; the rule therefore judges only once the latest window can also
be compared with the run's first one, and both tests must agree. Healthy loops of every seed
stay quiet; a loop that never learns, and one whose loss climbs, are flagged.
"""

from __future__ import annotations

import pytest
import torch

from tests.watch._training import train

SEEDS = range(8)


def sgd_loop(seed: int, lr: float, steps: int, maximize: bool = False):
    torch.manual_seed(seed)
    model = torch.nn.Linear(64, 10)
    opt = torch.optim.SGD(model.parameters(), lr=lr, maximize=maximize)
    return train(model, opt, steps=steps, batch=8, seed=seed, every=1, invariants=["no_trend"])


@pytest.mark.parametrize("lr", [0.05, 0.5])
def test_healthy_sgd_with_batches_of_8_raises_nothing_in_any_seed(lr):
    alerts = {seed: sgd_loop(seed, lr, steps=300).alerts for seed in SEEDS}
    assert alerts == {seed: [] for seed in SEEDS}


def test_a_loop_that_never_learns_is_flagged_once_both_tests_agree():
    for seed in (0, 1):
        (alert,) = sgd_loop(seed, lr=1e-7, steps=220).alerts
        assert 199 <= alert.step <= 209  # the first look with both windows apart
        assert (
            alert.evidence["pvalue_trend"] >= 0.01 and alert.evidence["pvalue_net_decrease"] >= 0.01
        )
        assert "not decreased significantly" in alert.message and "Mann–Whitney" in alert.message


def test_a_climbing_loss_is_flagged_and_the_message_agrees_with_its_numbers():
    for seed in (0, 1):  # gradient ascent: a sign error in a hand-written update
        (alert,) = sgd_loop(seed, lr=0.01, steps=220, maximize=True).alerts
        assert alert.step == 199 and alert.evidence["theil_sen_slope"] > 0
        assert alert.evidence["window_median"] > alert.evidence["first_window_median"]
