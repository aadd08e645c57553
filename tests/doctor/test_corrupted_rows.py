"""Corrupted rows that still look like data (issue 35): wiped inputs, missing values filled
with 0, one class's labels overwritten. Each planted corruption warns (none is proof); each
healthy twin, with blank rows, zeros or a missing class of its own, passes."""

import numpy as np
import pytest
import torch
from sklearn.datasets import load_breast_cancer, load_wine
from torch import nn

from tests.doctor.helpers import diagnose, digits, mlp


def data_finding(check_id, data, d_in=64, classes=10, val_data=None):
    x, _ = data
    model = mlp(d_in=x.shape[1] if d_in is None else d_in, d_out=classes)
    report = diagnose(model, data, nn.CrossEntropyLoss(), layers=("data",), val_data=val_data)
    return report[check_id]


# -- data.rows.blank ----------------------------------------------------------------------------
@pytest.mark.check("doctor.data.rows.blank", planted=True)
def test_digits_with_rows_wiped_by_a_failed_decode_warn():
    x, y = digits()
    x[::40] = 0  # 20 images read as empty arrays, labels kept
    f = data_finding("data.rows.blank", (x, y))
    assert f.status == "warn", f.message
    assert f.evidence["blank_rows"] >= 10 and f.evidence["emptiest_other_row_features_set"] > 6


@pytest.mark.check("doctor.data.rows.blank", healthy=True)
def test_sparse_counts_with_empty_rows_among_nearly_empty_ones_pass():
    g = torch.Generator().manual_seed(0)
    x = torch.poisson(torch.full((600, 40), 0.08), generator=g)  # word counts of short texts
    y = (x[:, :20].sum(1) > x[:, 20:].sum(1)).long()
    f = data_finding("data.rows.blank", (x, y), d_in=None, classes=2)
    assert f.evidence["blank_rows"] >= 10, f.evidence
    assert f.status == "pass" and "sparse data" in f.evidence["note"], f.message


@pytest.mark.check("doctor.data.rows.blank", healthy=True)
def test_digits_as_shipped_have_no_blank_rows():
    f = data_finding("data.rows.blank", digits())
    assert f.status == "pass" and f.evidence["blank_rows"] == 0, f.message


# -- data.features.filled -----------------------------------------------------------------------
def _wine():
    x, y = load_wine(return_X_y=True)
    return torch.tensor(x, dtype=torch.float32), torch.tensor(y)


@pytest.mark.check("doctor.data.features.filled", planted=True)
def test_missing_measurements_replaced_by_zero_warn():
    x, y = _wine()
    gone = torch.rand(len(x), generator=torch.Generator().manual_seed(0)) < 0.06
    x[gone, 12] = torch.nan  # proline, 278..1680, unmeasured in some rows ...
    x = torch.nan_to_num(x, nan=0.0)  # ... then NaN replaced by 0 to keep training finite
    f = data_finding("data.features.filled", (x, y), d_in=13, classes=3)
    assert f.status == "warn", f.message
    assert list(f.evidence["filled"]) == [12], f.evidence


@pytest.mark.check("doctor.data.features.filled", healthy=True)
def test_features_whose_real_values_reach_zero_pass():
    # breast cancer's concavity is 0 in 13 tumours, next to values of 0.0007 and up
    x, y = load_breast_cancer(return_X_y=True)
    x, y = torch.tensor(x, dtype=torch.float32), torch.tensor(y)
    f = data_finding("data.features.filled", (x, y), d_in=30, classes=2)
    assert f.status == "pass" and f.evidence["features_with_zeros"] >= 4, f.message


@pytest.mark.check("doctor.data.features.filled", healthy=True)
def test_unmodified_wine_passes():
    f = data_finding("data.features.filled", _wine(), d_in=13, classes=3)
    assert f.status == "pass", f.message


# -- data.labels.overwritten --------------------------------------------------------------------
@pytest.mark.check("doctor.data.labels.overwritten", planted=True)
def test_a_class_relabelled_as_another_warns():
    x, y = digits()
    y[y == 3] = 5  # a label map that sends two names to one id
    f = data_finding("data.labels.overwritten", (x, y))
    assert f.status == "warn", f.message
    assert f.evidence["missing_inside_range"] == [3] and f.evidence["largest_over_median"] > 1.6


@pytest.mark.check("doctor.data.labels.overwritten", planted=True)
def test_a_class_overwritten_in_training_only_warns():
    x, y = digits()
    xtr, ytr, xva, yva = x[:600], y[:600].clone(), x[600:], y[600:]
    ytr[ytr == 7] = 1
    f = data_finding("data.labels.overwritten", (xtr, ytr), val_data=(xva, yva))
    assert f.status == "warn", f.message
    assert 7 in f.evidence["held_out_only"], f.evidence


@pytest.mark.check("doctor.data.labels.overwritten", healthy=True)
def test_a_class_left_out_on_purpose_passes():
    # an experiment on nine of ten digits: class 3's rows are dropped, not relabelled
    x, y = digits()
    keep = y != 3
    f = data_finding("data.labels.overwritten", (x[keep], y[keep]))
    assert f.status == "pass" and f.evidence["missing_inside_range"] == [3], f.message


@pytest.mark.check("doctor.data.labels.overwritten", healthy=True)
def test_an_imbalanced_dataset_with_every_class_passes():
    x, y = digits()
    keep = (y != 4) | (torch.arange(len(y)) % 4 == 0)  # class 4 is rare, not missing
    f = data_finding("data.labels.overwritten", (x[keep], y[keep]))
    assert f.status == "pass", f.message


def test_every_planted_case_above_is_clean_before_it_is_planted():
    """The planted tests change one thing in data that passes every check here."""
    report = diagnose(mlp(), digits(), nn.CrossEntropyLoss(), layers=("data",))
    for check_id in ("data.rows.blank", "data.features.filled", "data.labels.overwritten"):
        assert report[check_id].status == "pass", report[check_id].message
    assert np.isfinite(report["data.rows.blank"].evidence["rows"])
