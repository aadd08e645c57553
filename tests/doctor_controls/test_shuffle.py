"""The shuffle layer: planted bugs that score above chance without real labels, and healthy
twins."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from labcoat.doctor.checks import shuffle
from labcoat.doctor.checks.shuffle import PERMUTATIONS
from tests.doctor.helpers import DistillStep
from tests.doctor_controls import setups as s

CE = nn.CrossEntropyLoss()


def self_comparing_metric(output: torch.Tensor, target: torch.Tensor) -> float:
    """The planted bug: compares the target with itself, so it always says 1.0."""
    return float((target == target).float().mean())


def accuracy(output: torch.Tensor, target: torch.Tensor) -> float:
    return float((output.argmax(dim=1) == target).float().mean())


@pytest.mark.check("doctor.shuffle.labels", planted=True)
def test_metric_that_compares_the_target_with_itself_fails_shuffle():
    broken = s.diagnose(s.mlp(), s.digits(), CE, metric=self_comparing_metric)
    assert broken.failed_layer == "shuffle"
    finding = broken["shuffle.labels"]
    assert finding.status == "fail"
    assert "does not compare predictions with targets" in finding.message
    assert finding.evidence["shuffled_mean"] == 1.0

    healthy = s.diagnose(s.mlp(), s.digits(), CE, metric=accuracy)
    assert healthy.ok, healthy.summary()
    assert healthy["shuffle.labels"].evidence["shuffled_mean"] < 0.2


def label_lookup_step():
    """A train step that ignores the labels it is handed and fetches the true ones by input."""
    X, y = s.digits()
    truth = {row.numpy().tobytes(): int(label) for row, label in zip(X, y)}

    def step(model, batch, optimizer, loss_fn):
        x, _ = batch
        labels = torch.tensor([truth[row.numpy().tobytes()] for row in x])
        optimizer.zero_grad()
        loss = loss_fn(model(x), labels)
        loss.backward()
        optimizer.step()
        return loss

    return step


def test_labels_reaching_the_model_another_way_fail_shuffle():
    broken = s.diagnose(s.mlp(), s.digits(), CE, step=label_lookup_step())
    assert broken.failed_layer == "shuffle"
    finding = broken["shuffle.labels"]
    assert finding.status == "fail" and "another path" in finding.message
    assert finding.evidence["pvalue_above_chance"] < 1e-3
    assert finding.evidence["share_of_real_gain"] > 0.5


@pytest.mark.check("doctor.shuffle.random_tokens", healthy=True)
def test_causal_language_model_without_its_mask_is_caught_twice(monkeypatch):
    """model.causality catches the missing mask first; the random-token control catches it again."""
    monkeypatch.setitem(shuffle.PERMUTATIONS, "fast", 3)  # the p-value is not under test here
    X, Y = s.markov_sequences()
    broken = s.diagnose(
        s.transformer(causal=False), (X, Y), s.next_token_loss, lr=1e-2, run_all=True
    )
    assert broken.failed_layer == "model"
    assert broken["model.causality"].status == "fail"
    finding = broken["shuffle.random_tokens"]
    assert finding.status == "fail" and "see the tokens they predict" in finding.message
    assert finding.evidence["loss"] < finding.evidence["chance_loss"]

    healthy = s.diagnose(s.transformer(), (X, Y), s.next_token_loss, lr=1e-2, layers=("shuffle",))
    assert healthy["shuffle.random_tokens"].status == "pass", healthy[
        "shuffle.random_tokens"
    ].message


@pytest.mark.check("doctor.shuffle.pvalue", planted=True)
def test_pvalue_is_scikit_learns_definition_and_warns_without_signal(monkeypatch):
    monkeypatch.setattr(shuffle, "INTERIM_LOOKS", ())  # every copy runs
    report = s.diagnose(s.mlp(), s.digits(), CE, layers=("shuffle",))
    finding = report["shuffle.pvalue"]
    n, as_high = finding.evidence["permutations"], finding.evidence["shuffled_as_high"]
    assert n == PERMUTATIONS["fast"] and finding.evidence["test"] == "permutation"
    assert finding.evidence["pvalue"] == (as_high + 1) / (n + 1)
    assert finding.status == "pass"

    X, y = s.digits()
    noise = y[torch.randperm(len(y), generator=torch.Generator().manual_seed(1))]
    unlearnable = s.diagnose(s.mlp(), (X, noise), CE, layers=("shuffle",))
    assert unlearnable["shuffle.pvalue"].status == "warn"
    assert unlearnable["shuffle.pvalue"].evidence["pvalue"] > 0.05
    assert unlearnable["shuffle.labels"].status == "pass"  # shuffling noise is still noise


def test_too_few_held_out_examples_skip_the_controls():
    X, y = s.digits()
    report = s.diagnose(
        s.mlp(), (X[:200], y[:200]), CE, val_data=(X[200:210], y[200:210]), layers=("shuffle",)
    )
    assert report["shuffle.labels"].status == "skip"
    assert report["shuffle.pvalue"].status == "skip"


def shifting_loss(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Hugging Face's convention: the labels are the inputs, and the loss shifts them by one."""
    return nn.functional.cross_entropy(out[:, :-1].reshape(-1, out.shape[-1]), y[:, 1:].reshape(-1))


