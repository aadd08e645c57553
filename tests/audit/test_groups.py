"""Group leakage: a patient on both sides of a split."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_diabetes
from sklearn.model_selection import GroupShuffleSplit, ShuffleSplit

from labcoat.audit import groups
from labcoat.errors import InputError


@pytest.fixture(scope="module")
def visits():
    """Diabetes rows as visits of 120 patients (each patient several rows)."""
    x, _ = load_diabetes(return_X_y=True)
    rng = np.random.default_rng(0)
    return rng.integers(0, 120, len(x))


@pytest.mark.check("audit.groups", planted=True)
def test_row_split_leaks_patients(visits):
    train, test = next(ShuffleSplit(test_size=0.25, random_state=0).split(visits))
    result = groups(visits[train], visits[test], ledger=False)
    truth = set(visits[train].tolist()) & set(visits[test].tolist())
    assert {int(g.group) for g in result.shared} == truth
    assert all(g.n_a == (visits[train] == int(g.group)).sum() for g in result.shared)
    assert result.findings[0].status == "fail"


@pytest.mark.check("audit.groups", healthy=True)
def test_group_split_passes(visits):
    train, test = next(
        GroupShuffleSplit(test_size=0.25, random_state=0).split(visits, groups=visits)
    )
    result = groups(visits[train], visits[test], ledger=False)
    assert result.n_shared == 0 and result.findings[0].status == "pass"


def test_ids_compare_as_text():
    assert groups([1, 2.0, "3"], ["1", "2", 4], ledger=False).n_shared == 2


def test_missing_group_id():
    with pytest.raises(InputError, match="row 1 has no group id"):
        groups(["a", None], ["b"], ledger=False)
