"""Power analysis: Miller's worked numbers (Eq 9, Eq 10) and pilot estimates."""

from __future__ import annotations

import numpy as np
import pytest

from labcoat.errors import InputError
from labcoat.stats import (
    clustered_mde,
    clustered_power,
    clustered_sample_size,
    compare,
    design_effect,
    estimate_design_effect,
    mean,
    minimum_detectable_effect,
    power_at,
    sample_size,
    variance_components,
)

smp = pytest.importorskip("statsmodels.stats.power")


def test_eq9_example_needs_969_questions():
    # omega^2 = 1/9, delta = 3 points, alpha = 0.05, power = 0.8
    res = sample_size(0.03, 1 / 9)
    assert res.n == 969 and isinstance(res.n, int)
    assert res.n_exact == pytest.approx(968.997, abs=1e-3)  # the formula's value, beside it
    assert sample_size(0.0301, 1 / 9).n == int(np.ceil(sample_size(0.0301, 1 / 9).n_exact))


def test_eq10_example_resampling_shrinks_the_mde():
    # n = 198 questions, omega^2 = 1/9, sigma^2 = 1/6 per model: K = 1 -> 13.3 %, K = 10 -> 7.6 %
    one = minimum_detectable_effect(198, 1 / 9, sigma2_a=1 / 6, sigma2_b=1 / 6, k_a=1, k_b=1)
    ten = minimum_detectable_effect(198, 1 / 9, sigma2_a=1 / 6, sigma2_b=1 / 6, k_a=10, k_b=10)
    assert round(one.mde, 3) == 0.133
    assert round(ten.mde, 3) == 0.076


def test_n_and_mde_invert_each_other():
    res = sample_size(0.05, 0.2, sigma2_a=0.1, sigma2_b=0.05, k_a=3, k_b=2, alpha=0.01, power=0.9)
    back = minimum_detectable_effect(
        res.n_exact, 0.2, sigma2_a=0.1, sigma2_b=0.05, k_a=3, k_b=2, alpha=0.01, power=0.9
    )
    assert back.mde == pytest.approx(0.05)
    assert (
        res.n > sample_size(0.05, 0.2, sigma2_a=0.1, sigma2_b=0.05, k_a=3, k_b=2).n
    )  # stricter -> more


def test_power_is_achieved_in_simulation():
    """A paired z-test at the Eq 9 sample size rejects about 80 % of the time."""
    rng = np.random.default_rng(0)
    omega2, delta = 0.25, 0.05
    n = sample_size(delta, omega2).n
    d = rng.normal(delta, np.sqrt(omega2), size=(4000, n))
    z = d.mean(axis=1) / (d.std(axis=1, ddof=1) / np.sqrt(n))
    assert abs(np.mean(np.abs(z) > 1.959964) - 0.8) < 0.03


def test_variance_components_from_pilot_answers():
    rng = np.random.default_rng(1)
    n, k = 20000, 6
    pa = rng.uniform(0.2, 0.9, size=n)
    pb = np.clip(pa + rng.normal(0, 0.25, size=n), 0, 1)
    a = (rng.uniform(size=(n, k)) < pa[:, None]).astype(float)
    b = (rng.uniform(size=(n, k)) < pb[:, None]).astype(float)
    est = variance_components(a, b)
    assert est.sigma2_a == pytest.approx(np.mean(pa * (1 - pa)), rel=0.05)
    assert est.sigma2_b == pytest.approx(np.mean(pb * (1 - pb)), rel=0.05)
    assert est.omega2 == pytest.approx(np.var(pa - pb), rel=0.1)
    assert est.k_a == k and est.n == n


def test_power_at_an_effect_matches_statsmodels():
    sd = np.sqrt(1 / 9)
    for alt, sm_alt in (("two-sided", "two-sided"), ("one-sided", "larger")):
        for n, effect in ((969, 0.03), (200, 0.05), (50, 0.01)):
            res = power_at(effect, n, 1 / 9, alternative=alt)
            ref = smp.NormalIndPower().power(effect / sd, n, 0.05, ratio=0, alternative=sm_alt)
            assert res.power == pytest.approx(ref, rel=1e-9), (alt, n, effect)


def test_one_sided_needs_fewer_questions_as_statsmodels_solves():
    one = sample_size(0.03, 1 / 9, alternative="one-sided")
    ref = smp.NormalIndPower().solve_power(
        0.03 / np.sqrt(1 / 9), alpha=0.05, power=0.8, ratio=0, alternative="larger"
    )
    assert one.n_exact == pytest.approx(ref, rel=1e-6)
    assert one.n < sample_size(0.03, 1 / 9).n


