"""Sharp as well as honest: the interval score, replicates, evidence before choice, downstream
jumps and refusals, and one-line errors for runs that cannot make a law."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from labcoat import scale
from labcoat.scale.calibrate import Pairs
from labcoat.scale.downstream import PredictabilityWarning, fit_downstream
from labcoat.scale.score import interval_score


def test_the_interval_score_charges_width_and_misses():
    # Gneiting & Raftery (2007): width + 2/α × the distance outside, here per unit of the value
    assert interval_score(0.9, 1.1, 1.0, 0.95) == pytest.approx(0.2)
    assert interval_score(0.5, 1.5, 1.0, 0.95) == pytest.approx(1.0)  # covers, but wide
    assert interval_score(0.9, 0.95, 1.0, 0.95) == pytest.approx(0.05 + 40 * 0.05)  # a miss
    # a band as wide as the error it needs beats one that buys coverage with width
    rng = np.random.default_rng(0)
    y = np.exp(rng.normal(0, 0.02, 2000))
    sharp = interval_score(np.exp(-0.04), np.exp(0.04), y, 0.95).mean()
    wide = interval_score(np.exp(-0.4), np.exp(0.4), y, 0.95).mean()
    assert sharp < wide / 5


def _seeded(seeds=3, sizes=9, noise=0.01, seed=0):
    x = np.repeat(50 * 2.0 ** np.arange(sizes), seeds)
    rng = np.random.default_rng(seed)
    return x, (0.3 + 2 * x**-0.4) * np.exp(rng.normal(0, noise, x.size))


def test_seeds_at_one_size_are_replicates_scored_as_their_mean():
    x, L = _seeded()
    result = scale.backtest(x, None, L, form="m2", holdout="n", top=6, n_resamples=0)
    assert result.scored == "seed means" and result.n_holdout == 6
    assert [p["seeds"] for p in result.points] == [3, 3]
    for p, size in zip(result.points, (50 * 2.0**7, 50 * 2.0**8)):
        runs = L[x == size]
        assert p["observed"] == pytest.approx(np.exp(np.log(runs).mean()))
        # one new run scatters as the seeds do: its interval is wider than the mean's
        (lo, hi), (mlo, mhi) = p["interval"], p["mean_interval"]
        assert lo < mlo < mhi < hi
    assert result.fit.backtest_pairs().seed_df == 14  # 21 fitted runs at 7 sizes: 21 − 7
    assert 0.005 < result.fit.backtest_pairs().seed_sd < 0.02
    x1, L1 = _seeded(seeds=1)
    single = scale.backtest(x1, None, L1, form="m2", holdout="n", top=2, n_resamples=0)
    assert single.scored == "runs" and "mean_interval" not in single.points[0]
    assert single.interval_score > 0 and np.isfinite(single.interval_score)
    assert single.to_dict()["points"][0]["interval_score"] > 0


@pytest.mark.check("scale.choice", planted=True)
@pytest.mark.check("scale.choice", healthy=True)
def test_auto_says_when_it_had_too_few_origins_to_choose():
    x, L = _seeded(seeds=1, sizes=7)  # m1 alone has 3 origins: no choice
    few = scale.fit(x, None, L, form="auto", n_resamples=0, ledger=False)
    found = {f.check: f for f in few.findings}["scale.choice"]
    sel = few.selection
    assert (
        sel["evidence"] == "thin" and found.status == "warn" and "could not choose" in found.message
    )
    # the stated rule: an average of the forms the sizes support, weighted by the origins they
    # have, not a choice; the heaviest form's band, widened by the forms' spread
    assert "averages the forms the sizes support" in sel["why"] and "not a choice" in sel["why"]
    assert sel["chosen"] == max(sel["weights"], key=sel["weights"].get)
    assert sum(sel["weights"].values()) == pytest.approx(1.0)
    assert "broken" not in sel["weights"]  # 5 parameters on 7 sizes: left out
    assert "broken" in sel["why"] and "left out" in sel["why"]
    x = np.logspace(2, 5, 14)
    L = (2 + 50 * x**-0.5) * np.exp(np.random.default_rng(1).normal(0, 0.01, x.size))
    enough = scale.fit(x, None, L, form="auto", n_resamples=0, ledger=False)
    healthy = {f.check: f for f in enough.findings}["scale.choice"]
    assert enough.selection["evidence"] == "backtest" and healthy.status == "pass"
    assert sum(enough.selection["weights"].values()) == pytest.approx(1.0)


def test_a_flat_curves_band_is_narrow_when_evidence_is_thin():
    # planted: a learning curve that has flattened (0.78 ± 0.2 % per seed, 7 sizes × 3 seeds,
    # as a user's loss at its floor): the forms agree, so the band is the prior's error at
    # that distance from the frontier's tiny residuals, not the spread of the forms
    x = np.repeat(50 * 2.0 ** np.arange(7), 3)
    rng = np.random.default_rng(3)
    L = (0.78 + 0.5 * x**-1.0) * np.exp(rng.normal(0, 0.002, x.size))
    fit = scale.fit(x, None, L, form="auto", n_resamples=0, ledger=False)
    assert fit.selection["evidence"] == "thin" and len(fit.selection["weights"]) > 1
    new = 50 * 2.0 ** np.arange(7, 10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = fit.predict(new)
    assert np.all(np.abs(p.loss / 0.78 - 1) < 0.005)
    assert np.all(p.interval[0] < 0.78) and np.all(0.78 < p.interval[1])
    width = (p.interval[1] - p.interval[0]) / p.loss
    assert width[0] < 0.15 and np.all(np.diff(width) > 0)  # one doubling out: within ±7.5 %
    calibration = fit.calibration()
    assert calibration.method == "prior" and calibration.upper[0] < 0.01  # the frontier's


def test_a_form_whose_floor_sat_above_later_runs_is_refused():
    from labcoat.scale.api import floors_above_runs

    def pairs(gap, se=0.005, residual=0.01):
        d = np.full(10, 0.5)
        gaps = np.column_stack([np.full(5, -0.3), np.full(5, se)])
        gaps[-1, 0] = gap  # the last origin's refit
        return Pairs(d, np.zeros(10), np.arange(10) // 2, 5, np.full(8, residual), gaps)

    # planted: the last origin's floor 50 % above the largest later runs' mean
    refused = floors_above_runs({"m4": pairs(np.log(1.5)), "m2": pairs(-0.2)})
    assert list(refused) == ["m4"] and refused["m4"] == pytest.approx(0.5)
    # healthy: 3 % above, within three standard errors of runs that scatter by 1 %
    assert floors_above_runs({"m4": pairs(0.03)}) == {}
    # noisy later runs (their own SE 5 %) do not refuse a floor 10 % above their mean
    assert floors_above_runs({"m4": pairs(np.log(1.1), se=0.05)}) == {}


def _jump_task(seed=0, jump=True):
    rng = np.random.default_rng(seed)
    x = 50 * 2.0 ** np.arange(12)
    L = (0.3 + 2 * x**-0.3) * np.exp(rng.normal(0, 0.005, x.size))
    if jump:
        acc = 0.25 + 0.6 / (1 + np.exp(-3 * (np.log(x) - np.log(50 * 2**4.5))))
    else:
        acc = 0.05 + 1.2 * np.exp(-1.5 * L)  # err = 0.95 − 1.2·exp(−1.5·L), Gadre et al.
    return x, L, np.clip(acc + rng.normal(0, 0.01, x.size), 0, 1)


@pytest.mark.check("scale.downstream", planted=True)
def test_a_jump_inside_the_fitted_runs_is_found_and_predicted_through():
    x, L, acc = _jump_task()
    fit = fit_downstream(x[:9], None, L[:9], acc[:9], target="accuracy")
    jump = fit.backtest["jump"]
    assert jump is not None and jump["used"] and 600 < jump["at"] < 2200  # planted at 1,131
    assert "a jump inside the fitted runs at" in fit.reason and fit.via == "compute"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = fit.predict(x[9:])
    assert np.abs(p.value - acc[9:]).mean() < 0.03
    assert np.all(p.interval[0] <= acc[9:]) and np.all(acc[9:] <= p.interval[1])
    assert np.all(p.interval[1] - p.interval[0] < 0.5)  # an interval, not [0, 1]


@pytest.mark.check("scale.downstream", healthy=True)
def test_a_smooth_task_has_no_jump_and_is_predictable():
    x, L, acc = _jump_task(jump=False)
    fit = fit_downstream(x[:9], None, L[:9], acc[:9], target="accuracy")
    assert fit.backtest["jump"] is None and fit.predictable and fit.via == "loss"


def test_an_interval_of_all_of_0_1_is_a_refusal(monkeypatch):
    from labcoat.scale import calibrate as cal

    x, L, acc = _jump_task(jump=False)
    table = {**cal.load_prior(), "frontier": {"levels": [0.9, 0.99], "factors": [60.0, 60.0]}}
    monkeypatch.setattr(cal, "load_prior", lambda: table)
    fit = fit_downstream(x[:9], None, L[:9], acc[:9], target="accuracy")
    assert not fit.predictable and fit.reason.startswith("refused:")  # planted: band ≥ [0, 1]
    assert "all of [0, 1]" in fit.reason and fit.findings[0].status == "fail"
    with pytest.warns(PredictabilityWarning, match="refused"):
        fit.predict(x[9:])


def test_runs_all_at_one_size_are_one_line(cli, tmp_path):
    path = tmp_path / "same.csv"
    path.write_text("x,loss\n" + "".join(f"1000,{0.5 + 0.01 * i}\n" for i in range(12)))
    res = cli("scale", "fit", path, "--x", "x", "--loss", "loss", "--form", "auto", "--no-ledger")
    assert res.code == 2 and res.err.count("\n") == 1, res.err  # planted: one line, exit 2
    assert "all 12 runs are at one size (1000)" in res.err and "RankWarning" not in res.err
    varied = tmp_path / "varied.csv"
    varied.write_text(
        "x,loss\n" + "".join(f"{100 * 2**i},{2 + 5 * (100 * 2**i) ** -0.5}\n" for i in range(12))
    )
    ok = cli(
        "scale",
        "fit",
        varied,
        "--x",
        "x",
        "--loss",
        "loss",
        "--form",
        "m2",
        "--bootstrap",
        "0",
        "--no-ledger",
    )
    assert ok.code == 0, ok.err  # healthy twin
    res = cli("scale", "fit", varied, "--x", "x", "--loss", "loss", "--no-ledger")
    assert res.code == 2 and "add --form auto" in res.err


def test_the_backtest_table_shows_seeds_point_error_and_interval_score():
    from rich.console import Console

    from labcoat.scale.view import backtest_view

    x, L = _seeded(sizes=7)
    result = scale.backtest(x, None, L, form="m2", holdout="n", top=3, n_resamples=0)
    console = Console(width=200, record=True)
    console.print(backtest_view(result))
    text = console.export_text()
    assert "seeds" in text and "point error %" in text and "interval score %" in text
    assert "of the mean" in text
    assert f"{100 * result.interval_score:.2f}% of the value" in text


def test_the_cli_fits_a_downstream_target_and_says_where_it_jumps(cli, tmp_path):
    x, L, acc = _jump_task()
    path = tmp_path / "jump.csv"
    path.write_text(
        "x,loss,acc\n" + "".join(f"{a},{b},{c}\n" for a, b, c in zip(x[:9], L[:9], acc[:9]))
    )
    columns = ("--x", "x", "--loss", "loss", "--form", "auto", "--no-ledger")
    res = cli("scale", "fit", path, *columns, "--target", "accuracy", "--metric", "acc")
    assert res.code == 0, res.err
    text = " ".join(res.out.split())  # the table wraps lines
    assert "a jump inside the fitted runs at" in text and ": predictable" in text
    missing = cli("scale", "fit", path, *columns, "--target", "accuracy")
    assert missing.code == 2 and "--metric" in missing.err