@pytest.mark.check("doctor.shuffle.random_tokens", planted=True)
def test_labels_that_are_the_inputs_pass_when_the_loss_shifts_them_and_fail_when_nothing_does(
    monkeypatch,
):
    monkeypatch.setitem(shuffle.PERMUTATIONS, "fast", 3)  # the p-value is not under test here
    X, _ = s.markov_sequences()
    healthy = s.diagnose(
        s.gru(), (X, X.clone()), shifting_loss, lr=1e-2, layers=("overfit", "shuffle")
    )
    assert healthy["overfit.batch"].status == "pass", healthy["overfit.batch"].message
    assert healthy["shuffle.random_tokens"].status == "pass", healthy[
        "shuffle.random_tokens"
    ].message

    unshifted = s.diagnose(s.gru(), (X, X.clone()), s.next_token_loss, lr=1e-2, layers=("shuffle",))
    finding = unshifted["shuffle.random_tokens"]
    assert finding.status == "fail" and "shift them by one" in finding.message


def test_a_perfect_prediction_is_the_losses_lowest_point_not_the_targets_themselves(monkeypatch):
    monkeypatch.setitem(shuffle.PERMUTATIONS, "fast", 5)  # the p-value is not under test here
    X, y = s.digits()

    def sigmoid_per_class(out, target):  # one-vs-rest on one-hot rows, in the user's own function
        return nn.functional.binary_cross_entropy_with_logits(out, target)

    report = s.diagnose(
        s.mlp(), (X, nn.functional.one_hot(y, 10).float()), sigmoid_per_class, layers=("shuffle",)
    )
    finding = report["shuffle.labels"]
    assert finding.status == "pass", finding.message
    assert (
        finding.evidence["perfect_score"] > -1e-3
    )  # its floor is ~0; output = target scores -0.65


def test_copies_keep_what_their_untrained_start_already_scores_on_simple_labels():
    """Three yes/no labels that a random initialisation lines up with by luck."""
    report = s.diagnose(
        s.mlp(classes=3), s.multilabel_digits(), nn.BCEWithLogitsLoss(), layers=("shuffle",)
    )
    finding = report["shuffle.labels"]
    assert finding.status == "pass", finding.message
    assert finding.evidence["untrained_above_chance"] > 0.03


def fitted_mlp() -> nn.Module:
    """An MLP already trained on the digits: fine-tuning starts from a model far above chance."""
    model, (X, y) = s.mlp(), s.digits()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(5):
        for i in range(0, len(y), 64):
            optimizer.zero_grad()
            CE(model(X[i : i + 64]), y[i : i + 64]).backward()
            optimizer.step()
    return model