def test_design_effect_multiplies_the_questions_needed():
    deff = design_effect(0.1, 11)
    assert deff == pytest.approx(2.0)
    clustered = sample_size(0.03, 1 / 9, design_effect=deff)
    assert clustered.n_exact == pytest.approx(2 * sample_size(0.03, 1 / 9).n_exact)
    assert minimum_detectable_effect(969, 1 / 9, design_effect=deff).mde == pytest.approx(
        np.sqrt(2) * minimum_detectable_effect(969, 1 / 9).mde
    )


def _clustered(rng, n_clusters, size, icc):
    effect = rng.normal(0, np.sqrt(icc), size=(n_clusters, 1))
    return (effect + rng.normal(0, np.sqrt(1 - icc), size=(n_clusters, size))).reshape(-1)


def test_design_effect_from_a_pilot_recovers_the_icc_and_the_variance_ratio():
    rng = np.random.default_rng(3)
    clusters = np.repeat(np.arange(400), 10)
    x = _clustered(rng, 400, 10, 0.2)
    est = estimate_design_effect(x, clusters)
    assert (
        est.icc == pytest.approx(0.2, abs=0.06) and est.cluster_size == 10
    )  # SE of the estimate ~0.016 and est.n_clusters == 400
    assert est.design_effect == pytest.approx(1 + 9 * est.icc)
    ratio = (mean(x, clusters).se / mean(x).se) ** 2  # what clustering does to this very sample
    assert est.design_effect == pytest.approx(ratio, rel=0.1)
    independent = estimate_design_effect(rng.normal(size=4000), clusters)  # the healthy twin
    assert independent.icc < 0.03 and independent.design_effect < 1.3


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: sample_size(0, 0.1), "`mde`"),
        (lambda: sample_size(0.03, -1), "`omega2`"),
        (lambda: sample_size(0.03, 0.0), "all 0"),
        (lambda: sample_size(1e-300, 0.1), "too small for these variances"),
        (lambda: minimum_detectable_effect(100, 0.1, k_a=0), "`k_a`"),
        (lambda: minimum_detectable_effect(100, 0.1, power=1.2), "`power`"),
        (lambda: variance_components(np.ones((3, 2)), np.ones((4, 2))), "same questions"),
        (lambda: sample_size(0.03, 0.1, design_effect=0.5), "at least 1"),
        (lambda: sample_size(0.03, 0.1, alternative="left"), "`alternative`"),
        (lambda: design_effect(1.5, 10), "`icc`"),
        (lambda: estimate_design_effect([1.0, 0.0, 1.0], [0, 1, 2]), "at least 2 clusters"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(InputError, match=match):
        call()


# -- a pilot's clusters projected to the planned design (issue 34) ---------------------------


def test_the_design_effect_is_projected_to_the_planned_cluster_sizes():
    """A pilot of ~43 questions a cluster sees a design effect near 1 that 860 a cluster
    multiply: the projection uses the pilot's ICC at the planned sizes, not the pilot's own."""
    from tests.clustered_evals import paired_clustered

    rng = np.random.default_rng(0)
    a, b = paired_clustered(rng, [860] * 14)
    d = (b["correct"] - a["correct"]).astype(float)
    full = estimate_design_effect(d, a["category"])
    pick = rng.choice(d.size, 600, replace=False)
    pilot = estimate_design_effect(d[pick], a["category"][pick])
    assert pilot.cluster_size == pytest.approx(600 / 14)
    assert pilot.at(d.size) == pytest.approx(1 + (d.size / 14 - 1) * pilot.icc, rel=0.05)
    assert pilot.at(d.size) > 3 * pilot.design_effect  # the pilot's own understates it
    assert pilot.icc <= pilot.icc_upper and full.icc <= pilot.icc_upper
    assert full.at(d.size) == pytest.approx(full.design_effect)
    # on the full run the projection is the CR1 test's own MDE (one-sided 5 %, t(13))
    realized = compare(b["correct"], a["correct"], a["category"], 0.90)
    projected = clustered_mde(d.size, d.var(ddof=1), full, alternative="one-sided")
    assert projected == pytest.approx(realized.mde, rel=0.02)


def test_the_icc_upper_bound_covers_the_truth_at_its_level():
    rng = np.random.default_rng(1)
    clusters = np.repeat(np.arange(14), 40)
    covered = [
        estimate_design_effect(_clustered(rng, 14, 40, 0.05), clusters).icc_upper >= 0.05
        for _ in range(400)
    ]
    assert 0.92 <= np.mean(covered) <= 0.99  # one-sided 95 % (Searle's F interval)


def test_no_number_of_questions_in_too_few_clusters_reaches_a_small_mde():
    rng = np.random.default_rng(2)
    clusters = np.repeat(np.arange(14), 100)
    est = estimate_design_effect(_clustered(rng, 14, 100, 0.2), clusters)
    n = clustered_sample_size(0.5, 1.0, est)
    assert np.isfinite(n) and clustered_mde(n, 1.0, est) == pytest.approx(0.5)
    assert clustered_sample_size(0.05, 1.0, est) == np.inf
    with pytest.raises(InputError, match="sample more clusters"):
        clustered_power(1.0, est, mde=0.05)


def test_unclustered_questions_project_no_design_effect():
    """The healthy twin: independent questions in many clusters keep a design effect near 1
    at the planned size, and the upper bound stays close."""
    rng = np.random.default_rng(4)
    clusters = np.repeat(np.arange(200), 20)
    est = estimate_design_effect(rng.normal(size=4000), clusters)
    assert est.at(8000) < 1.5 and est.at(8000, upper=True) < 2.0  # noise of ~3 SE at most


def _clustered_pilot_files(tmp_path, shift_sd, sizes=(860,) * 14):
    from tests.clustered_evals import paired_clustered, sample, write_csv

    rng = np.random.default_rng(5)
    a, b = paired_clustered(rng, list(sizes), shift_sd=shift_sd)
    pick = rng.choice(len(a["qid"]), 2000, replace=False)
    return (
        write_csv(sample(b, pick), tmp_path / "b.csv"),
        write_csv(sample(a, pick), tmp_path / "a.csv"),
    )


def test_stats_power_cluster_scales_n_to_the_cluster_sizes(cli, tmp_path):
    import json

    fb, fa = _clustered_pilot_files(tmp_path, 0.04)
    pilot = ["--pilot-a", fb, "--pilot-b", fa, "--on", "qid", "--score", "correct"]
    got = cli("stats", "power", *pilot, "--cluster", "category", "--n", 12040, "--json")
    assert got.code == 0, got.err
    res = json.loads(got.out)
    clusters = res["clustering"]
    assert res["df"] == 13 and clusters["n_clusters"] == 14
    assert res["design_effect"] == pytest.approx(1 + (860 - 1) * clusters["icc"], rel=0.05)
    assert res["design_effect"] > 2 * clusters["design_effect"]  # not the pilot's own
    assert clusters["upper"] >= res["mde"]
    plain = json.loads(cli("stats", "power", *pilot, "--n", 12040, "--json").out)
    assert res["mde"] > 1.3 * plain["mde"]
    needed = json.loads(
        cli("stats", "power", *pilot, "--cluster", "category", "--mde", res["mde"], "--json").out
    )
    assert needed["n_exact"] == pytest.approx(12040, rel=1e-6)  # n and MDE invert each other
    floor = cli("stats", "power", *pilot, "--cluster", "category", "--mde", 0.002)
    assert floor.code == 2 and "sample more clusters" in floor.err


def test_stats_power_cluster_on_unclustered_data_needs_no_more(cli, tmp_path):
    import json

    fb, fa = _clustered_pilot_files(tmp_path, 0.0, sizes=(40,) * 200)
    pilot = ["--pilot-a", fb, "--pilot-b", fa, "--on", "qid", "--score", "correct"]
    got = json.loads(
        cli("stats", "power", *pilot, "--cluster", "category", "--n", 4000, "--json").out
    )
    plain = json.loads(cli("stats", "power", *pilot, "--n", 4000, "--json").out)
    assert got["design_effect"] < 1.5
    assert got["mde"] == pytest.approx(plain["mde"], rel=0.2)


EVALS = (
    __import__("pathlib").Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "evals"
)


def test_stats_power_cluster_on_mmlu_pro_matches_the_full_datas_mde(cli):
    """Llama-3.1-8B base vs Instruct on MMLU-Pro, 14 categories: the full data as pilot give
    the MDE that `stats compare --cluster category` reports for all 12,032 items."""
    import json

    a, b = EVALS / "mmlupro_instruct.csv", EVALS / "mmlupro_base.csv"
    if not (a.exists() and b.exists()):
        pytest.skip("../shared/data/evals is absent")
    common = ["--on", "question_id", "--score", "correct"]
    realized = json.loads(
        cli("stats", "compare", a, b, *common, "--cluster", "category", "--no-ledger", "--json").out
    )
    got = cli(
        "stats",
        "power",
        "--pilot-a",
        a,
        "--pilot-b",
        b,
        *common,
        "--cluster",
        "category",
        "--n",
        12032,
        "--json",
    )
    assert got.code == 0, got.err
    res = json.loads(got.out)
    assert res["mde"] == pytest.approx(realized["mde"], rel=0.2)
    assert res["design_effect"] > 5
