"""Data layer: each check catches its planted bug and passes the healthy twin."""

import functools

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from tests.doctor.helpers import (
    Tagger,
    diabetes,
    diagnose,
    digits,
    lm_loss,
    mlp,
    regressor,
    status,
    tag_data,
)


def data_report(model=None, data=None, **kw):
    return diagnose(model or mlp(), data, layers=("data",), **kw)


@pytest.mark.check(
    "doctor.data.finite",
    "doctor.data.inputs.duplicates",
    "doctor.data.split.overlap",
    healthy=True,
)
def test_healthy_digits_pass_every_data_check():
    report = data_report()
    bad = [f for f in report.findings if f.status == "fail"]
    assert not bad, bad
    for check in (
        "data.finite",
        "data.labels.range",
        "data.labels.degenerate",
        "data.inputs.duplicates",
        "data.split.overlap",
        "data.leak.feature",
        "data.signal.baseline",
    ):
        assert status(report, check) == "pass", report[check]


@pytest.mark.check("doctor.data.finite", planted=True)
def test_nan_inputs_fail_and_name_rows():
    x, y = digits()
    x[5, 3] = float("nan")
    report = data_report(data=(x, y), val_data=(x[:50].clone().nan_to_num(), y[:50]))
    f = report["data.finite"]
    assert f.status == "fail" and f.evidence["train inputs"]["first_rows"] == [5]


def test_label_beyond_output_size_fails():
    x, y = digits()
    y[7] = 10  # 11 classes, 10 outputs
    f = data_report(data=(x, y))["data.labels.range"]
    assert f.status == "fail" and f.evidence["max_label"] == 10


def test_label_beyond_output_size_fails_under_a_loss_of_ones_own():
    # the twin of integer ranks and counts, which a loss reads as values: a one-hot
    # cross-entropy raises on label 10, so the labels are class indices one past the head
    def one_hot_ce(out, y):
        return -(F.log_softmax(out, 1) * F.one_hot(y, out.shape[1])).sum(1).mean()

    x, y = digits()
    y[7] = 10
    report = data_report(data=(x, y), loss_fn=one_hot_ce)
    assert report.task == "classification"
    assert report["data.labels.range"].status == "fail"


def test_negative_label_fails():
    x, y = digits()
    y[0] = -1
    assert status(data_report(data=(x, y)), "data.labels.range") == "fail"


def test_output_far_wider_than_labels_warns():
    assert status(data_report(model=mlp(d_out=100)), "data.labels.range") == "warn"


def test_binary_single_logit_accepts_01_float_targets():
    x, y = digits()
    yb = (y >= 5).float()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 16), nn.ReLU(), nn.Linear(16, 1), nn.Flatten(0))
    report = diagnose(model, (x, yb), nn.BCEWithLogitsLoss(), layers=("data", "model"))
    assert report.task == "classification"
    assert status(report, "data.labels.range") == "pass"
    assert report.ok, str(report)


@pytest.mark.check("doctor.data.labels.degenerate", planted=True)
def test_single_class_fails():
    x, y = digits()
    f = data_report(data=(x, torch.zeros_like(y)))["data.labels.degenerate"]
    assert f.status == "fail"


@pytest.mark.check("doctor.data.labels.degenerate", healthy=True)
def test_constant_regression_target_fails_and_varied_passes():
    x, y = diabetes()
    assert (
        status(
            data_report(regressor(), (x, torch.ones_like(y)), loss_fn=nn.MSELoss()),
            "data.labels.degenerate",
        )
        == "fail"
    )
    assert (
        status(data_report(regressor(), (x, y), loss_fn=nn.MSELoss()), "data.labels.degenerate")
        == "pass"
    )


def test_degenerate_evidence_shows_raw_examples_per_class():
    f = data_report()["data.labels.degenerate"]
    assert set(f.evidence["examples_per_class"]) == set(range(10))
    assert len(f.evidence["examples_per_class"][3][0]["x"]) == 16


