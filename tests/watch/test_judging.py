"""When samples are judged: in groups of `judge_every` observe() calls, at once when a number is
non-finite, and before anything reads the results; and grad_explode/grad_vanish sharing one
gradient history without changing a verdict."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import labcoat
from labcoat.watch import Sample, WatchContext
from labcoat.watch.invariants import GradExplode, GradVanish, Invariant, Violation
from labcoat.watch.judge import Judge

from .test_grad_screens import NAMES, norm_stream


class Counting(Invariant):
    """Counts the samples folded in; flags the loss named ``bad_at``."""

    kind = "counting"
    falsifies = "nothing"
    predicts = "nothing"
    needs = frozenset({"losses"})

    def __init__(self, bad_at: int | None = None):
        super().__init__()
        self.bad_at = bad_at
        self.steps: list[int] = []
        self.flagged: int | None = None

    def update(self, sample: Sample) -> None:
        self.steps.append(sample.step)
        if any(s == self.bad_at for s, _ in sample.losses):
            self.flagged = sample.step

    def compute(self) -> list[Violation]:
        if self.flagged is None:
            return []
        return [Violation(subject="loss", message=f"bad loss at {self.flagged}")]


def loop(steps: int, after=None, **options):
    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 4), torch.randint(0, 2, (16,))
    w = labcoat.watch(model, opt, every=1, ledger=False, **options).start()
    returned = {}
    for step in range(steps):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        returned[step] = w.observe(step=step, loss=loss)
        if after is not None:
            after(step)
    return w, returned


def test_samples_are_judged_in_groups_of_judge_every_calls():
    inv = Counting(bad_at=13)
    judged = {}
    w, returned = loop(
        25,
        after=lambda step: judged.update({step: len(inv.steps)}),
        invariants=[inv],
        judge_every=10,
    )
    # the first sample at once, then ten at a time: at the 11th and 21st calls
    assert judged[0] == 1 and judged[9] == 1 and judged[10] == 11 and judged[20] == 21
    assert inv.steps == list(range(21))  # in order, each once
    (alert,) = returned[20]  # the loss of step 13 is judged with the group that ends at 20
    assert alert.step == 13 and not any(returned[s] for s in returned if s != 20)
    assert len(w.alerts) == 1 and inv.steps == list(range(25))  # reading the alerts judges all
    w.close()


def test_judge_every_one_judges_each_sample_as_it_is_taken():
    inv = Counting(bad_at=13)
    w, returned = loop(20, invariants=[inv], judge_every=1)
    assert [a.step for a in returned[13]] == [13]
    w.close()


def test_a_non_finite_loss_is_judged_at_once():
    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 4), torch.randint(0, 2, (16,))
    with labcoat.watch(model, opt, every=1, ledger=False) as w:
        for step in range(15):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step == 12:
                loss = loss * math.inf
            new = w.observe(step=step, loss=loss)
            if step == 12:
                assert [(a.check, a.step) for a in new] == [("nonfinite", 12)]


@pytest.mark.parametrize("reader", ["state_dict", "findings", "events", "close"])
def test_every_reader_of_the_results_judges_what_waits(reader):
    inv = Counting(bad_at=3)
    w, _ = loop(5, invariants=[inv], judge_every=10)
    assert inv.steps == [0]
    getattr(w, reader)() if reader not in ("events", "findings") else getattr(w, reader)
    assert inv.steps == [0, 1, 2, 3, 4]
    w.close()


def test_sample_finite_looks_at_every_number_it_holds():
    assert Sample(step=0, time=0.0, losses=[(0, 1.0)], grad_norms={"a": 2.0}).finite()
    assert not Sample(step=0, time=0.0, losses=[(0, math.nan)]).finite()
    assert not Sample(step=0, time=0.0, grad_norms={"a": 1.0, "b": math.inf}).finite()
    assert not Sample(step=0, time=0.0, param_norms={"a": math.nan}).finite()
    assert not Sample(step=0, time=0.0, frozen_norms={"a": math.nan}).finite()


def judged(invariants, stream):
    """Each invariant's violations per sample, judged together by one Judge."""
    context = WatchContext(param_names=NAMES, frozen={}, group_params=(NAMES,), frozen_baseline={})
    judge = Judge(invariants)
    judge.start(context)
    out = {inv.kind: [] for inv in invariants}
    for step, grads in enumerate(stream):
        judge.judge(Sample(step=step, time=0.0, grad_norms=dict(grads)), True)
        for inv in judge.active:
            out[inv.kind].append([v.message for v in inv.compute()])
    return judge, out


@pytest.mark.parametrize("seed", [0, 1])
def test_grad_explode_and_vanish_share_one_history_and_keep_their_verdicts(seed):
    stream = norm_stream(seed)
    judge, together = judged([GradExplode(), GradVanish()], stream)
    explode, vanish = judge.active
    assert explode.history is vanish.history  # one window, pushed once per sample
    assert (
        explode.history.count
        == len(stream) - sum(1 for g in stream if g and not math.isfinite(sum(g.values()))) - 1
    )  # the last row waits for the next sample
    _, alone_explode = judged([GradExplode()], stream)
    _, alone_vanish = judged([GradVanish()], stream)
    assert together["grad_explode"] == alone_explode["grad_explode"]
    assert together["grad_vanish"] == alone_vanish["grad_vanish"]
    assert any(together["grad_explode"]) and any(together["grad_vanish"])  # both do alert


def test_windows_of_different_lengths_are_not_shared():
    judge, _ = judged([GradExplode(window=20), GradVanish(window=30)], norm_stream(0)[:50])
    explode, vanish = judge.active
    assert explode.history is not vanish.history
