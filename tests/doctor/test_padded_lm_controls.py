"""The controls on a padded causal LM whose pad id is the loss's ignore_index (issue 35): the
targets the loss skips are no targets to fit nor tokens to draw, so a healthy one passes
overfit.batch and shuffle.random_tokens (it failed both: its padding counted as unfitted tokens
and as a 16th token the copy learnt never to predict, ln 15 < ln 16)."""

import functools

import pytest
import torch
from torch.nn import functional as F

from tests.doctor.helpers import PaddedLM, diagnose, padded_lm_data


def lm_loss(out, y, ignore_index=-100):
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1), ignore_index=ignore_index)


skip_padding = functools.partial(lm_loss, ignore_index=0)


def controls(data, lr=3e-3, layers=("overfit", "shuffle")):
    """overfit.batch's and shuffle.random_tokens's findings (None for a layer not run: a
    planted test runs only the control it plants a bug for)."""
    model = PaddedLM()
    report = diagnose(
        model, data, skip_padding, torch.optim.Adam(model.parameters(), lr), layers=layers
    )
    found = {f.check: f for f in report.findings}
    return found.get("overfit.batch"), found.get("shuffle.random_tokens")


@functools.cache
def healthy_controls():
    return controls(padded_lm_data())


@pytest.mark.check("doctor.overfit.batch", healthy=True)
def test_a_padded_lm_skipping_its_pad_id_memorises_its_tokens():
    f, _ = healthy_controls()
    assert f.status == "pass", f.message
    real = int((padded_lm_data()[1] != 0).sum(1)[f.evidence["indices"]].sum())
    assert f.evidence["fitted_of"] == f"{real} tokens", f.evidence["fitted_of"]


@pytest.mark.check("doctor.shuffle.random_tokens", healthy=True)
def test_a_padded_lm_skipping_its_pad_id_is_at_chance_on_random_tokens():
    _, f = healthy_controls()
    assert f.status == "pass", f.message
    assert f.evidence["tokens"] == 15  # the pad id is not a token to draw


@pytest.mark.check("doctor.overfit.batch", planted=True)
def test_the_same_lm_with_a_learning_rate_far_too_small_fails():
    f, _ = controls(padded_lm_data(), lr=1e-7, layers=("overfit",))
    assert f.status == "fail", f.message


@pytest.mark.check("doctor.shuffle.random_tokens", planted=True)
def test_the_same_lm_given_its_inputs_as_targets_fails():
    x, _ = padded_lm_data()
    _, f = controls((x, x.clone()), layers=("shuffle",))
    assert f.status == "fail", f.message
    assert f.evidence["tokens"] == 15