@pytest.mark.check("doctor.data.inputs.duplicates", planted=True)
def test_identical_inputs_fail():
    x, y = digits()
    x[:] = x[0]
    assert status(data_report(data=(x, y)), "data.inputs.duplicates") == "fail"


@pytest.mark.check("doctor.data.features.constant", planted=True)
def test_nothing_varies_fails_and_a_few_constant_columns_warn():
    # the name is older than the rule: a few constant columns are now a note, not a warning
    x, y = digits()
    assert status(data_report(data=(torch.zeros_like(x), y)), "data.features.constant") == "fail"
    # digits has three pixels that are blank in every image: normal, said in the evidence
    f = data_report()["data.features.constant"]
    assert f.status == "pass" and f.evidence["constant"] >= 3 and "note" in f.evidence


@pytest.mark.check("doctor.data.features.constant", healthy=True)
def test_features_that_all_vary_pass():
    x, y = diabetes()
    assert (
        status(data_report(regressor(), (x, y), loss_fn=nn.MSELoss()), "data.features.constant")
        == "pass"
    )


@pytest.mark.check("doctor.data.features.constant", planted=True)
def test_most_features_constant_warns():
    x, y = digits()
    x[:, 10:] = 0.5  # a preprocessing step that overwrote most columns
    f = data_report(model=mlp(), data=(x, y))["data.features.constant"]
    assert f.status == "warn" and "most of the input" in f.message


@pytest.mark.check("doctor.data.features.constant", planted=True)
def test_a_feature_constant_in_training_and_varying_in_validation_warns():
    x, y = digits()
    val_x, val_y = x[400:].clone(), y[400:]
    train_x = x[:400].clone()
    train_x[:, 20] = 0.0  # the training pipeline zeroes a column the validation one keeps
    f = data_report(data=(train_x, y[:400]), val_data=(val_x, val_y))["data.features.constant"]
    assert f.status == "warn" and f.evidence["constant_in_training_varying_in_validation"] == [20]


@pytest.mark.check("doctor.data.features.constant", healthy=True)
def test_a_rare_category_seen_only_in_validation_by_chance_passes():
    # one-hot columns of a category of three rows, all three held out: chance, not a shift
    x, y = digits()
    x = torch.cat([x, torch.zeros(len(x), 1)], dim=1)
    val_x, val_y = x[400:].clone(), y[400:]
    val_x[:3, 64] = 1.0
    f = data_report(mlp(d_in=65), (x[:400], y[:400]), val_data=(val_x, val_y))[
        "data.features.constant"
    ]
    assert f.status == "pass" and f.evidence["constant"] >= 4
    assert not f.evidence["constant_in_training_varying_in_validation"]


@pytest.mark.check("doctor.data.split.overlap", planted=True)
def test_validation_equal_to_training_fails():
    x, y = digits()
    f = data_report(data=(x, y), val_data=(x[:200], y[:200]))["data.split.overlap"]
    assert f.status == "fail" and f.evidence["in_train"] == 200


def test_label_copied_into_a_feature_fails_as_leak():
    x, y = digits()
    x = torch.cat([x, y[:, None].float() / 9], dim=1)
    f = data_report(model=mlp(d_in=65), data=(x, y))["data.leak.feature"]
    assert f.status == "fail" and f.evidence["feature"] == 64


@pytest.mark.check("doctor.data.leak.feature", planted=True)
def test_regression_leak_fails():
    x, y = diabetes()
    x = torch.cat([x, y[:, None]], dim=1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(11, 8), nn.ReLU(), nn.Linear(8, 1), nn.Flatten(0))
    assert status(data_report(model, (x, y), loss_fn=nn.MSELoss()), "data.leak.feature") == "fail"


def test_misaligned_labels_fail_baseline():
    x, y = digits()
    y = y[torch.randperm(len(y), generator=torch.Generator().manual_seed(3))]
    f = data_report(data=(x, y))["data.signal.baseline"]
    assert f.status == "fail" and f.evidence["pvalue"] > 0.05


