"""False alarms seen on healthy setups, each next to the planted bug its check must still catch."""

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn import functional as F

from labcoat.doctor.result import Diagnosis
from labcoat.errors import InputError
from labcoat.findings import Finding
from tests.doctor.helpers import diabetes, diagnose, digits, lm_loss, no_zero_grad_step, status


def bn_mlp(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(64, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 10))


# 1. update.grad.zeroed: a Linear's bias under BatchNorm has a true gradient of zero ---------------
def test_linear_feeding_batchnorm_passes_grad_zeroed_and_missing_zero_grad_still_fails():
    model = bn_mlp()
    healthy = diagnose(model, layers=("data", "model", "update"))
    f = healthy["update.grad.zeroed"]
    assert f.status == "pass", f.message
    assert "0.bias" in f.evidence["noise_level"]  # the bias's float noise did not vote
    broken = diagnose(bn_mlp(), step=no_zero_grad_step, layers=("data", "model", "update"))
    assert broken["update.grad.zeroed"].status == "fail"


# 2. data.signal.baseline: every non-constant target column, and autoencoders ----------------------
@pytest.mark.check("doctor.data.signal.baseline", healthy=True)
def test_autoencoder_with_a_constant_first_pixel_passes_signal_baseline():
    x, _ = digits()
    assert bool((x[:, 0] == 0).all())  # digits' first pixel is always blank
    model = nn.Sequential(nn.Linear(64, 16), nn.ReLU(), nn.Linear(16, 64))
    f = diagnose(model, (x, x.clone()), nn.MSELoss(), layers=("data",))["data.signal.baseline"]
    assert f.status == "pass" and f.evidence["autoencoder"], f.message


def multi_output(y_first_constant=True):
    x, y = diabetes()
    first = torch.zeros_like(y) if y_first_constant else y
    return x, torch.stack([first, y, 0.5 * x[:, 2] + 0.5 * y], dim=1)


def test_multi_output_regression_is_judged_on_its_varying_columns_and_misaligned_targets_fail():
    x, targets = multi_output()
    model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 3))
    f = diagnose(model, (x, targets), nn.MSELoss(), layers=("data",))["data.signal.baseline"]
    assert f.status == "pass" and 0 not in f.evidence["judged_columns"], f.message
    shuffled = targets[torch.randperm(len(targets), generator=torch.Generator().manual_seed(0))]
    f = diagnose(model, (x, shuffled), nn.MSELoss(), layers=("data",))["data.signal.baseline"]
    assert f.status == "fail", f.message


# 3. data.split.overlap: labcoat's own split keeps identical inputs on one side --------------------
def repeated_tokens():
    g = torch.Generator().manual_seed(0)
    start = torch.randint(0, 16, (40, 1), generator=g)
    seq = (start + torch.arange(13)) % 16  # 16 distinct sequences, each repeated
    return seq[:, :-1].contiguous(), seq[:, 1:].contiguous()


def test_labcoat_split_of_repeated_sequences_keeps_twins_together_and_a_leaky_user_split_fails():
    from tests.doctor.helpers import TinyLM

    x, y = repeated_tokens()
    f = diagnose(TinyLM(), (x, y), lm_loss, layers=("data",))["data.split.overlap"]
    assert f.status == "pass" and "labcoat's split" in f.message, f.message
    # with 16 distinct sequences any random split shares ~90% of its rows: not a leak by itself
    f = diagnose(TinyLM(), (x, y), lm_loss, val_data=(x[:10], y[:10]), layers=("data",))[
        "data.split.overlap"
    ]
    assert f.status == "pass" and "your split" in f.message, f.message
    g = torch.Generator().manual_seed(1)  # mostly distinct sequences: held-out copies are a leak
    start, stride = (
        torch.randint(0, 64, (200, 1), generator=g),
        torch.randint(1, 64, (200, 1), generator=g),
    )
    seq = (start + stride * torch.arange(13)) % 64
    x, y = seq[:, :-1].contiguous(), seq[:, 1:].contiguous()
    leaky = (x[:40], y[:40])
    f = diagnose(TinyLM(vocab=64), (x, y), lm_loss, val_data=leaky, layers=("data",))[
        "data.split.overlap"
    ]
    assert f.status == "fail" and "your split" in f.message, f.message


