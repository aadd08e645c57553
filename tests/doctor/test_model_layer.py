"""Model layer: each check catches its planted bug and passes the healthy twin."""

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from labcoat.errors import InputError
from tests.doctor.helpers import (
    Tagger,
    TinyLM,
    diabetes,
    diagnose,
    digits,
    lm_loss,
    mlp,
    regressor,
    status,
    tag_data,
    token_data,
)


def model_report(model, data=None, loss_fn=None, **kw):
    return diagnose(model, data, loss_fn, layers=("model",), **kw)


class ZeroHead(nn.Module):
    """Healthy twin: a zero-initialised last layer (common for residual nets and fine-tuning)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.body = nn.Sequential(nn.Linear(64, 32), nn.ReLU())
        self.head = nn.Linear(32, 10)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def forward(self, x):
        return self.head(self.body(x))


class BatchNormDropout(nn.Module):
    """Healthy twin: BatchNorm and dropout, which behave differently in train and eval."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(
            nn.Linear(64, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 10)
        )

    def forward(self, x):
        return self.net(x)


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        return self.fc(self.conv(x.view(-1, 1, 8, 8)).flatten(1))


@pytest.mark.check("doctor.model.dead_units", "doctor.model.loss.scalar", healthy=True)
@pytest.mark.parametrize(
    "make",
    [lambda: mlp(), ZeroHead, BatchNormDropout, SmallCNN],
    ids=["mlp", "zero_head", "bn_dropout", "cnn"],
)
def test_healthy_models_pass_every_model_check(make):
    report = model_report(make())
    bad = [f for f in report.findings if f.status in ("fail", "warn")]
    assert not bad, "\n".join(f"{f.check}: {f.message}" for f in bad)


def test_regression_output_that_broadcasts_fails():
    x, y = diabetes()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 8), nn.ReLU(), nn.Linear(8, 1))  # (N, 1) vs targets (N,)
    f = model_report(model, (x, y), nn.MSELoss())["model.forward"]
    assert f.status == "fail" and "broadcasts" in f.message
    assert status(model_report(regressor(), (x, y), nn.MSELoss()), "model.forward") == "pass"


@pytest.mark.check("doctor.model.forward", healthy=True)
def test_regression_output_reshaped_by_the_loss_passes():
    x, y = diabetes()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 8), nn.ReLU(), nn.Linear(8, 1))  # (N, 1) ...
    squeezing = lambda out, target: F.mse_loss(out.squeeze(-1), target)  # ... squeezed by the loss
    f = model_report(model, (x, y), squeezing)["model.forward"]
    assert f.status == "pass", f.message


