"""eval_mode: optimizer steps in eval mode after an evaluation never switched the model back."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import labcoat
from labcoat.modes import mode_dependent
from labcoat.watch import Sample, WatchContext
from labcoat.watch.invariants import EvalMode
from tests.watch._training import digits

CONTEXT = WatchContext(
    param_names=("w",),
    frozen={},
    group_params=(("w",),),
    frozen_baseline={},
    mode_dependent=("drop",),
)


def folded(*modes_per_sample: tuple[bool, ...], window: int = 5) -> EvalMode:
    inv = EvalMode(window=window)
    inv.setup(CONTEXT)
    for i, modes in enumerate(modes_per_sample):
        inv.update(Sample(step=i, time=0.0, train_modes=modes))
    return inv


def test_eval_steps_after_train_steps_are_a_violation_naming_the_modules():
    (found,) = folded((True,) * 3, (False,) * 5).compute()
    assert found.evidence["eval_steps_in_a_row"] == 5 and found.evidence["train_steps_before"] == 3
    assert "drop" in found.message and "model.train()" in found.message


def test_fewer_eval_steps_than_the_window_or_a_return_to_train_mode_are_fine():
    assert folded((True,) * 3, (False,) * 4).compute() == []
    assert folded((True,) * 3, (False,) * 5, (True,)).compute() == []


def test_a_run_in_eval_mode_from_its_first_step_is_left_alone():
    assert folded((False,) * 50).compute() == []


def test_a_model_whose_modes_compute_the_same_is_skipped():
    inv = EvalMode()
    plain = WatchContext(param_names=(), frozen={}, group_params=(), frozen_baseline={})
    assert "compute the same" in inv.applies(plain)
    assert inv.applies(CONTEXT) is None


def test_mode_dependent_lists_only_modules_that_change_with_the_mode():
    model = nn.Sequential(
        nn.Dropout(0.0),
        nn.BatchNorm1d(4, track_running_stats=False),
        nn.LSTM(4, 4, num_layers=2, dropout=0.2),
        nn.Dropout(0.3),
        nn.BatchNorm1d(4),
        nn.LSTM(4, 4),
    )
    assert mode_dependent(model) == ("2 (LSTM)", "3 (Dropout)", "4 (BatchNorm1d)")


def net(dropout: bool = True, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    middle = [nn.BatchNorm1d(32), nn.Dropout(0.2)] if dropout else []
    return nn.Sequential(nn.Linear(64, 32), *middle, nn.ReLU(), nn.Linear(32, 10))


def train(
    model: nn.Module, *, restore: bool, steps: int = 60, validate_at: int = 10, freeze_bn=False
):
    """A loop that calls model.train() once before it starts and validates at ``validate_at``;
    ``restore``: the validation switches the model back to train mode."""
    x, y = digits()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    model.train()
    if freeze_bn:
        for m in model.modules():
            if isinstance(m, nn.BatchNorm1d):
                m.eval()
    with labcoat.watch(model, optimizer, ledger=False) as w:
        for i in range(steps):
            rows = slice((i * 32) % 1600, (i * 32) % 1600 + 32)
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x[rows]), y[rows])
            loss.backward()
            optimizer.step()
            w.observe(step=i, loss=loss)
            if i == validate_at:
                model.eval()
                with torch.no_grad():
                    model(x[1600:])
                if restore:
                    model.train()
    return w


@pytest.mark.check("watch.eval_mode", planted=True)
def test_validation_that_leaves_the_model_in_eval_mode_alerts():
    w = train(net(), restore=False)
    kinds = [a.check for a in w.alerts]
    assert kinds == ["eval_mode"], kinds
    assert w.alerts[0].value == 20  # the window's worth of eval-mode steps


def test_validation_that_restores_train_mode_is_clean():
    assert train(net(), restore=True).alerts == []


def test_batch_norm_frozen_on_purpose_while_the_model_trains_is_clean():
    assert train(net(), restore=True, freeze_bn=True).alerts == []


def test_a_model_without_dropout_or_batch_norm_is_not_judged():
    w = train(net(dropout=False), restore=False)
    assert w.alerts == []
    assert [f.status for f in w.findings if f.check == "eval_mode"] == ["skip"]