def test_split_off_puts_every_copy_of_an_input_on_one_side():
    from labcoat.doctor.features import row_hashes
    from labcoat.doctor.inputs import split_off, to_examples

    x, y = digits()
    x, y = torch.cat([x, x[:200]]), torch.cat([y, y[:200]])
    train, val = split_off(to_examples((x, y)), 0.2, seed=0)
    assert not set(row_hashes(train.x)) & set(row_hashes(val.x))
    assert 0.15 < len(val) / (len(train) + len(val)) < 0.25


# 5. the verdict names an earlier warning that explains the failure --------------------------------
def finding(check, layer, status):
    return Finding(check=check, layer=layer, status=status, message=f"{check} says {status}")


def test_verdict_names_a_declared_explaining_warning_and_nothing_else():
    findings = [
        finding("model.loss.logits", "model", "warn"),
        finding("overfit.batch", "overfit", "fail"),
    ]
    report = Diagnosis(findings, ["model", "overfit"])
    assert report.likely_cause.check == "model.loss.logits"
    assert "likely cause: model.loss.logits" in report.summary()
    assert report.to_dict()["likely_cause"] == "model.loss.logits"
    unrelated = [
        finding("data.features.constant", "data", "warn"),
        finding("overfit.batch", "overfit", "fail"),
    ]
    report = Diagnosis(
        unrelated, ["data", "overfit"]
    )  # a warning that declares no such explanation
    assert report.likely_cause is None and "likely cause" not in report.summary()
    later = [
        finding("overfit.batch", "overfit", "fail"),
        finding("model.loss.logits", "model", "warn"),
    ]
    assert Diagnosis(later, ["overfit", "model"]).likely_cause is None  # only an earlier warning


class SoftmaxCNN(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 36, 10))

    def forward(self, x):
        return self.net(x).softmax(dim=1)


def test_softmax_before_cross_entropy_is_named_as_the_cause_of_the_overfit_failure():
    x, y = digits()
    model = SoftmaxCNN()
    report = diagnose(
        model,
        (x.reshape(-1, 1, 8, 8), y),
        optimizer=torch.optim.SGD(model.parameters(), lr=0.01),
        layers=("data", "model", "update", "overfit"),
    )
    assert report.failed_layer == "overfit", str(report)
    assert report.likely_cause is not None and report.likely_cause.check == "model.loss.logits", (
        report.summary()
    )


def test_raw_pixel_inputs_are_named_as_the_cause_of_the_overfit_failure():
    x, y = digits()
    model = SoftmaxCNN().net  # the same CNN, returning logits, fed raw 0-255 pixels
    raw = (x * 255).round().reshape(-1, 1, 8, 8)
    report = diagnose(
        model,
        (raw, y),
        optimizer=torch.optim.Adam(model.parameters(), lr=1e-5),
        layers=("data", "model", "update", "overfit"),
    )
    initial = report["model.loss.initial"]
    assert initial.status == "warn" and "unscaled inputs (values up to 255" in initial.message, (
        initial.message
    )
    assert report.failed_layer == "overfit", str(report)
    assert report.likely_cause is not None and report.likely_cause.check == "model.loss.initial", (
        report.summary()
    )
    scaled = diagnose(
        SoftmaxCNN().net,
        (raw / 255, y),
        optimizer=torch.optim.Adam(model.parameters(), lr=1e-5),
        layers=("model",),
    )
    assert scaled["model.loss.initial"].status == "pass"