class OneLogit(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = mlp(d_out=1)

    def forward(self, x):
        return self.net(x).squeeze(-1)


def rare_positives():
    """1% positives: zeros drawn with ink at pixel 20, a subtle minority of one class (8 of 800;
    one or two land in the held-out fifth), as fraud or a rare diagnosis is."""
    x, y = digits()
    return x, ((y == 0) & (x[:, 20] > 0.5)).float()


def test_a_rare_positive_class_with_signal_is_not_called_chance():
    # a vote of 5 neighbours never names a positive: the votes alone said p=1 and failed
    x, y = rare_positives()
    assert int(y.sum()) == 8
    f = data_report(OneLogit(), (x, y), loss_fn=nn.BCEWithLogitsLoss())["data.signal.baseline"]
    assert f.status != "fail", f.message
    assert f.evidence["baselines"]["linear"]["auc"] > 0.9


def test_a_rare_positive_class_misaligned_still_fails():
    x, y = rare_positives()
    y = y[torch.randperm(len(y), generator=torch.Generator().manual_seed(1))]
    f = data_report(OneLogit(), (x, y), loss_fn=nn.BCEWithLogitsLoss())["data.signal.baseline"]
    assert f.status == "fail", f.message


@pytest.mark.check("doctor.data.signal.baseline", planted=True)
def test_regression_baseline_passes_and_fails_when_shuffled():
    x, y = diabetes()
    assert (
        status(data_report(regressor(), (x, y), loss_fn=nn.MSELoss()), "data.signal.baseline")
        == "pass"
    )
    y = y[torch.randperm(len(y), generator=torch.Generator().manual_seed(0))]
    assert (
        status(data_report(regressor(), (x, y), loss_fn=nn.MSELoss()), "data.signal.baseline")
        == "fail"
    )


def test_feature_checks_skip_token_ids_and_say_why():
    from tests.doctor.helpers import TinyLM, lm_loss, token_data

    model = TinyLM()
    report = diagnose(model, token_data(), lm_loss, layers=("data",))
    f = report["data.signal.baseline"]
    assert f.status == "skip" and "token ids" in f.message
    assert report.task == "sequence"


@pytest.mark.check("doctor.data.labels.range", healthy=True)
def test_padding_the_loss_skips_is_not_a_label():
    x, y = tag_data()
    report = data_report(Tagger(), (x, y), loss_fn=lm_loss)
    f = report["data.labels.range"]
    assert f.status == "pass" and f.evidence["ignored_targets"] > 0 and f.evidence["max_label"] == 3
    assert set(report["data.labels.degenerate"].evidence["class_counts"]) == {0, 1, 2, 3}


@pytest.mark.check("doctor.data.labels.range", planted=True)
def test_a_tag_beyond_the_output_next_to_the_padding_fails():
    x, y = tag_data()
    y[y == 3] = 4  # a fifth tag for a model with four outputs, next to the padding
    f = data_report(Tagger(), (x, y), loss_fn=lm_loss)["data.labels.range"]
    assert f.status == "fail" and f.evidence["max_label"] == 4


def test_the_skipped_label_is_the_losses_own_ignore_index():
    x, y = digits()
    y[:40] = -1  # unlabelled examples, marked the way this loss is told to skip
    assert (
        status(data_report(data=(x, y)), "data.labels.range") == "fail"
    )  # -1 is not skipped by default
    for loss_fn in (
        nn.CrossEntropyLoss(ignore_index=-1),
        functools.partial(F.cross_entropy, ignore_index=-1),
    ):
        f = data_report(data=(x, y), loss_fn=loss_fn)["data.labels.range"]
        assert f.status == "pass" and f.evidence["ignore_index"] == -1, f.message
    f = data_report(data=(x, torch.full_like(y, -100)))["data.labels.degenerate"]
    assert f.status == "fail" and "ignore_index" in f.message
