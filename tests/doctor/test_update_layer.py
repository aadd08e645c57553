"""Update layer: each check catches its planted bug and passes the healthy twin."""

import pytest
import torch
from torch import nn

from tests.doctor.helpers import (
    diagnose,
    digits,
    lbfgs_step,
    mlp,
    no_zero_grad_step,
    status,
)
from tests.doctor.test_model_layer import BatchNormDropout, ZeroHead


def update_report(model, optimizer=None, **kw):
    return diagnose(model, optimizer=optimizer, layers=("update",), **kw)


def test_healthy_setups_pass_every_update_check():
    for model in (mlp(), ZeroHead(), BatchNormDropout()):
        report = update_report(model)
        bad = [f for f in report.findings if f.status in ("fail", "warn")]
        assert not bad, "\n".join(f"{f.check}: {f.message}" for f in bad)


@pytest.mark.check("doctor.update.params.moved", healthy=True)
def test_zero_initialised_head_moves_upstream_only_after_first_step():
    model = ZeroHead()
    f = update_report(model, torch.optim.SGD(model.parameters(), lr=0.1))["update.params.moved"]
    assert f.status == "pass" and "body.0.weight" in f.evidence["moved_only_after_first_step"]


@pytest.mark.check("doctor.update.optimizer.coverage", planted=True)
def test_parameter_missing_from_optimizer_fails():
    model = mlp()
    opt = torch.optim.Adam(model[0].parameters(), lr=1e-3)
    f = update_report(model, opt)["update.optimizer.coverage"]
    assert f.status == "fail" and f.evidence["missing"] == ["2.weight", "2.bias"]


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.backbone = nn.Sequential(nn.Linear(64, 32), nn.ReLU())
        self.head = nn.Linear(32, 10)
        for p in self.backbone.parameters():
            p.requires_grad_(False)

    def forward(self, x):
        return self.head(self.backbone(x))


@pytest.mark.check(
    "doctor.update.finite",
    "doctor.update.frozen.moved",
    "doctor.update.lr",
    "doctor.update.optimizer.coverage",
    "doctor.update.optimizer.foreign",
    healthy=True,
)
def test_declared_frozen_backbone_passes_every_layer():
    model = Backbone()
    opt = torch.optim.Adam(model.head.parameters(), lr=1e-3)
    report = diagnose(model, optimizer=opt, expect_frozen=["backbone.*"])
    bad = [
        f
        for f in report.findings
        if f.status in ("fail", "warn") and f.check != "data.features.constant"
    ]
    assert not bad, "\n".join(f"{f.check}: {f.message}" for f in bad)
    assert report["update.frozen.moved"].status == "pass"


@pytest.mark.check("doctor.update.frozen.moved", planted=True)
def test_declared_frozen_but_trained_fails():
    model = mlp()
    f = update_report(model, expect_frozen=["0.*"])["update.frozen.moved"]
    assert f.status == "fail" and "0.weight" in f.evidence["moved"]


@pytest.mark.check("doctor.update.optimizer.foreign", planted=True)
def test_optimizer_on_another_instance_fails():
    model = mlp()
    opt = torch.optim.Adam(mlp().parameters(), lr=1e-3)
    report = update_report(model, opt)
    assert report["update.optimizer.foreign"].status == "fail"
    assert report["update.params.moved"].status in ("fail", "skip")


@pytest.mark.check("doctor.update.lr", planted=True)
def test_zero_learning_rate_fails():
    model = mlp()
    report = update_report(model, torch.optim.SGD(model.parameters(), lr=0.0))
    assert report["update.lr"].status == "fail"
    assert report["update.params.moved"].status == "fail"


@pytest.mark.check("doctor.update.step.runs", planted=True)
def test_step_without_optimizer_step_fails():
    def step(model, batch, optimizer, loss_fn):
        x, y = batch
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        return loss  # forgot optimizer.step()

    report = update_report(mlp(), step=step)
    assert report["update.step.runs"].status == "fail"
    assert report["update.params.moved"].status == "skip"


@pytest.mark.check("doctor.update.params.moved", planted=True)
def test_step_that_drops_a_gradient_leaves_parameter_unmoved():
    def step(model, batch, optimizer, loss_fn):
        x, y = batch
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        model[2].bias.grad = None  # e.g. a clipping helper that rebuilds grads for weights only
        optimizer.step()
        return loss

    f = update_report(mlp(), step=step)["update.params.moved"]
    assert f.status == "fail" and f.evidence["did_not_move"] == ["2.bias"]
    assert f.message.endswith("they had no gradient when optimizer.step() ran")


