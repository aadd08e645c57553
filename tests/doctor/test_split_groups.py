"""groups= / val_groups=: a group (patient, document, source) on both sides of the split fails
data.split.groups; labcoat's own split keeps each group on one side."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import labcoat
from labcoat import diagnose
from labcoat.errors import InputError
from tests.doctor.helpers import digits, mlp


def data_layer(data, **kw):
    return diagnose(
        mlp(), data, nn.CrossEntropyLoss(), lambda p: torch.optim.Adam(p), layers=("data",), **kw
    )


def patients(n):
    """Four rows per patient, ids as a hospital would write them."""
    return [f"p{i // 4:03d}" for i in range(n)]


@pytest.mark.check("doctor.data.split.groups", planted=True)
def test_a_row_split_that_puts_patients_on_both_sides_fails_naming_them():
    x, y = digits()
    ids = np.array(patients(len(x)))
    rows = np.random.default_rng(0).permutation(len(x))  # split by row: patients straddle
    tr, va = rows[160:], rows[:160]
    report = data_layer((x[tr], y[tr]), val_data=(x[va], y[va]), groups=ids[tr], val_groups=ids[va])
    f = report["data.split.groups"]
    assert f.status == "fail" and "your split" in f.message, f.message
    shared = {g["group"]: (g["n_a"], g["n_b"]) for g in f.evidence["shared"]}
    assert f.evidence["n_shared"] == len(set(ids[tr]) & set(ids[va])) == len(shared) > 50
    first = f.evidence["shared"][0]
    assert f"{first['group']!r} ({first['n_a']} train, {first['n_b']} val rows)" in f.message


@pytest.mark.check("doctor.data.split.groups", healthy=True)
def test_a_split_by_patient_passes():
    from sklearn.model_selection import GroupShuffleSplit

    x, y = digits()
    ids = np.array(patients(len(x)))
    tr, va = next(GroupShuffleSplit(1, test_size=0.2, random_state=0).split(x, y, ids))
    report = data_layer((x[tr], y[tr]), val_data=(x[va], y[va]), groups=ids[tr], val_groups=ids[va])
    f = report["data.split.groups"]
    assert f.status == "pass" and f.evidence["n_shared"] == 0, f.message


def test_labcoats_split_keeps_each_group_on_one_side_even_through_a_shuffling_loader():
    x, y = digits()
    ids = patients(len(x))
    loader = DataLoader(
        TensorDataset(x, y),
        batch_size=32,
        shuffle=True,
        generator=torch.Generator().manual_seed(0),
    )
    for data in ((x, y), loader):
        f = data_layer(data, groups=ids)["data.split.groups"]
        assert f.status == "pass" and "each group" in f.message, f.message
        assert f.evidence["groups_b"] > 20
    assert data_layer((x, y))["data.split.groups"].status == "skip"  # no groups given


def test_groups_follow_rows_read_through_a_loader():
    from labcoat.doctor.inputs import split_off, to_examples, with_groups

    x, y = digits()
    ids = np.array(patients(len(x)), dtype=object)
    loader = DataLoader(TensorDataset(x, y), batch_size=50, shuffle=True)
    examples = with_groups(to_examples(loader), ids, loader, "groups")
    assert list(examples.groups) == list(ids[examples.index.numpy()])
    train, val = split_off(examples, 0.2, seed=0)
    assert not set(train.groups) & set(val.groups)
    assert list(val.groups) == list(ids[val.index.numpy()])


def test_experiment_carries_groups():
    x, y = digits()
    ids = np.array(patients(len(x)))
    exp = labcoat.Experiment(
        mlp(),
        (x[:600], y[:600]),
        nn.CrossEntropyLoss(),
        lambda p: torch.optim.Adam(p),
        val_data=(x[598:], y[598:]),
        groups=ids[:600],
        val_groups=ids[598:],
    )
    f = exp.diagnose(layers=("data",))["data.split.groups"]
    assert f.status == "fail" and f.evidence["n_shared"] == 1  # p149 spans rows 596..599


@pytest.mark.parametrize(
    "kw, said",
    [
        ({"groups": patients(10)}, "groups: has 10 group ids but data has 800 rows"),
        ({"val_groups": patients(800)}, "val_groups: given without val_data"),
        ({"groups": ["one"] * 800}, "groups: every row is in one group"),
        ({"groups": patients(799) + [None]}, "groups: row 799 has no group id"),
    ],
)
def test_groups_that_do_not_fit_are_a_one_line_input_error(kw, said):
    x, y = digits()
    with pytest.raises(InputError, match=said):
        data_layer((x, y), **kw)


def test_groups_with_val_data_need_val_groups():
    x, y = digits()
    with pytest.raises(InputError, match="groups: given without val_groups"):
        data_layer((x[:600], y[:600]), val_data=(x[600:], y[600:]), groups=patients(600))
