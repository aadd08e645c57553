"""data.split.overlap through labcoat.audit.duplicates: near-copies across the split are a leak
only where far more held-out rows have a training twin than a random split of the data gives."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from labcoat import diagnose
from tests.doctor.helpers import TinyLM, digits, mlp


def overlap(data, val_data=None, model=None, loss_fn=None):
    report = diagnose(
        model or mlp(),
        data,
        loss_fn or nn.CrossEntropyLoss(),
        lambda p: torch.optim.Adam(p),
        val_data=val_data,
        layers=("data",),
    )
    return report["data.split.overlap"]


def user_split(x, y, seed=0, held=160):
    order = np.random.default_rng(seed).permutation(len(x))
    return (x[order[held:]], y[order[held:]]), (x[order[:held]], y[order[:held]])


def test_validation_of_training_rows_plus_pixel_noise_fails_as_an_augmentation_leak():
    x, y = digits()
    train, _ = user_split(x, y)
    noisy = train[0][:160] + 0.01 * torch.randn(160, 64, generator=torch.Generator().manual_seed(0))
    f = overlap(train, (noisy, train[1][:160]))
    assert f.status == "fail" and "your split" in f.message, f.message
    assert f.evidence["in_train"] == 0 and f.evidence["near_copies"] >= 150
    assert f.evidence["random_split_share"] < 0.01


def test_an_honest_random_split_of_digits_passes_though_some_digits_look_alike():
    x, y = digits()
    f = overlap(*user_split(x, y))
    assert f.status == "pass" and "your split" in f.message, f.message
    f = overlap((x, y))  # labcoat's split
    assert f.status == "pass" and "labcoat's split" in f.message, f.message


def test_a_third_of_validation_rows_copied_from_training_fails_and_a_few_copies_warn():
    x, y = digits()
    (xt, yt), (xv, yv) = user_split(x, y)
    xv, yv = xv.clone(), yv.clone()
    xv[:48], yv[:48] = xt[:48], yt[:48]  # 30% of 160
    f = overlap((xt, yt), (xv, yv))
    assert f.status == "fail" and f.evidence["in_train"] == 48, f.message
    xv[5:48], yv[5:48] = user_split(x, y)[1][0][5:48], user_split(x, y)[1][1][5:48]
    f = overlap((xt, yt), (xv, yv))
    assert f.status == "warn" and f.evidence["in_train"] == 5, f.message


def few_valued_table(n=600, seed=0):
    """Four binary features: 16 distinct rows, so a random split repeats training rows."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, 2, (n, 4), generator=g).float()
    y = (x[:, 0] + x[:, 1] + torch.rand(n, generator=g) > 1.5).long()
    return x, y


def test_a_random_split_of_a_table_with_few_distinct_rows_passes_though_most_rows_repeat():
    x, y = few_valued_table()
    f = overlap(*user_split(x, y), model=mlp(d_in=4, d_out=2))
    assert f.status == "pass" and f.evidence["in_train"] > 100, f.message
    assert f.evidence["random_split_share"] > 0.9


def lm_loss(logits, y):
    return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def test_repeated_language_model_sequences_pass_with_labcoats_split_and_a_random_user_split():
    g = torch.Generator().manual_seed(0)
    start = torch.randint(0, 16, (200, 1), generator=g)
    seq = (start + torch.arange(13)) % 16  # 16 sequences, each repeated about 12 times
    x, y = seq[:, :-1].contiguous(), seq[:, 1:].contiguous()
    f = overlap((x, y), model=TinyLM(), loss_fn=lm_loss)
    assert f.status == "pass" and f.evidence["in_train"] == 0, f.message
    f = overlap(*user_split(x, y, held=40), model=TinyLM(), loss_fn=lm_loss)
    assert f.status == "pass" and f.evidence["in_train"] == 40, f.message


def test_a_sample_of_large_splits_still_tells_a_copied_validation_set_from_an_honest_one(
    monkeypatch,
):
    from labcoat.doctor.checks import data

    monkeypatch.setattr(data, "OVERLAP_MAX_TRAIN", 300)
    monkeypatch.setattr(data, "OVERLAP_MAX_VAL", 60)
    x, y = digits()
    train, val = user_split(x, y)
    f = overlap(train, val)
    assert f.status == "pass" and f.evidence["sampled"] and f.evidence["val_examples"] == 60
    f = overlap(train, (train[0][:160], train[1][:160]))
    assert f.status == "fail" and f.evidence["sampled"], f.message