# 6. eval-mode randomness is named by model.eval_deterministic, not as batch mixing ----------------
class AlwaysDropout(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.a, self.b = nn.Linear(64, 32), nn.Linear(32, 10)

    def forward(self, x):
        return self.b(F.dropout(F.relu(self.a(x)), p=0.5, training=True))  # ignores model.eval()


class BatchMixing(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.a = nn.Linear(64, 10)

    def forward(self, x):
        return self.a(x - x.mean(dim=0))  # normalises across the batch in eval mode too


@pytest.mark.check("doctor.model.eval_deterministic", healthy=True)
def test_eval_randomness_fails_eval_deterministic_only_and_real_batch_mixing_still_fails():
    report = diagnose(AlwaysDropout(), layers=("model",))
    assert status(report, "model.eval_deterministic") == "fail"
    assert status(report, "model.batch_independence") == "skip", report[
        "model.batch_independence"
    ].message
    assert status(diagnose(BatchMixing(), layers=("model",)), "model.batch_independence") == "fail"


# 7. string labels and dict batches ----------------------------------------------------------------
@pytest.mark.parametrize(
    "labels",
    [
        lambda y: [str(v) for v in y.tolist()],
        lambda y: y.numpy().astype(str),
    ],
)
def test_string_class_labels_are_an_input_error_with_the_fix(labels):
    x, y = digits()
    with pytest.raises(InputError, match="LabelEncoder"):
        diagnose(nn.Linear(64, 10), (x, labels(y)), layers=("data",))


def test_string_labels_from_a_dataset_are_an_input_error():
    x, y = digits()
    items = [(x[i], "even" if int(y[i]) % 2 == 0 else "odd") for i in range(100)]
    loader = torch.utils.data.DataLoader(items, batch_size=10)
    with pytest.raises(InputError, match="strings"):
        diagnose(nn.Linear(64, 2), loader, layers=("data",))


class KeywordModel(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.embed, self.head = nn.Embedding(16, 8), nn.Linear(8, 2)

    def forward(self, input_ids, attention_mask=None, labels=None):
        h = self.embed(input_ids)
        if attention_mask is not None:
            h = h * attention_mask.unsqueeze(-1)
        return self.head(h.mean(dim=1))


class BatchModel(KeywordModel):
    def forward(self, batch):
        return super().forward(batch["input_ids"], batch["attention_mask"])


class TensorModel(KeywordModel):
    def forward(self, x, lengths):
        return super().forward(x)


def token_batches(mask=True):
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 16, (320, 6), generator=g)
    y = (x[:, 0] >= 8).long()
    out = []
    for i in range(0, 320, 32):
        b = {"input_ids": x[i : i + 32], "labels": y[i : i + 32]}
        if mask:
            b["attention_mask"] = torch.ones_like(x[i : i + 32])
        out.append(b)
    return out


@pytest.mark.parametrize("model", [KeywordModel, BatchModel])
def test_dict_batches_reach_the_model_as_its_forward_asks(model):
    report = diagnose(model(), token_batches(), layers=("data", "model", "update"))
    assert not [f for f in report.findings if f.failed], str(report)


def test_user_step_receives_dict_batches():
    seen = []

    def step(model, batch, optimizer, loss_fn):
        seen.append(sorted(batch))
        optimizer.zero_grad()
        loss = loss_fn(model(**{k: v for k, v in batch.items() if k != "labels"}), batch["labels"])
        loss.backward()
        optimizer.step()
        return loss

    report = diagnose(
        KeywordModel(), token_batches(), step=step, layers=("data", "model", "update")
    )
    assert not [f for f in report.findings if f.failed], str(report)
    assert seen[0] == ["attention_mask", "input_ids", "labels"]


def test_dict_batches_a_model_cannot_take_are_an_input_error_with_a_hint():
    with pytest.raises(InputError, match=r"TensorModel.forward\(x, lengths\).*rename"):
        diagnose(TensorModel(), token_batches(), layers=("data",))
    with pytest.raises(InputError, match="none holds the targets"):
        diagnose(
            KeywordModel(),
            [{"input_ids": b["input_ids"], "y_true": b["labels"]} for b in token_batches()],
        )


def test_cli_exits_2_on_string_labels(cli, tmp_path):
    path = tmp_path / "exp.py"
    path.write_text(
        "import torch, labcoat\nfrom torch import nn\ndef experiment():\n    m = nn.Linear(4, 2)\n"
        "    return labcoat.Experiment(m, (torch.randn(20, 4), ['cat', 'dog'] * 10), "
        "nn.CrossEntropyLoss(),\n                              torch.optim.SGD(m.parameters(), "
        "lr=0.1), ledger=False)\n"
    )
    result = cli("doctor", path)
    assert result.code == 2, result.err
    assert "LabelEncoder" in result.err


# cross-entropy's (N, C, T) layout for (N, T) targets is a tagger's, not a language model's --------
class ChannelsFirstTagger(nn.Module):
    def __init__(self, drop_last_position=False):
        super().__init__()
        torch.manual_seed(0)
        self.drop = drop_last_position
        self.embed, self.out = nn.Embedding(16, 16, padding_idx=0), nn.Linear(16, 4)

    def forward(self, tokens):
        out = self.out(self.embed(tokens)).transpose(1, 2)  # (N, C, T)
        return out[:, :, :-1] if self.drop else out


def test_channels_first_tagger_output_fits_and_a_truncated_one_fails():
    from tests.doctor.helpers import tag_data

    report = diagnose(ChannelsFirstTagger(), tag_data(), layers=("data", "model"))
    assert report.task == "classification" and report["model.forward"].status == "pass", str(report)
    assert report["data.labels.range"].status == "pass", report["data.labels.range"].message
    broken = diagnose(ChannelsFirstTagger(drop_last_position=True), tag_data(), layers=("model",))
    assert broken["model.forward"].status == "fail"


# 8. data.signal.baseline: a rare class, found every time, is signal ------------------------------
def rare_positives(n_pos=20, seed=0):
    """breast_cancer with the malignant class cut to 20 of 377 examples (5%)."""
    from sklearn.datasets import load_breast_cancer

    x, y = load_breast_cancer(return_X_y=True)
    x = (x - x.mean(0)) / x.std(0)
    rows = np.concatenate([np.flatnonzero(y == 0)[:n_pos], np.flatnonzero(y == 1)])
    return torch.tensor(x[rows], dtype=torch.float32), torch.tensor(1 - y[rows]).float()


def binary_head():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(30, 16), nn.ReLU(), nn.Linear(16, 1), nn.Flatten(0))


def test_a_rare_class_the_baselines_find_passes_signal_and_shuffled_labels_still_fail():
    x, y = rare_positives()
    loss = nn.BCEWithLogitsLoss(pos_weight=torch.tensor(15.0))
    healthy = diagnose(binary_head(), (x, y), loss, layers=("data",))
    f = healthy["data.signal.baseline"]
    assert f.status == "pass", f.message
    assert f.evidence["baselines"]["knn"]["chance"] > 0.9  # accuracy alone could not show it
    g = torch.Generator().manual_seed(1)
    misaligned = y[torch.randperm(len(y), generator=g)]
    broken = diagnose(binary_head(), (x, misaligned), loss, layers=("data",))
    assert broken["data.signal.baseline"].status == "fail"


def test_many_classes_use_a_permutation_test_that_still_fails_misaligned_labels():
    x, y = digits()
    g = torch.Generator().manual_seed(2)
    broken = diagnose(mlp_digits(), (x, y[torch.randperm(len(y), generator=g)]), layers=("data",))
    assert broken["data.signal.baseline"].status == "fail"
    healthy = diagnose(mlp_digits(), (x, y), layers=("data",))
    assert healthy["data.signal.baseline"].status == "pass"


def mlp_digits():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
