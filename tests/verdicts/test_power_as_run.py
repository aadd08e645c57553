"""What the data as run could detect, and the family a verdict is adjusted within.

A verdict states its realized MDE against the margin ("underpowered as run" when the data
could not have confirmed the hypothesis at the planned power), and a family's adjustment
counts every member registered in the ledger, whatever size each plan declared."""

from __future__ import annotations

import json

import numpy as np
import pytest

from labcoat import verdicts
from labcoat.ledger import Ledger
from labcoat.verdicts import Plan, analyse
from tests.clustered_evals import paired_clustered, write_csv

CLUSTERED = Plan(
    metric="accuracy",
    column="correct",
    id="qid",
    comparison="superiority",
    margin=0.02,
    items=12040,
    cluster="category",
)


def test_a_verdict_on_clustered_data_says_it_was_underpowered_as_run():
    a, b = paired_clustered(np.random.default_rng(0), [860] * 14)
    result = analyse(CLUSTERED, b, a)
    assert result.mde > 0.03  # 14 clusters: t(13) and a design effect of ~5
    assert result.underpowered
    assert result.power_line == (
        f"underpowered as run: MDE {result.mde:.3g} ({100 * result.mde:.1f} points) > margin "
        "0.02 (2.0 points)"
    )
    assert result.power_line in result.summary()
    assert result.to_dict()["underpowered"] is True


def test_a_well_powered_verdict_says_its_mde_is_within_the_margin():
    a, b = paired_clustered(np.random.default_rng(0), [60] * 200, shift_sd=0.0)
    result = analyse(CLUSTERED.revised(items=12000), b, a)
    assert result.mde < 0.02 and not result.underpowered
    assert result.power_line.startswith(f"MDE {result.mde:.3g}") and "≤ margin 0.02" in (
        result.power_line
    )
    assert "underpowered" not in result.summary()


def test_the_cli_verdict_prints_the_realized_mde_against_the_margin(cli, tmp_path):
    a, b = paired_clustered(np.random.default_rng(0), [860] * 14)
    fa, fb = write_csv(b, tmp_path / "a.csv"), write_csv(a, tmp_path / "b.csv")
    ledger = tmp_path / "l.db"
    fields = [
        f"{k}={v}"
        for k, v in CLUSTERED.to_dict().items()
        if k in ("metric", "column", "id", "comparison", "margin", "items", "cluster")
    ]
    added = cli(
        "ledger",
        "add",
        "gain",
        "--ledger",
        ledger,
        "--predict",
        "B > A",
        *[x for f in fields for x in ("--plan-field", f)],
        "--json",
    )
    assert added.code == 0, added.err
    entry = json.loads(added.out)["id"]
    got = cli("verdict", entry, "--a", fa, "--b", fb, "--ledger", ledger)
    assert "underpowered as run: MDE" in " ".join(got.out.split()), got.out


def _arms(p_a=0.62, p_b=0.5, n=400, seed=0):
    rng = np.random.default_rng(seed)
    ids = [f"q{i}" for i in range(n)]
    return (
        {"qid": ids, "correct": (rng.random(n) < p_a).astype(int)},
        {"qid": ids, "correct": (rng.random(n) < p_b).astype(int)},
    )


FAMILY = Plan(
    metric="accuracy",
    column="correct",
    id="qid",
    comparison="superiority",
    items=400,
    family="tasks",
)


@pytest.mark.parametrize("declared", [1, 5])
def test_a_family_is_adjusted_as_every_member_it_registered(tmp_path, declared):
    """Five plans share a family: declared as 1 each (planted) the adjustment still counts
    five, and the size deviation is named; declared as 5 (the twin) the same, with none."""
    a, b = _arms()
    with Ledger(tmp_path / "l.db") as book:
        plan = FAMILY.revised(family_size=declared)
        entries = [
            verdicts.register(book, f"task {i}", predict="A > B", plan=plan).id for i in range(5)
        ]
        first = verdicts.verdict(book, entries[0], a=a, b=b)
    alone = analyse(FAMILY.revised(family=None), a, b)
    assert first.pvalue == pytest.approx(alone.pvalue)
    assert first.pvalue_adjusted == pytest.approx(min(1.0, 5 * alone.pvalue))  # Holm, 4 × p = 1
    assert first.mde > alone.mde  # powered at α / 5
    kinds = {d["kind"] for d in first.deviations}
    assert kinds == ({"family"} if declared == 1 else set())
    if declared == 1:
        assert first.deviations[0]["planned"] == 1 and first.deviations[0]["observed"] == 5
