"""The design review at registration: each check has a planted design flaw and a healthy twin."""

from __future__ import annotations

import numpy as np
import pytest

from labcoat.verdicts import Plan, review

BASE = dict(metric="accuracy", column="correct", id="qid", comparison="superiority", items=1000)


def _status(plan: Plan, check: str, **pilot) -> tuple[str, str]:
    found = {f.check: f for f in review(plan, **pilot).findings}
    return found[check].status, found[check].message


#: (a plan with the flaw, its healthy twin, the check that must tell them apart)
FLAWS = [
    # one-sided MDE at 1,000 items, variance 0.5: (1.645 + 0.842) * sqrt(0.5 / 1000) = 0.0556
    (
        dict(margin=0.02, variance=0.5),
        dict(margin=0.02, variance=0.5, items=20000),
        "design.power",
    ),
    (
        dict(seeds=2, seeds_a=[0, 1], seeds_b=[2, 3]),
        dict(seeds=2, seeds_a=[0, 1], seeds_b=[1, 0]),
        "design.seeds-confounded",
    ),
    (
        dict(dataset_a="mmlu/test", dataset_b="mmlu/val"),
        dict(dataset_a="mmlu/test", dataset_b="mmlu/test"),
        "design.item-sets",
    ),
    (dict(control="none"), dict(control="negative-control"), "design.control"),
    (dict(changes=["lr", "data", "tokenizer"]), dict(changes=["lr"]), "design.interventions"),
    (
        dict(family="tasks", family_size=5, correction="none"),
        dict(family="tasks", family_size=5, correction="holm"),
        "design.family",
    ),
]


@pytest.mark.parametrize(
    "planted, check",
    [
        pytest.param(
            bad, check, marks=pytest.mark.check(f"verdicts.{check}", planted=True), id=check
        )
        for bad, _, check in FLAWS
    ],
)
def test_each_design_flaw_is_found(planted, check):
    bad, message = _status(Plan(**{**BASE, **planted}), check)
    assert bad in ("fail", "warn"), message


@pytest.mark.parametrize(
    "healthy, check",
    [
        pytest.param(
            good, check, marks=pytest.mark.check(f"verdicts.{check}", healthy=True), id=check
        )
        for _, good, check in FLAWS
    ],
)
def test_each_design_flaws_healthy_twin_passes(healthy, check):
    good, message = _status(Plan(**{**BASE, **healthy}), check)
    assert good == "pass", message


def test_underpowered_says_the_mde_the_margin_and_the_items_needed():
    status, message = _status(Plan(**{**BASE, "margin": 0.02, "variance": 0.5}), "design.power")
    assert status == "fail"
    assert message.startswith("underpowered: MDE 0.0556 (5.6 points) > margin 0.02 (2.0 points)")
    assert "n ≥ 7,729 items needed" in message


def test_the_power_check_skips_without_a_variance_and_uses_a_pilot():
    assert _status(Plan(**{**BASE, "margin": 0.02}), "design.power")[0] == "skip"
    rng = np.random.default_rng(0)
    ids = [str(i) for i in range(200)]
    skill = rng.random(200)
    a = {"qid": ids, "correct": (rng.random(200) < skill).astype(int)}
    b = {"qid": ids, "correct": (rng.random(200) < skill).astype(int)}
    status, message = _status(
        Plan(**{**BASE, "margin": 0.02}), "design.power", pilot_a=a, pilot_b=b
    )
    assert status == "fail" and "underpowered" in message
    # a pilot that scores other items than the other arm: arms on different item sets
    b_other = {"qid": [str(i + 50) for i in range(200)], "correct": b["correct"]}
    status, _ = _status(Plan(**BASE), "design.item-sets", pilot_a=a, pilot_b=b_other)
    assert status == "fail"
    assert _status(Plan(**BASE), "design.item-sets", pilot_a=a, pilot_b=b)[0] == "pass"