def test_a_trained_start_is_not_a_leak_but_a_metric_that_cannot_fail_still_is(monkeypatch):
    monkeypatch.setitem(
        shuffle.PERMUTATIONS, "fast", 5
    )  # the real setup's p-value is not under test here
    start = fitted_mlp()
    fine_tuning = s.diagnose(start, s.digits(), CE, layers=("shuffle",))
    finding = fine_tuning["shuffle.labels"]
    assert finding.status == "skip" and "trained start" in finding.message, finding.message
    assert finding.evidence["untrained_score"] > 0.8 and finding.evidence["shuffled_mean"] > 0.8
    # far beyond every re-initialised copy of the same model: a trained start, not luck
    assert max(finding.evidence["reinitialised_above_chance"]) < 0.3

    broken = s.diagnose(start, s.digits(), CE, metric=self_comparing_metric, layers=("shuffle",))
    assert broken["shuffle.labels"].status == "fail"


@pytest.mark.check("doctor.shuffle.labels", "doctor.shuffle.pvalue", healthy=True)
def test_a_clear_healthy_verdict_stops_the_copies_early():
    report = s.diagnose(s.mlp(), s.digits(), CE, layers=("shuffle",))
    finding = report["shuffle.pvalue"]
    k = finding.evidence["permutations"]
    assert k < PERMUTATIONS["fast"] and finding.evidence["test"] == "normal prediction"
    assert finding.status == "pass" and finding.evidence["pvalue"] < shuffle.INTERIM_ALPHA
    assert f"settled after {k} of {PERMUTATIONS['fast']}" in finding.message
    assert report["shuffle.labels"].status == "pass"
    assert len(report["shuffle.labels"].evidence["shuffled_scores"]) == k


def test_a_leak_is_still_caught_when_the_copies_stop_early():
    broken = s.diagnose(s.mlp(), s.digits(), CE, step=label_lookup_step(), layers=("shuffle",))
    finding = broken["shuffle.labels"]
    assert finding.status == "fail" and "another path" in finding.message
    assert broken["shuffle.pvalue"].evidence["test"] == "permutation"


def runs(real, null, chance=None, blind=0.1, perfect=1.0, planned=19):
    null = np.asarray(null, dtype=float)
    chance = np.full(len(null), 0.1) if chance is None else np.asarray(chance, dtype=float)
    return shuffle.ShuffleRuns(
        "accuracy",
        real,
        null,
        chance,
        perfect,
        blind,
        "majority",
        100,
        32,
        300,
        0,
        0.1,
        0.0,
        planned=planned,
    )


AT_CHANCE = [0.10, 0.12, 0.09, 0.11, 0.10, 0.13, 0.08, 0.11]


def test_settled_only_when_both_verdicts_are_beyond_doubt():
    # far above copies that sit at chance: both verdicts settled
    assert runs(0.9, AT_CHANCE).settled
    # a real score three of the copies' standard deviations up: a close call, not settled
    close = float(np.mean(AT_CHANCE) + 3 * np.std(AT_CHANCE, ddof=1))
    assert not runs(close, AT_CHANCE).settled
    # a copy reaches the real score: the permutation p-value cannot pass any more, and copies
    # clearly below the majority rate settle shuffle.labels ...
    assert runs(0.12, AT_CHANCE, blind=0.2).settled
    # ... but with the majority rate in reach, a real score at chance leaves no margin to judge
    # the copies' excess against, and every copy runs
    assert not runs(0.12, AT_CHANCE).settled
    # copies above chance by about the material share: the leak verdict is still open
    gain = 0.9 - 0.1
    edge = [0.1 + shuffle.MATERIAL * gain + d for d in (-0.03, 0.02, 0.0, 0.03, -0.02, 0.01)]
    assert not runs(0.9, edge).settled
    # copies far above chance on every draw: a settled leak
    assert runs(0.9, [0.7, 0.72, 0.69, 0.71, 0.7, 0.73]).settled
    # too few copies, a non-finite score, or copies at a perfect score: never early
    assert not runs(0.9, AT_CHANCE[:2]).settled
    assert not runs(0.9, [*AT_CHANCE[:5], float("nan")]).settled
    assert not runs(0.9, [1.0] * 6).settled


