"""The design review at registration: each check has a planted design flaw and a healthy twin."""

from __future__ import annotations

from pathlib import Path

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
    unbounded = {**BASE, "metric": "bleu", "column": "bleu", "margin": 0.02}
    assert _status(Plan(**unbounded), "design.power")[0] == "skip"
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


# -- the design effect projected to the planned clusters, and a proportion's bounds (issue 34) --

CLUSTERED = dict(
    BASE, metric="accuracy", items=12040, margin=0.02, cluster="category", sides="one-sided"
)


def _pilot(rng, sizes, size, shift_sd=0.04):
    from tests.clustered_evals import paired_clustered, sample

    a, b = paired_clustered(rng, sizes, shift_sd=shift_sd)
    pick = rng.choice(len(a["qid"]), size, replace=False)
    return sample(b, pick), sample(a, pick)


def _power_finding(plan: Plan, **pilot):
    return {f.check: f for f in review(plan, **pilot).findings}["design.power"]


@pytest.mark.check("verdicts.design.power", planted=True)
def test_a_pilots_small_clusters_do_not_pass_a_design_its_large_clusters_fail():
    """600 pilot items in 14 clusters (~43 each) see a design effect near 1; the planned
    12,040 (~860 each) do not: the review projects the ICC instead of passing the plan."""
    from labcoat.stats import estimate_design_effect, minimum_detectable_effect

    pa, pb = _pilot(np.random.default_rng(0), [860] * 14, 600)
    d = (pa["correct"] - pb["correct"]).astype(float)
    own = estimate_design_effect(d, pa["category"]).design_effect
    as_before = minimum_detectable_effect(
        12040, d.var(ddof=1), design_effect=own, alternative="one-sided"
    ).mde
    assert as_before < 0.02  # what the pilot's own design effect would have passed
    found = _power_finding(Plan(**CLUSTERED), pilot_a=pa, pilot_b=pb)
    assert found.status in ("fail", "warn"), found.message
    assert "14 clusters (~860 a cluster)" in found.message
    assert found.evidence["design_effect_upper"] > 5 * found.evidence["pilot_design_effect"]
    assert found.evidence["mde_upper"] > 0.02


@pytest.mark.check("verdicts.design.power", healthy=True)
def test_a_pilot_of_unclustered_items_projects_no_design_effect_and_passes():
    pa, pb = _pilot(np.random.default_rng(1), [40] * 200, 4000, shift_sd=0.0)
    plan = Plan(**{**CLUSTERED, "items": 8000, "margin": 0.03})
    found = _power_finding(plan, pilot_a=pa, pilot_b=pb)
    assert found.status == "pass", found.message
    assert found.evidence["design_effect"] < 1.5 and found.evidence["clusters"] == 200


@pytest.mark.check("verdicts.design.power", planted=True, healthy=True)
def test_a_pilot_that_cannot_estimate_the_icc_says_so_and_its_twin_without_clusters():
    pa, pb = _pilot(np.random.default_rng(2), [40] * 200, 4000, shift_sd=0.0)
    one = {k: v for k, v in pa.items()}
    one["category"] = np.array(["all"] * len(one["qid"]))
    plan = Plan(**{**CLUSTERED, "items": 8000, "margin": 0.03})
    found = _power_finding(plan, pilot_a=one, pilot_b=pb)
    assert found.status == "warn", found.message
    assert "design effect of the clusters by 'category' is unknown" in found.message
    assert "all in one cluster" in found.message and found.evidence["clusters_unknown"]
    unclustered = _power_finding(plan.revised(cluster=None), pilot_a=one, pilot_b=pb)
    assert unclustered.status == "pass", unclustered.message
    stated = _power_finding(plan.revised(design_effect=1.2), pilot_a=one, pilot_b=pb)
    assert stated.status == "pass" and "unknown" not in stated.message


@pytest.mark.check("verdicts.design.power", planted=True, healthy=True)
def test_without_a_variance_a_proportions_bounds_still_decide():
    """100 items cannot detect 2 points in 0/1 answers at any variance such a difference can
    have; 20,000 can at the worst case; 1,000 cannot be told without a pilot."""
    plan = Plan(**{**BASE, "items": 100, "margin": 0.02})
    face = _power_finding(plan)
    assert face.status == "fail" and face.message.startswith("underpowered on its face"), (
        face.message
    )
    assert "least variance" in face.message and face.evidence["needed"] > 100
    enough = _power_finding(plan.revised(items=20000))
    assert enough.status == "pass", enough.message
    unknown = _power_finding(plan.revised(items=1000))
    assert unknown.status == "warn" and "register with a pilot" in unknown.message


EVALS = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "evals"


def _mmlu_pro():
    import csv

    a, b = EVALS / "mmlupro_instruct.csv", EVALS / "mmlupro_base.csv"
    if not (a.exists() and b.exists()):
        pytest.skip("../shared/data/evals is absent")

    def read(path):
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        return {
            "qid": [r["question_id"] for r in rows],
            "category": np.array([r["category"] for r in rows]),
            "correct": np.array([int(r["correct"]) for r in rows]),
        }

    return read(a), read(b)


def test_on_mmlu_pro_the_projected_mde_is_the_full_datas_and_a_small_pilot_does_not_pass():
    """Llama-3.1-8B Instruct vs base, 14 categories: with the full data as pilot the review's
    projected MDE is within 20 % of the verdict's on all 12,032 items; a pilot of 600 random
    items does not pass a 2-point margin the full data cannot confirm."""
    from labcoat.verdicts import analyse
    from tests.clustered_evals import sample

    a, b = _mmlu_pro()
    plan = Plan(**{**CLUSTERED, "items": 12032, "id": "qid"})
    realized = analyse(plan, a, b)
    assert realized.underpowered  # the 3.1-point MDE against a 2-point margin
    full = _power_finding(plan, pilot_a=a, pilot_b=b)
    assert full.evidence["mde"] == pytest.approx(realized.mde, rel=0.2)
    assert full.status == "fail"
    rng = np.random.default_rng(0)
    for _ in range(5):
        pick = rng.choice(len(a["qid"]), 600, replace=False)
        small = _power_finding(plan, pilot_a=sample(a, pick), pilot_b=sample(b, pick))
        assert small.status in ("fail", "warn"), small.message
