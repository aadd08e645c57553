"""labcoat.design: tables that state what they alias, power that is the t test's, analyses that
attribute only what the runs can tell apart. Each check has a planted case and a healthy twin."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

import labcoat
from labcoat.design import effects as fx
from labcoat.design import tables
from labcoat.errors import InputError

FIVE = {
    "lr": [1e-3, 3e-3],
    "width": [64, 256],
    "dropout": [0.0, 0.1],
    "wd": [0.0, 0.01],
    "aug": [False, True],
}


def _status(result, check):
    return next(f for f in result.findings if f.check == check).status


def _world(d, effects, *, noise=1.0, seed=0, seed_shift=0.3):
    """Results of the design's runs in a world with these true (high - low) effects."""
    rng = np.random.default_rng(seed)
    names = list(d.factors)
    rows = []
    for run in d.runs:
        code = {f: 1 if run[f] == d.factors[f][1] else -1 for f in names}
        y = seed_shift * run["seed"] + rng.normal(0, noise)
        for effect, size in effects.items():
            y += size / 2 * np.prod([code[f] for f in effect.split(":")])
        rows.append({**run, "metric": y})
    return rows


# -- aliasing, read off the runs ---------------------------------------------------------------


def _pydoe_sets(coded):
    """pyDOE's own alias statements ("a = bd = ce"), as sets of effects on letters."""
    import pydoe

    out = []
    for line in pydoe.fracfact_aliasing(coded.astype(float))[0]:
        out.append({tuple(sorted(w)) for w in line.replace(" ", "").split("=")})
    return out


@pytest.mark.parametrize("k", [3, 4, 5, 6, 7])
def test_alias_statements_agree_with_pydoe_for_every_fraction(k):
    letters = [chr(ord("a") + i) for i in range(k)]
    for table in tables.candidates(letters):
        if table.kind == "plackett-burman" and table.runs & (table.runs - 1):
            continue  # non-regular: partial aliasing, which pyDOE's statement cannot express
        full, _ = fx.alias_sets(table.coded, letters, k)
        ours = [{e, *aliases} - {()} for e, aliases in full.items()]
        theirs = _pydoe_sets(table.coded)
        assert theirs, table.kind
        for group in theirs:  # each of pyDOE's alias sets is one of ours, exactly
            assert group in ours, (table.kind, group)


def test_a_resolution_v_fraction_keeps_two_factor_interactions_clear():
    d = labcoat.design(FIVE, runs=16)
    assert d.kind == "fractional" and d.resolution == 5
    assert all(len(e) <= 2 for e in d.effects) and len(d.effects) == 15
    for e in d.effects:
        assert all(len(a) >= 5 - len(e) for a in d.alias_map[e])
    assert "the lr × width interaction is aliased with the dropout × wd × aug interaction" in (
        d.statements
    )


def test_a_resolution_iii_fraction_says_which_interaction_each_main_effect_carries():
    d = labcoat.design(FIVE, runs=8)
    assert d.resolution == 3
    assert d.effects == tuple((f,) for f in FIVE)  # 2fi not planned where they are not clear
    assert any(s.startswith("the lr main effect is aliased with the ") for s in d.statements)
    aliases = d.aliases
    assert any(":" in a for a in aliases["lr"])


def test_a_plackett_burman_screen_states_partial_aliasing():
    factors = {f"x{i}": [0, 1] for i in range(9)}
    d = labcoat.design(factors, runs=12)
    assert d.kind == "plackett-burman" and d.resolution == 3
    assert any("partially aliased" in s for s in d.statements)


def test_runs_carry_levels_and_seeds_in_a_reproducible_order():
    d = labcoat.design(FIVE, runs=8, seeds=2)
    runs = d.runs
    assert len(runs) == 16 and {r["seed"] for r in runs} == {0, 1}
    assert all(r[f] in FIVE[f] for r in runs for f in FIVE)
    assert runs == labcoat.design(FIVE, runs=8, seeds=2).runs
    d = labcoat.design({"a": [0, 1], "b": [0, 1]}, seeds=4, orders=4)
    assert sorted(r["order"] for r in d.runs if r["seed"] == 0) == [0, 1, 2, 3]


