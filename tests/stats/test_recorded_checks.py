"""The stats checks a stored result is filed under (``labcoat.stats.record``): each warns (or,
for a gate, fails) on a planted problem and passes its healthy twin."""

from __future__ import annotations

import numpy as np
import pytest

from labcoat import stats
from labcoat.stats.compare import compare_excluding


def finding(result, check: str):
    """The result's finding for ``check``: from its ``findings`` where results carry them,
    else as the ledger would store it."""
    found = getattr(result, "findings", None)
    if found is None:
        from labcoat.stats.record import as_finding

        found = [as_finding(result)]
    (one,) = [f for f in found if f.check == check]
    return one


def scores(p: float, n: int = 600, seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).random(n) < p).astype(float)


A, B = scores(0.8, seed=0), scores(0.5, seed=1)


@pytest.mark.check("stats.mean", planted=True)
def test_a_mean_of_ten_yes_no_scores_warns():
    f = finding(stats.mean(np.r_[np.ones(9), 0]), "stats.mean")
    assert f.status == "warn" and "wilson" in str(f.evidence).lower()


@pytest.mark.check("stats.mean", healthy=True)
def test_a_mean_of_600_scores_passes():
    assert finding(stats.mean(A), "stats.mean").status == "pass"


@pytest.mark.check("stats.compare", planted=True)
def test_a_comparison_on_twelve_questions_warns():
    f = finding(stats.compare(A[:12], B[:12]), "stats.compare")
    assert f.status == "warn" and "12 matched questions" in str(f.evidence)


@pytest.mark.check("stats.compare", healthy=True)
def test_a_comparison_on_600_questions_passes():
    assert finding(stats.compare(A, B), "stats.compare").status == "pass"


@pytest.mark.check("stats.leaderboard", planted=True)
def test_a_leaderboard_on_twelve_questions_warns():
    board = stats.leaderboard({"a": A[:12], "b": B[:12]})
    assert finding(board, "stats.leaderboard").status == "warn"


@pytest.mark.check("stats.leaderboard", healthy=True)
def test_a_leaderboard_on_600_questions_passes():
    assert finding(stats.leaderboard({"a": A, "b": B}), "stats.leaderboard").status == "pass"


@pytest.mark.check("stats.gate", planted=True)
def test_a_gate_for_a_worse_model_fails():
    f = finding(stats.gate(B, A, margin=0.02), "stats.gate")
    assert f.status == "fail" and f.evidence["decision"] == "REJECT"


@pytest.mark.check("stats.gate", healthy=True)
def test_a_gate_for_a_better_model_passes():
    assert finding(stats.gate(A, B, margin=0.02), "stats.gate").status == "pass"


IDS = np.array([f"q{i}" for i in range(600)])


@pytest.mark.check("stats.compare.exclude", planted=True)
def test_excluding_all_but_twelve_questions_warns():
    result = compare_excluding(A, B, IDS[12:], ids_a=IDS, ids_b=IDS)
    assert finding(result, "stats.compare.exclude").status == "warn"


@pytest.mark.check("stats.compare.exclude", healthy=True)
def test_excluding_a_few_questions_passes():
    result = compare_excluding(A, B, IDS[:5], ids_a=IDS, ids_b=IDS)
    assert finding(result, "stats.compare.exclude").status == "pass"