def test_gradients_cleared_between_backward_and_step_are_named():
    def step(model, batch, optimizer, loss_fn):
        x, y = batch
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.zero_grad()  # in the wrong place: step() finds nothing to apply
        optimizer.step()
        return loss

    f = update_report(mlp(), step=step)["update.params.moved"]
    assert f.status == "fail" and "zero_grad() called between backward() and step()" in f.message
    assert set(f.evidence["no_gradient_at_step"]) == set(f.evidence["did_not_move"])

    def sgd_without_set_to_none(model, batch, optimizer, loss_fn):  # zeros, not None
        x, y = batch
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.zero_grad(set_to_none=False)
        optimizer.step()
        return loss

    model = mlp()
    f = update_report(
        model, torch.optim.SGD(model.parameters(), lr=0.1), step=sgd_without_set_to_none
    )["update.params.moved"]
    assert f.status == "fail" and "zero_grad() called between backward() and step()" in f.message


@pytest.mark.check("doctor.update.finite", planted=True)
def test_exploding_step_goes_nonfinite():
    model = mlp()
    f = update_report(model, torch.optim.SGD(model.parameters(), lr=1e38))["update.finite"]
    assert f.status == "fail"


def test_huge_learning_rate_warns_on_ratio():
    model = mlp()
    assert (
        status(update_report(model, torch.optim.SGD(model.parameters(), lr=50.0)), "update.ratio")
        == "warn"
    )
    model = mlp()
    assert (
        status(update_report(model, torch.optim.SGD(model.parameters(), lr=0.05)), "update.ratio")
        == "pass"
    )


@pytest.mark.check("doctor.update.ratio", healthy=True, cases=["sgd-0.05"])
@pytest.mark.check("doctor.update.ratio", planted=True, cases=["sgd-5"])
@pytest.mark.parametrize(
    "make, expected, sign",
    [
        # Adam-type first steps move every weight by the learning rate: judged as sign steps
        (lambda p: torch.optim.Adam(p, lr=1e-2), "pass", True),
        (lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.1), "pass", True),
        (lambda p: torch.optim.Adagrad(p), "pass", True),  # at its default rate
        (lambda p: torch.optim.Adam(p, lr=0.1), "warn", True),
        (lambda p: torch.optim.RMSprop(p), "warn", True),  # its first step is ten times its rate
        # plain SGD's step follows the gradient: the usual bar
        (lambda p: torch.optim.SGD(p, lr=5.0), "warn", False),
        (lambda p: torch.optim.SGD(p, lr=0.05), "pass", False),
    ],
    ids=["adam-1e-2", "adamw-wd", "adagrad", "adam-0.1", "rmsprop", "sgd-5", "sgd-0.05"],
)
def test_a_first_sign_step_is_judged_as_the_bound_it_is(make, expected, sign):
    model = mlp()
    f = update_report(model, make(model.parameters()))["update.ratio"]
    assert f.status == expected and f.evidence["sign_step"] == sign, f.message


def test_ratio_behind_a_zero_initialised_head_is_measured_on_the_step_that_moves_weights():
    healthy = update_report(ZeroHead())["update.ratio"]
    assert healthy.status == "pass" and healthy.evidence["step"] == 2, healthy.message
    model = ZeroHead()
    too_large = update_report(model, torch.optim.SGD(model.parameters(), lr=50.0))["update.ratio"]
    assert too_large.status == "warn", too_large.message


@pytest.mark.check("doctor.update.grad.zeroed", planted=True)
def test_missing_zero_grad_fails():
    assert status(update_report(mlp(), step=no_zero_grad_step), "update.grad.zeroed") == "fail"


@pytest.mark.check("doctor.update.grad.zeroed", healthy=True)
def test_gradient_accumulation_within_one_step_passes():
    def accumulate(model, batch, optimizer, loss_fn, micro=4):
        x, y = batch
        optimizer.zero_grad()
        total = 0.0
        for xs, ys in zip(x.chunk(micro), y.chunk(micro)):
            loss = loss_fn(model(xs), ys) / micro
            loss.backward()
            total += loss.detach()
        optimizer.step()
        return total

    report = update_report(mlp(), step=accumulate)
    bad = [f for f in report.findings if f.status in ("fail", "warn")]
    assert not bad, bad


@pytest.mark.check("doctor.update.step.isolated", planted=True)
def test_step_using_a_global_optimizer_is_caught_and_caller_restored():
    model = mlp()
    user_opt = torch.optim.SGD(model.parameters(), lr=0.1)
    before = {k: v.clone() for k, v in model.state_dict().items()}

    def step(m, batch, optimizer, loss_fn):  # uses the global model/optimizer, not its arguments
        x, y = batch
        user_opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        user_opt.step()
        return loss

    report = update_report(model, user_opt, step=step)
    assert report["update.step.isolated"].status == "fail"
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert all(p.grad is None for p in model.parameters())