def trained_teacher() -> nn.Module:
    """A wider MLP fitted on all the digits, held-out rows included, as teachers often are."""
    x, y = s.digits()
    teacher = s.mlp(hidden=96)
    opt = torch.optim.Adam(teacher.parameters(), lr=3e-3)
    for _ in range(80):
        opt.zero_grad()
        CE(teacher(x), y).backward()
        opt.step()
    return teacher.eval().requires_grad_(False)


class LookupWithEMA:
    """Planted bug beside a held module: an EMA copy of the model it never reads, and the true
    labels fetched by input."""

    def __init__(self):
        self.ema = s.mlp()
        self.step = label_lookup_step()

    def __call__(self, model, batch, optimizer, loss_fn):
        return self.step(model, batch, optimizer, loss_fn)


def test_distilling_from_a_teacher_warns_and_a_leak_beside_a_held_module_still_fails():
    teacher = trained_teacher()
    before = [p.clone() for p in teacher.parameters()]
    healthy = s.diagnose(s.mlp(hidden=16), s.digits(), CE, step=DistillStep(teacher))
    assert healthy.ok, healthy.summary()
    finding = healthy["shuffle.labels"]
    assert finding.status == "warn" and finding.evidence["held_modules"] == ["teacher"]
    assert finding.evidence["shuffled_mean"] > 0.3  # the teacher carries what it learned
    assert np.mean(finding.evidence["without_held_scores"]) < 0.2
    assert all(torch.equal(a, b) for a, b in zip(before, teacher.parameters()))

    broken = s.diagnose(s.mlp(), s.digits(), CE, step=LookupWithEMA())
    assert broken.failed_layer == "shuffle"
    assert broken["shuffle.labels"].status == "fail", broken["shuffle.labels"].message


def _memorising(labels: torch.Tensor, X: torch.Tensor):
    """A two-class MLP big and fast enough to fit 190 training rows in the shuffle budget."""
    return s.diagnose(s.mlp(classes=2, hidden=128), (X, labels), CE, lr=1e-2, layers=("shuffle",))


@pytest.mark.slow
@pytest.mark.parametrize("seed", [2, 3])
def test_labels_it_fits_but_nothing_of_which_carries_over_fail_the_pvalue(seed):
    """Issue 24, item 1: labels unrelated to their inputs (scrambled, misaligned) that the real
    copy still learns by heart: the real score is at the shuffled copies' level and at chance,
    which is the negative control failing, not a warning. Twin: the true labels pass."""
    X, y = s.digits(240)
    y = y % 2
    noise = y[torch.randperm(len(y), generator=torch.Generator().manual_seed(seed))]
    finding = _memorising(noise, X)["shuffle.pvalue"]
    assert finding.status == "fail", finding.message
    assert "nothing of them carries over" in finding.message
    assert finding.evidence["real_train_score"] > 0.75
    assert finding.evidence["real_above_chance_pvalue"] > shuffle.NO_CARRY_OVER

    healthy = _memorising(y, X)
    assert healthy["shuffle.pvalue"].status == "pass", healthy["shuffle.pvalue"].message
    assert healthy.ok, healthy.summary()


def _lucky_start() -> nn.Module:
    """A freshly initialised MLP that, by the luck of seed 42, scores 0.69 on a linear
    two-class task before any training (chance 0.5)."""
    torch.manual_seed(42)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))


@pytest.mark.slow
def test_a_lucky_fresh_initialisation_is_no_trained_start():
    """Issue 24, item 10: a start is trained only beyond what re-initialised copies of the model
    score; the fine-tuning twin above (fitted_mlp) is still one."""
    g = torch.Generator().manual_seed(0)
    X = torch.randn(400, 8, generator=g)
    y = (X[:, 0] + X[:, 1] > 0).long()
    report = s.diagnose(_lucky_start(), (X, y), CE, layers=("shuffle",))
    finding = report["shuffle.labels"]
    assert finding.evidence["untrained_above_chance"] >= 0.15  # "trained" by the old rule
    assert finding.status == "pass", finding.message
    fresh = finding.evidence["reinitialised_above_chance"]
    assert len(fresh) == shuffle.REINIT_DRAWS and max(fresh) > 0.1
