"""The evals' names renamed to labcoat's vocabulary keep working one release, and warn."""

from __future__ import annotations

import numpy as np
import pytest

from labcoat.evals import History, estimate, plan_subset


@pytest.fixture(scope="module")
def history():
    rng = np.random.default_rng(0)
    return History.from_matrix((rng.random((80, 6)) < 0.6).astype(float))


def test_an_estimate_is_a_mean_as_every_result_calls_it(history):
    plan = plan_subset(history, 30, method="random")
    est = estimate({k: 1.0 for k in plan.subset}, plan)
    assert est.mean == 1.0 and est.to_dict()["mean"] == 1.0
    with pytest.warns(DeprecationWarning, match=r"Estimate.score is deprecated.*use .mean"):
        assert est.score == est.mean
    assert est.to_dict()["score"] == est.mean  # the old key, one release


def test_the_items_planned_are_the_subset_size(history):
    plan = plan_subset(history, 30, method="random")
    assert plan.subset_size == 30 == len(plan.subset) and plan.n_items == 80
    with pytest.warns(DeprecationWarning, match="`budget` is deprecated.*`subset_size`"):
        old = plan_subset(history, budget=30, method="random")
    assert old.subset == plan.subset
    with pytest.warns(DeprecationWarning, match=r"SubsetPlan.budget is deprecated"):
        assert plan.budget == 30
    assert plan.to_dict()["subset_size"] == plan.to_dict()["budget"] == 30
    assert "reps" not in plan_subset(history, 30, n_resamples=2).calibration


def test_the_cli_takes_subset_size_and_says_which_option_replaced_budget(cli, tmp_path):
    rng = np.random.default_rng(1)
    y = (rng.random((60, 6)) < 0.6).astype(int)
    path = tmp_path / "h.csv"
    path.write_text(
        ",".join(["item"] + [f"m{j}" for j in range(6)]) + "\n"
        + "".join(",".join([f"q{i}", *map(str, y[i])]) + "\n" for i in range(60))
    )  # fmt: skip
    new = cli("evals", "plan", path, "--subset-size", "20", "--json")
    assert new.code == 0 and new.err == ""
    old = cli("evals", "plan", path, "--budget", "20", "--json")
    assert old.code == 0 and "--budget is deprecated; use --subset-size" in old.err
    missing = cli("evals", "plan", path)
    assert missing.code == 2 and "--subset-size" in missing.err