# -- design checks: planted and healthy ------------------------------------------------------


@pytest.mark.check("design.estimable", planted=True)
def test_planning_an_effect_the_fraction_aliases_with_another_fails():
    d = labcoat.design(FIVE, runs=8, effects=["lr", "width", "dropout", "wd", "aug", "wd:aug"])
    assert _status(d, "design.estimable") == "fail"
    assert "cannot be told apart" in d.findings[0].message


@pytest.mark.check("design.estimable", healthy=True)
def test_the_same_effects_on_a_resolution_v_fraction_pass():
    d = labcoat.design(FIVE, runs=16, effects=["lr", "width", "dropout", "wd", "aug", "wd:aug"])
    assert _status(d, "design.estimable") == "pass"


@pytest.mark.check("design.error_df", planted=True)
def test_a_saturated_unreplicated_design_has_no_interval_and_says_so():
    d = labcoat.design({"a": [0, 1], "b": [0, 1], "c": [0, 1]}, effects=fx_all(3))
    assert d.df == 0 and _status(d, "design.error_df") == "fail"


@pytest.mark.check("design.error_df", healthy=True)
def test_a_second_seed_gives_the_noise_its_degrees_of_freedom():
    d = labcoat.design({"a": [0, 1], "b": [0, 1], "c": [0, 1]}, effects=fx_all(3), seeds=2)
    assert d.df == 7 and _status(d, "design.error_df") == "pass"


def fx_all(k):
    names = "abc"[:k]
    return [":".join(c) for n in range(1, k + 1) for c in itertools.combinations(names, n)]


@pytest.mark.check("design.power", planted=True)
def test_too_few_seeds_for_the_effect_warns_and_names_a_design_that_reaches_it():
    d = labcoat.design(FIVE, runs=8, noise=1.0, effect_size=1.0)
    assert _status(d, "design.power") == "warn"
    message = next(f.message for f in d.findings if f.check == "design.power")
    assert "runs ×" in message and "power" in message


@pytest.mark.check("design.power", healthy=True)
def test_enough_seeds_pass_the_power_check():
    d = labcoat.design(FIVE, runs=8, seeds=8, noise=1.0, effect_size=1.0)
    assert _status(d, "design.power") == "pass" and min(d.power.values()) >= 0.8


def test_power_is_the_noncentral_t_of_the_effect_standard_error():
    from scipy import stats

    d = labcoat.design({"a": [0, 1], "b": [0, 1]}, seeds=3, noise=2.0, effect_size=3.0)
    # 12 runs, effect = mean(high) - mean(low): se = 2 sigma / sqrt(N); three planned effects
    # (a, b, a:b), so alpha / 3 and df = 12 - 1 - 3 - 2 seed blocks
    se = 2 * 2.0 / np.sqrt(12)
    df = 12 - 1 - 3 - 2
    crit = stats.t.ppf(1 - 0.05 / 3 / 2, df)
    expect = stats.nct.sf(crit, df, 3.0 / se) + stats.nct.cdf(-crit, df, 3.0 / se)
    assert d.power["a"] == pytest.approx(expect, rel=1e-9)


def test_a_budget_picks_the_most_power_for_the_needed_effects():
    mains = list(FIVE)
    d = labcoat.design(FIVE, budget=40, effects=mains, noise=1.0, effect_size=1.0)
    assert d.n_runs <= 40
    for runs, seeds in ((16, 1), (16, 2), (32, 1), (8, 4)):
        other = labcoat.design(FIVE, runs=runs, seeds=seeds, effects=mains, noise=1.0,
                               effect_size=1.0)  # fmt: skip
        assert min(d.power.values()) >= min(other.power.values()) - 1e-9


def test_a_factorial_needs_at_most_half_the_runs_of_one_factor_at_a_time():
    d = labcoat.design(FIVE, runs=16, seeds=2, noise=1.0, effect_size=1.5)
    assert d.ofat["ratio"] <= 0.5