@pytest.mark.check("doctor.update.step.runs", healthy=True)
def test_a_step_that_steps_every_second_call_passes_and_is_described_as_such():
    calls = []

    def every_second_call(model, batch, optimizer, loss_fn):
        x, y = batch
        loss = loss_fn(model(x), y)
        (loss / 2).backward()
        calls.append(1)
        if len(calls) % 2 == 0:
            optimizer.step()
            optimizer.zero_grad()
        return loss

    report = update_report(mlp(), step=every_second_call)
    assert not [f for f in report.findings if f.failed], str(report)
    assert "once every 2 calls" in report["update.step.runs"].message
    assert report["update.step.runs"].evidence["calls_per_update"] == 2
    assert report["update.params.moved"].status == "pass"


def test_lbfgs_copies_run_its_closure_step_and_an_lbfgs_on_another_model_still_fails():
    model = mlp()
    report = update_report(
        model, torch.optim.LBFGS(model.parameters(), max_iter=4), step=lbfgs_step
    )
    bad = [f for f in report.findings if f.status in ("fail", "warn")]
    assert not bad, "\n".join(f"{f.check}: {f.message}" for f in bad)
    assert report["update.ratio"].status == "skip" and "LBFGS" in report["update.ratio"].message
    model = mlp()
    foreign = torch.optim.LBFGS(mlp(seed=1).parameters(), max_iter=4)
    assert status(update_report(model, foreign, step=lbfgs_step), "update.optimizer.foreign") == (
        "fail"
    )


class SparseBag(nn.Module):
    """Embedding(sparse=True): its weight gets a sparse gradient; ``detach`` plants a bug."""

    def __init__(self, detach=False):
        super().__init__()
        torch.manual_seed(0)
        self.embed = nn.Embedding(20, 16, sparse=True)
        self.out = nn.Linear(16, 2)
        self.detach = detach

    def forward(self, tokens):
        h = self.embed(tokens).mean(1)
        return self.out(h.detach() if self.detach else h)


def token_labels(n=256):
    g = torch.Generator().manual_seed(0)
    y = torch.randint(0, 2, (n,), generator=g)
    x = torch.randint(0, 10, (n, 8), generator=g) + 10 * y[:, None]
    return x, y


def test_sparse_gradients_are_read_and_a_cut_or_stale_one_still_fails():
    def layers(model, step=None):
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        return diagnose(model, token_labels(), optimizer=opt, layers=("model", "update"), step=step)

    healthy = layers(SparseBag())
    bad = [f for f in healthy.findings if f.status in ("fail", "warn")]
    assert not bad, "\n".join(f"{f.check}: {f.message}" for f in bad)
    cut = layers(SparseBag(detach=True))["model.grad.coverage"]
    assert cut.status == "fail" and "embed.weight" in str(cut.evidence), cut.message

    assert status(layers(SparseBag(), no_zero_grad_step), "update.grad.zeroed") == "fail"


class Siamese(nn.Module):
    """Verification from |enc(a) - enc(b)|: the encoder's last bias cancels in the difference,
    so it gets an exactly zero gradient by construction. ``rounded`` plants a bug instead: the
    head reads its weight through round(), which passes no gradient though the weight matters."""

    def __init__(self, rounded=False):
        super().__init__()
        torch.manual_seed(0)
        self.enc = nn.Sequential(nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 8))
        self.head = nn.Linear(8, 2)
        self.rounded = rounded

    def forward(self, pairs):
        h = (self.enc(pairs[:, :32]) - self.enc(pairs[:, 32:])).abs()
        if self.rounded:
            return h @ (torch.round(self.head.weight * 8) / 8).T + self.head.bias
        return self.head(h)


@pytest.mark.check("doctor.update.params.moved", healthy=True)
@pytest.mark.check("doctor.update.params.moved", planted=True)
def test_a_parameter_the_output_does_not_depend_on_is_a_note_and_one_cut_by_round_fails():
    x, y = digits()
    pairs = x[:400, ::2].reshape(200, 64)  # two digits a row, every other pixel of each
    same = (y[:400:2] == y[1:400:2]).long()
    healthy = update_report(Siamese(), data=(pairs, same))["update.params.moved"]
    assert healthy.status == "pass" and healthy.evidence["without_effect"] == ["enc.2.bias"]
    assert "could be removed" in healthy.evidence["note"]
    broken = update_report(Siamese(rounded=True), data=(pairs, same))["update.params.moved"]
    assert broken.status == "fail" and "head.weight" in broken.evidence["did_not_move"]
    assert broken.evidence["without_effect"] == ["enc.2.bias"]
