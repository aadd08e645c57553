"""``audit.labels`` on labels a model confirms passes; planted flips warn (tests/audit/
test_labels.py holds the recall and precision of the flags)."""

from __future__ import annotations

import numpy as np
import pytest

from labcoat.audit import label_issues


def _confident(y: np.ndarray, k: int = 3) -> np.ndarray:
    """Predicted probabilities that put 0.9 on each given label."""
    probs = np.full((len(y), k), 0.1 / (k - 1))
    probs[np.arange(len(y)), y] = 0.9
    return probs


@pytest.mark.check("audit.labels", healthy=True)
def test_labels_the_model_agrees_with_pass():
    y = np.arange(90) % 3
    result = label_issues(y, _confident(y), ledger=False)
    assert result.count == 0 and result.findings[0].status == "pass"


@pytest.mark.check("audit.labels", planted=True)
def test_labels_flipped_against_a_confident_model_warn():
    y = np.arange(90) % 3
    flipped = y.copy()
    flipped[:6] = (y[:6] + 1) % 3  # six labels the model confidently disagrees with
    result = label_issues(flipped, _confident(y), ledger=False)
    assert set(result.indices) == set(range(6)) and result.findings[0].status == "warn"