def test_recommend_finds_the_smallest_design_reaching_the_power():
    found = labcoat.design.recommend(FIVE, noise=1.0, effect_size=1.0, power=0.8)
    assert min(found.power.values()) >= 0.8
    smaller = [
        labcoat.design(FIVE, runs=r, seeds=s, effects=list(FIVE), noise=1.0, effect_size=1.0)
        for r in (8, 16, 32)
        for s in range(1, 8)
        if r * s < found.n_runs
    ]
    assert all(min(x.power[f] for f in FIVE) < 0.8 for x in smaller)


# -- analysis --------------------------------------------------------------------------------


def test_noise_free_effects_are_recovered_exactly_with_their_aliases():
    d = labcoat.design(FIVE, runs=16, seeds=2)
    rows = _world(d, {"lr": 2.0, "width": -1.0, "lr:width": 0.5}, noise=0.0)
    for r, e in zip(rows, np.random.default_rng(0).normal(0, 1e-9, len(rows))):
        r["metric"] += e
    a = d.analyse(rows)
    got = {r["effect"]: r["estimate"] for r in a.effects}
    assert got["lr"] == pytest.approx(2.0, abs=1e-6)
    assert got["width"] == pytest.approx(-1.0, abs=1e-6)
    assert got["lr:width = dropout:wd:aug"] == pytest.approx(0.5, abs=1e-6)


def test_analysis_json_carries_the_effects_the_verdict_reports():
    d = labcoat.design(FIVE, runs=16, seeds=2)
    a = d.analyse(_world(d, {"lr": 2.0}))
    row = a.to_dict()["effects"][0]
    for key in ("effect", "estimate", "ci", "pvalue", "pvalue_adjusted", "aliases", "decision"):
        assert key in row
    json.dumps(a.to_dict())
    assert row["effect"] == "lr" and row["decision"] == "effect"


@pytest.mark.check("design.analysis.error_df", planted=True)
def test_saturated_results_get_estimates_but_no_interval():
    d = labcoat.design({"a": [0, 1], "b": [0, 1], "c": [0, 1]}, effects=fx_all(3))
    a = d.analyse(_world(d, {"a": 1.0}))
    assert _status(a, "design.analysis.error_df") == "fail"
    assert all(r["ci"] is None and r["decision"] == "no test" for r in a.effects)
    assert a.headline.startswith("no interval")


@pytest.mark.check("design.analysis.error_df", healthy=True)
def test_replicated_results_get_intervals():
    d = labcoat.design({"a": [0, 1], "b": [0, 1], "c": [0, 1]}, effects=fx_all(3), seeds=2)
    a = d.analyse(_world(d, {"a": 1.0}))
    assert _status(a, "design.analysis.error_df") == "pass"
    assert all(r["ci"] is not None for r in a.effects)


@pytest.mark.check("design.analysis.attribution", planted=True)
def test_a_bundle_is_judged_as_a_bundle_and_names_the_design_that_separates_it():
    factors = {"lr": [1e-3, 3e-3], "warmup": [0, 500], "dropout": [0.0, 0.1]}
    d = labcoat.design(factors, kind="bundle", seeds=4)
    a = d.analyse(_world(d, {"lr": 1.0}, noise=0.3))
    assert _status(a, "design.analysis.attribution") == "warn"
    assert a.headline.startswith("no single intervention's effect can be attributed")
    assert a.effects[0]["effect"].startswith("lr = warmup = dropout")
    assert "would separate" in a.separating and "runs ×" in a.separating


@pytest.mark.check("design.analysis.attribution", healthy=True)
def test_a_screen_whose_main_effects_carry_only_interactions_is_attributable():
    d = labcoat.design(FIVE, runs=8, seeds=2)  # resolution III: mains aliased with 2fi only
    a = d.analyse(_world(d, {"lr": 2.0}))
    assert _status(a, "design.analysis.attribution") == "pass"
    assert any(":" in x for x in a.effects[0]["aliases"])  # still named, never hidden


@pytest.mark.check("design.analysis.runs", planted=True)
def test_a_lost_run_is_named_and_the_aliasing_is_that_of_the_runs_given():
    d = labcoat.design({"a": [0, 1], "b": [0, 1], "c": [0, 1]}, seeds=2)
    rows = _world(d, {"a": 1.0})
    a = d.analyse(rows[1:])
    assert _status(a, "design.analysis.runs") == "warn"
    assert len(a.missing_runs) == 1