class Exploding(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc(x) / 0.0


def test_nonfinite_output_fails():
    assert status(model_report(Exploding()), "model.forward") == "fail"


@pytest.mark.check("doctor.model.forward", planted=True)
def test_forward_that_raises_fails_once_and_dependents_skip():
    model = mlp(d_in=63)  # wrong input width
    report = model_report(model)
    assert (
        report["model.forward"].status == "fail"
        and "RuntimeError" in report["model.forward"].message
    )
    assert report["model.batch_independence"].status == "skip"


@pytest.mark.check("doctor.model.loss.scalar", planted=True)
def test_unreduced_loss_fails():
    f = model_report(mlp(), loss_fn=nn.CrossEntropyLoss(reduction="none"))["model.loss.scalar"]
    assert f.status == "fail" and "reduction" in f.message


@pytest.mark.check("doctor.model.loss.batch_scaling", planted=True)
@pytest.mark.check("doctor.model.loss.batch_scaling", "doctor.model.loss.initial", healthy=True)
def test_summed_loss_warns_once():
    summed = model_report(mlp(), loss_fn=nn.CrossEntropyLoss(reduction="sum"))
    assert summed["model.loss.batch_scaling"].status == "warn"
    # 32 x ln 10 is what a uniform prediction costs under a sum: not an over-confident init
    assert summed["model.loss.initial"].status == "pass", summed["model.loss.initial"].message


@pytest.mark.check("doctor.model.loss.batch_scaling", healthy=True)
def test_a_mean_reduced_loss_passes_batch_scaling():
    assert status(model_report(mlp()), "model.loss.batch_scaling") == "pass"


class Overconfident(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = mlp()

    def forward(self, x):
        return 100 * self.net(x)


@pytest.mark.check("doctor.model.loss.initial", planted=True)
def test_overconfident_init_warns_whatever_the_reduction():
    f = model_report(Overconfident())["model.loss.initial"]
    assert f.status == "warn" and f.evidence["initial_loss"] > 5
    summed = model_report(Overconfident(), loss_fn=nn.CrossEntropyLoss(reduction="sum"))
    assert summed["model.loss.initial"].status == "warn"


class SoftmaxOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = mlp()

    def forward(self, x):
        return self.net(x).softmax(-1)


@pytest.mark.check("doctor.model.loss.logits", planted=True)
def test_probabilities_into_cross_entropy_warn():
    assert status(model_report(SoftmaxOut()), "model.loss.logits") == "warn"


class Detached(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(64, 32), nn.ReLU())
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        return self.head(self.body(x).detach())


@pytest.mark.check("doctor.model.grad.coverage", planted=True)
def test_detached_graph_fails_grad_coverage():
    f = model_report(Detached())["model.grad.coverage"]
    assert f.status == "fail" and "body.0.weight" in f.evidence["no_grad"]


@pytest.mark.check("doctor.model.grad.coverage", healthy=True)
def test_zero_loss_fails_and_zero_head_is_explained():
    f = model_report(mlp(), loss_fn=lambda out, y: 0 * F.cross_entropy(out, y))[
        "model.grad.coverage"
    ]
    assert f.status == "fail"
    f = model_report(ZeroHead())["model.grad.coverage"]
    assert f.status == "pass" and "body.0.weight" in f.evidence["explained_by_zero_init"]


@pytest.mark.check("doctor.model.params.frozen", healthy=True)
def test_accidentally_frozen_warns_declared_passes_all_frozen_fails():
    model = mlp()
    model[0].weight.requires_grad_(False)
    assert status(model_report(model), "model.params.frozen") == "warn"
    assert status(model_report(model, expect_frozen=["0.weight"]), "model.params.frozen") == "pass"
    for p in model.parameters():
        p.requires_grad_(False)
    assert status(model_report(model), "model.params.frozen") == "fail"


@pytest.mark.check("doctor.model.params.frozen", planted=True)
def test_expect_frozen_pattern_matching_nothing_warns():
    assert (
        status(model_report(mlp(), expect_frozen=["backbone.*"]), "model.params.frozen") == "warn"
    )


class BatchMixer(nn.Module):
    """Planted bug: centres activations over the batch, in eval mode too."""

    def __init__(self):
        super().__init__()
        self.net = mlp()

    def forward(self, x):
        h = self.net(x)
        return h - h.mean(0, keepdim=True)


@pytest.mark.check("doctor.model.batch_independence", planted=True)
def test_mixing_examples_across_the_batch_fails():
    f = model_report(BatchMixer())["model.batch_independence"]
    assert f.status == "fail" and f.evidence["changed_rows"]


class IgnoresInput(nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(10))

    def forward(self, x):
        return self.bias.expand(len(x), 10)


@pytest.mark.check("doctor.model.input_dependence", planted=True)
def test_output_that_ignores_input_fails():
    assert status(model_report(IgnoresInput()), "model.input_dependence") == "fail"


@pytest.mark.check("doctor.model.input_dependence", healthy=True)
def test_a_zero_initialised_head_still_depends_on_its_input():
    f = model_report(ZeroHead())["model.input_dependence"]
    assert f.status == "pass" and "head.weight" in f.evidence["perturbed"]


@pytest.mark.check("doctor.model.causality", planted=True)
def test_missing_causal_mask_fails():
    bad = model_report(TinyLM(causal=False), token_data(), lm_loss)
    assert bad["model.causality"].status == "fail"


@pytest.mark.check("doctor.model.causality", healthy=True)
def test_a_causally_masked_lm_passes():
    good = model_report(TinyLM(causal=True), token_data(), lm_loss)
    assert good["model.causality"].status == "pass", good["model.causality"].message


class DeadLayer(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = nn.Linear(64, 32)
        self.relu = nn.ReLU()
        self.out = nn.Linear(32, 10)
        with torch.no_grad():
            self.fc.bias.fill_(-100.0)  # every pre-activation negative

    def forward(self, x):
        return self.out(self.relu(self.fc(x)))


@pytest.mark.check("doctor.model.dead_units", planted=True)
def test_dead_relu_layer_fails():
    f = model_report(DeadLayer())["model.dead_units"]
    assert f.status == "fail" and f.evidence["dead_fraction"]["relu"] == 1.0


class AlwaysDropout(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = mlp()

    def forward(self, x):
        return self.net(F.dropout(x, 0.5, training=True))  # ignores model.eval()


@pytest.mark.check("doctor.model.eval_deterministic", planted=True)
def test_dropout_left_on_in_eval_fails_module_dropout_passes():
    assert status(model_report(AlwaysDropout()), "model.eval_deterministic") == "fail"
    assert status(model_report(BatchNormDropout()), "model.eval_deterministic") == "pass"


def test_warnings_raised_by_user_code_become_evidence():
    x, y = diabetes()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 8), nn.ReLU(), nn.Linear(8, 1))
    f = model_report(model, (x, y), nn.MSELoss())["model.loss.scalar"]
    assert any("target size" in w for w in f.evidence["warnings"])


def test_a_tagger_may_read_both_directions_but_a_language_model_may_not():
    tagger = model_report(Tagger(), tag_data(), lm_loss)["model.causality"]
    assert tagger.status == "skip" and "both directions" in tagger.message

    x, y = token_data()
    bidirectional_lm = Tagger(tags=16)  # the same network asked to predict the next token
    assert status(model_report(bidirectional_lm, (x, y), lm_loss), "model.causality") == "fail"
    # labels that are the inputs themselves, shifted inside the loss (Hugging Face's convention)
    assert (
        status(model_report(bidirectional_lm, (x, x.clone()), lm_loss), "model.causality") == "fail"
    )
    assert status(model_report(TinyLM(), (x, x.clone()), lm_loss), "model.causality") == "pass"


@pytest.mark.check("doctor.model.loss.logits", healthy=True)
def test_multi_label_outputs_are_judged_per_label():
    x, y = digits()
    labels = torch.stack([y >= 5, y % 2 == 0, y == 0], dim=1).float()
    healthy = model_report(mlp(d_out=3), (x, labels), nn.BCEWithLogitsLoss())
    assert healthy.task == "classification"
    assert healthy["model.loss.initial"].evidence["classes"] == 1  # one logit per label: ln 2
    bad = [f for f in healthy.findings if f.status in ("fail", "warn")]
    assert not bad, "\n".join(f"{f.check}: {f.message}" for f in bad)

    sigmoid_twice = model_report(
        nn.Sequential(mlp(d_out=3), nn.Sigmoid()), (x, labels), nn.BCEWithLogitsLoss()
    )
    assert sigmoid_twice["model.loss.logits"].status == "warn"


class TupleOutput(nn.Module):
    """Healthy apart from its output: logits and an auxiliary value, which the user's loss
    unpacks."""

    def __init__(self):
        super().__init__()
        self.net = mlp()

    def forward(self, x):
        logits = self.net(x)
        return logits, logits.norm(dim=1)


class TrailingComma(nn.Module):
    """The bug: ``return logits,`` wraps the output in a tuple that the loss cannot take."""

    def __init__(self):
        super().__init__()
        self.net = mlp()

    def forward(self, x):
        return (self.net(x),)


@pytest.mark.check("model.forward", planted=True)
def test_an_output_the_loss_cannot_take_is_a_broken_model_named_with_the_fix():
    report = diagnose(TrailingComma(), layers=("model", "update"))
    f = report["model.forward"]
    assert f.status == "fail" and "a tuple of tensor (32, 10)" in f.message
    assert "model(x)[0]" in f.message
    assert report["model.loss.scalar"].status == "skip"  # one cause, reported once
    assert report.failed_layer == "model" and not report.selftest_failed


def test_outputs_the_loss_takes_together_are_refused_as_input_not_called_broken():
    """A VAE-like model whose loss unpacks its tuple is a design the checks cannot read: the
    doctor says so (exit 2 from the CLI) instead of failing the model layer."""
    unpacking = lambda out, y: F.cross_entropy(out[0], y) + 0.0 * out[1].mean()
    with pytest.raises(InputError, match=r"returns a tuple of tensor .* loss_fn takes them"):
        diagnose(TupleOutput(), loss_fn=unpacking, layers=("model", "update"))
    as_dict = lambda out, y: F.cross_entropy(out["logits"], y)
    with pytest.raises(InputError, match=r"model\(x\)\['logits'\]"):
        diagnose(DictOutput(), loss_fn=as_dict, layers=("model",))


class DictOutput(nn.Module):
    """A Hugging Face-style output: a dict holding the logits."""

    def __init__(self):
        super().__init__()
        self.net = mlp()

    def forward(self, x):
        return {"logits": self.net(x)}


def test_inputs_in_another_dtype_than_the_weights_are_named_once():
    x, y = digits()
    report = diagnose(mlp(), (x.double(), y), layers=("model", "update"))
    f = report["model.forward"]
    assert (
        f.status == "fail"
        and "inputs are float64 but the model's parameters are float32" in f.message
    )
    fails = [g.check for g in report.findings if g.failed]
    assert fails == ["model.forward"], (
        fails
    )  # backward and step fail the same way: skipped, not repeated
    assert "already reported for the forward" in report["update.step.runs"].message


def test_a_loss_that_raises_is_reported_once_not_again_by_every_probe_that_calls_it():
    x, y = digits()
    y[y == 9] = 10  # cross-entropy raises on a label beyond the outputs
    report = diagnose(mlp(), (x, y), layers=("model", "update"))
    assert (
        report["model.loss.scalar"].status == "fail"
        and "out of bounds" in report["model.loss.scalar"].message
    )
    fails = [f.check for f in report.findings if f.failed]
    assert fails == ["model.loss.scalar"], fails
    assert "already reported for the loss" in report["model.grad.coverage"].message


def accuracy(out, y):
    return float((out.argmax(1) == y).float().mean())


@pytest.mark.check("doctor.model.metric", planted=True)
def test_metric_must_return_one_finite_number():
    assert status(model_report(mlp(), metric=lambda out, y: "high"), "model.metric") == "fail"
    assert status(model_report(mlp(), metric=lambda out, y: float("nan")), "model.metric") == "fail"
    f = model_report(mlp(), metric=lambda out, y: out[0])["model.metric"]  # a vector
    assert f.status == "fail" and "shape (10,)" in f.message


@pytest.mark.check("doctor.model.metric", healthy=True)
def test_a_metric_returning_one_number_passes_and_none_skips():
    assert status(model_report(mlp(), metric=accuracy), "model.metric") == "pass"
    assert status(model_report(mlp()), "model.metric") == "skip"


def test_float_class_labels_are_named_as_such():
    x, y = digits()
    f = model_report(mlp(), (x, y.float()))["model.forward"]
    assert f.status == "fail" and "y.long()" in f.message
    assert status(model_report(mlp(), (x, y)), "model.forward") == "pass"


def batch_statistics_mlp(mix: bool = False) -> nn.Module:
    """BatchNorm without running statistics normalises by the batch in eval mode too, by the
    user's choice (meta-learning, some GAN discriminators); ``mix`` plants a batch-centring
    step after it, which is the bug."""

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.body = nn.Sequential(
                nn.Linear(64, 32), nn.BatchNorm1d(32, track_running_stats=False), nn.ReLU()
            )
            self.head = nn.Linear(32, 10)

        def forward(self, x):
            h = self.body(x)
            return self.head(h - h.mean(0, keepdim=True) if mix else h)

    return Net()


@pytest.mark.check("doctor.model.batch_independence", healthy=True)
def test_batch_statistics_by_design_pass_and_mixing_beside_them_still_fails():
    healthy = model_report(batch_statistics_mlp())["model.batch_independence"]
    assert healthy.status == "pass", healthy.message
    assert healthy.evidence["held_batch_statistics"] == ["body.1"]
    broken = model_report(batch_statistics_mlp(mix=True))["model.batch_independence"]
    assert broken.status == "fail" and broken.evidence["changed_rows"], broken.message
    # the statistics are held on a copy: the eval model keeps normalising by the batch
    plain = model_report(BatchMixer())["model.batch_independence"]
    assert plain.status == "fail" and plain.evidence["held_batch_statistics"] == []


QUANTILES = torch.tensor([0.1, 0.5, 0.9])


def pinball_loss(out, y):
    err = y[:, None] - out
    return torch.maximum(QUANTILES * err, (QUANTILES - 1) * err).mean()


def gaussian_nll(out, y):
    return F.gaussian_nll_loss(out[:, 0], y, F.softplus(out[:, 1]) + 1e-4)


def test_heads_with_several_values_per_target_pass_when_the_loss_reads_them():
    for d_out, loss in ((3, pinball_loss), (2, gaussian_nll)):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, d_out))
        f = model_report(model, diabetes(), loss)["model.forward"]
        assert f.status == "pass" and "reads them itself" in f.message, f.message


def test_an_elementwise_loss_on_a_wide_head_still_fails_even_when_it_broadcasts():
    torch.manual_seed(0)
    three = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 3))
    assert status(model_report(three, diabetes(), nn.MSELoss()), "model.forward") == "fail"
    # 32 outputs on a probe batch of 32: MSELoss broadcasts (32, 32) against (32,) silently
    torch.manual_seed(0)
    wide = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 32))
    f = model_report(wide, diabetes(), nn.MSELoss())["model.forward"]
    assert f.status == "fail" and "broadcasts" in f.message, f.message