@pytest.mark.check("design.analysis.runs", healthy=True)
def test_every_planned_run_present_passes():
    d = labcoat.design({"a": [0, 1], "b": [0, 1], "c": [0, 1]}, seeds=2)
    a = d.analyse(list(reversed(_world(d, {"a": 1.0}))))  # order does not matter
    assert _status(a, "design.analysis.runs") == "pass"


def test_dropped_runs_that_alias_two_planned_effects_merge_them():
    d = labcoat.design({"a": [0, 1], "b": [0, 1]}, seeds=2)
    rows = [r for r in _world(d, {"a": 1.0}) if (r["a"] == 0) == (r["b"] == 0)]
    a = d.analyse(rows)
    assert a.effects[0]["effect"] == "a = b"
    assert _status(a, "design.analysis.attribution") == "warn"


# -- input ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "factors, message",
    [
        ({"lr": [1, 2, 3]}, "exactly two distinct levels"),
        ({"lr": [1, 1]}, "exactly two distinct levels"),
        ({"seed": [0, 1]}, "other than 'seed'"),
        ([("lr", [0, 1])], "mapping of factor name"),
        ({"lr": "ab"}, "expected two levels"),
    ],
)
def test_bad_factors_are_one_line_errors(factors, message):
    with pytest.raises(InputError, match=message):
        labcoat.design(factors)


def test_bad_options_are_one_line_errors():
    with pytest.raises(InputError, match="power of two"):
        labcoat.design(FIVE, runs=10)
    with pytest.raises(InputError, match="at most one"):
        labcoat.design(FIVE, runs=8, budget=40)
    with pytest.raises(InputError, match="effect 'lr:depth'"):
        labcoat.design(FIVE, effects=["lr:depth"])
    with pytest.raises(InputError, match="cannot estimate 5 main effects"):
        labcoat.design(FIVE, runs=4)
    d = labcoat.design(FIVE, runs=8)
    with pytest.raises(InputError, match="neither declared level"):
        d.analyse([{**r, "metric": 1.0, "lr": 0.5} for r in d.runs])


def test_a_pilot_gives_the_noise():
    d = labcoat.design(FIVE, runs=16, pilot=[0.71, 0.73, 0.70, 0.74], effect_size=0.02)
    assert d.noise == pytest.approx(np.std([0.71, 0.73, 0.70, 0.74], ddof=1))
    assert d.power


# -- CLI --------------------------------------------------------------------------------------


def test_cli_prints_the_design_and_analyses_results(tmp_path, cli):
    toml = tmp_path / "factors.toml"
    toml.write_text(
        "[factors]\nlr = [0.001, 0.003]\nwidth = [64, 256]\ndropout = [0.0, 0.1]\n"
        "[design]\nseeds = 2\nnoise = 1.0\neffect_size = 2.0\n"
    )
    out = cli("design", str(toml), "--json")
    assert out.code == 0, out.err
    data = json.loads(out.out)
    api = json.loads(json.dumps(labcoat.design(**labcoat.design.read_factors(toml)).to_dict()))
    for found in (data, api):
        for f in found["findings"]:
            f.pop("duration_s")
    assert data == api  # the CLI prints what the library returns
    d = labcoat.design(**labcoat.design.read_factors(toml))
    rows = _world(d, {"lr": 3.0})
    csv = tmp_path / "results.csv"
    names = list(rows[0])
    csv.write_text(
        ",".join(names) + "\n" + "\n".join(",".join(str(r[n]) for n in names) for r in rows)
    )
    out = cli("design", str(toml), "--analyse", str(csv), "--json")
    assert out.code == 0, out.err
    assert json.loads(out.out)["effects"][0]["effect"] == "lr"


def test_cli_bad_input_is_one_line_exit_2(tmp_path, cli):
    bad = tmp_path / "f.toml"
    bad.write_text("[factors]\nlr = [1, 2, 3]\n")
    out = cli("design", str(bad))
    assert out.code == 2
    assert out.err.strip().count("\n") == 0 and "two distinct levels" in out.err
    out = cli("design", str(tmp_path / "missing.toml"))
    assert out.code == 2 and "no such file" in out.err
