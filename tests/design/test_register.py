"""A design on the ledger: sealed as a plan before any run, runs tagged with their factor
levels, a verdict on every planned effect, deviations set aside, bundles refused, and the noise
read off the ledger's earlier runs. Each check has a planted case and a healthy twin."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

import labcoat
import labcoat.design as D
from labcoat import Ledger
from labcoat.design.plan import DesignPlan
from labcoat.errors import InputError

TWO = {"lr": [1e-3, 3e-3], "width": [64, 256]}
TRUE = {"lr": 1.0, "width": 1.5}


def _status(result, check):
    return next(f for f in result.findings if f.check == check).status


def _metric(run, factors, effects, rng, noise=0.3):
    y = rng.normal(0, noise) + 0.2 * run.get("seed", 0)
    for f, size in effects.items():
        y += size / 2 * (1 if run[f] == factors[f][1] else -1)
    return float(y)


def _run(ledger, factors, value, metric="acc"):
    with ledger.run(factors=factors, git=False) as active:
        if value is not None:
            active.record_event(metric, value=value)
    return active.id


def _registered(tmp_path, factors=TWO, **options):
    ledger = Ledger(tmp_path / "ledger.db")
    d = labcoat.design(factors, **{"seeds": 2, "effect_size": 1.0, "noise": 0.3, **options})
    entry = D.register(ledger, "lr and width matter", d, predict="both help", metric="acc")
    return ledger, d, entry


def _fill(ledger, d, effects=TRUE, *, seed=0, skip=0):
    rng = np.random.default_rng(seed)
    for run in d.runs[skip:]:
        _run(ledger, run, _metric(run, d.factors, effects, rng))


# -- runs carry their factor levels ------------------------------------------------------------


def test_a_run_keeps_its_factor_levels_in_the_chain(tmp_path):
    ledger = Ledger(tmp_path / "l.db")
    run_id = _run(ledger, {"lr": "high", "width": 64, "seed": 1}, 0.5)
    assert ledger.get_run(run_id).factors == {"lr": "high", "width": 64, "seed": 1}
    assert ledger.runs()[0].factors == {"lr": "high", "width": 64, "seed": 1}
    assert ledger.verify()
    plain = _run(ledger, None, None)
    assert ledger.get_run(plain).factors == {}
    with pytest.raises(InputError, match="factor name"):
        _run(ledger, {"not a name": 1}, None)
    with pytest.raises(InputError, match="a level is text, a number or a bool"):
        _run(ledger, {"lr": [1, 2]}, None)


def test_labcoat_run_tags_factor_levels(cli, tmp_path):
    db = tmp_path / "l.db"
    got = cli("run", "--ledger", db, "--no-logs", "--no-git", "--factor", "lr=3e-3",
              "--factor", "aug=high", "--", sys.executable, "-c", "pass")  # fmt: skip
    assert got.code == 0, got.err
    assert Ledger(db).runs()[0].factors == {"lr": 0.003, "aug": "high"}
    bad = cli("run", "--ledger", db, "--factor", "lr", "--", sys.executable, "-c", "pass")
    assert bad.code == 2 and "--factor: expected NAME=LEVEL" in bad.err


# -- a design is a plan, sealed before any run -------------------------------------------------


def test_a_design_plan_round_trips_and_rebuilds_the_sealed_table(tmp_path):
    d = labcoat.design({**TWO, "dropout": [0.0, 0.1], "wd": [0, 0.01]}, runs=8, seeds=2)
    plan = d.to_plan("acc")
    back = DesignPlan.from_dict(json.loads(json.dumps(plan.to_dict())))
    again = D.designs.rebuild(back)
    assert again.runs == d.runs and again.aliases == d.aliases and again.df == d.df
    with pytest.raises(InputError, match="not a design plan"):
        DesignPlan.from_dict({"metric": "acc"})


def test_registering_seals_the_design_with_its_review(tmp_path):
    ledger, d, entry = _registered(tmp_path)
    [stored] = ledger.plans(entry)
    assert stored.plan["kind"] == "design"
    assert stored.plan["factors"] == [[k, list(v)] for k, v in TWO.items()]
    assert {f["check"] for f in stored.review} >= {"design.estimable", "design.power"}
    assert ledger.verify()
    # the verdicts engine registers a design plan the same way
    other = labcoat.verdicts.register(ledger, "again", predict="x", plan=d.to_plan("acc"))
    assert ledger.plans(other)[0].plan == stored.plan
    with pytest.raises(InputError, match="its plan is a design"):
        labcoat.verdicts.plan_history(ledger, entry)


# -- the verdict ---------------------------------------------------------------------------------


@pytest.mark.check("design.verdict.deviations", healthy=True)
def test_every_planned_run_gives_a_verdict_by_the_registered_design(tmp_path):
    ledger, d, entry = _registered(tmp_path, needed=["lr", "width"])
    _fill(ledger, d)
    v = D.verdict(ledger, entry)
    assert v.verdict == "confirmed" and not v.deviations
    assert v.headline == f"#{entry.id} confirmed, by the registered design"
    assert _status(v, "design.verdict.deviations") == "pass"
    out = v.to_dict()
    assert [e["effect"] for e in out["effects"]] == ["lr", "width", "lr:width"]
    for e in out["effects"]:
        assert set(e) >= {"effect", "estimate", "ci", "pvalue", "pvalue_adjusted", "aliases",
                          "decision"}  # fmt: skip
        assert e["ci"][0] < TRUE.get(e["effect"], 0.0) < e["ci"][1]
    assert ledger.entry(entry).verdict == "confirmed"
    assert ledger.verdicts(entry)[0].result["effects"] == json.loads(json.dumps(out["effects"]))
    assert "half-normal" in v.to_html()


def test_the_same_verdict_through_the_verdicts_engine_and_on_a_results_table(tmp_path):
    ledger, d, entry = _registered(tmp_path)
    rng = np.random.default_rng(1)
    rows = [{**r, "acc": _metric(r, d.factors, TRUE, rng)} for r in d.runs]
    via_verdicts = labcoat.verdicts.verdict(ledger, entry, results=rows)
    direct = D.judge.judge(d.to_plan("acc"), rows)
    assert via_verdicts.to_dict()["effects"] == direct.to_dict()["effects"]
    with pytest.raises(InputError, match="not on two arms"):
        labcoat.verdicts.verdict(ledger, entry, a="a.csv", b="b.csv")


def test_a_null_effect_smaller_than_the_smallest_worth_detecting_is_refuted(tmp_path):
    ledger, d, entry = _registered(tmp_path, seeds=4, needed=["lr"], effect_size=1.0)
    _fill(ledger, d, {"width": 1.5})
    v = D.verdict(ledger, entry)
    assert v.verdict == "refuted", v.reasons
    assert v.reasons == [v.reasons[0]] and "smaller than 1" in v.reasons[0]


@pytest.mark.check("design.verdict.deviations", planted=True)
def test_repeats_extra_seeds_unplanned_levels_and_missing_runs_are_set_aside(tmp_path):
    ledger = Ledger(tmp_path / "ledger.db")
    d = labcoat.design(TWO, seeds=2, effect_size=1.0, noise=0.3, needed=["lr", "width"])
    early = _run(ledger, {**d.runs[0]}, 9.0)  # linked below, but it ran before the design
    entry = D.register(ledger, "lr and width matter", d, predict="both help", metric="acc")
    _fill(ledger, d, skip=1)  # the first planned run is missing
    best = {**d.runs[1]}
    extras = [
        _run(ledger, best, 99.0),  # a repeat of a planned run with a better result
        _run(ledger, {**best, "seed": 7}, 99.0),  # a seed the design does not have
        _run(ledger, {**best, "lr": 1e-2}, 99.0),  # a level the design does not have
        _run(ledger, {**best}, None),  # no result recorded
        ledger.start_run(factors=best, git=False).id,  # never ended
    ]
    linked = [r.id for r in ledger.runs() if r.factors]
    ledger.revise(entry, runs=tuple(linked))
    v = D.verdict(ledger, entry)
    kinds = sorted(x["kind"] for x in v.deviations)
    assert kinds == sorted(["before-plan", "missing-run", "repeated-run", "extra-run",
                            "unplanned-level", "no-result", "unfinished-run"]), kinds  # fmt: skip
    assert _status(v, "design.verdict.deviations") == "warn"
    assert "DEVIATING FROM ITS PLAN (7" in v.headline
    assert v.analysis.n_runs == d.n_runs - 1  # none of the 99s, nor the early 9, analysed
    assert all(abs(e["estimate"]) < 5 for e in v.to_dict()["effects"])
    assert {x.get("run") for x in v.deviations} >= {early, *extras}


def test_judging_again_on_other_results_is_a_deviation(tmp_path):
    ledger, d, entry = _registered(tmp_path)
    rng = np.random.default_rng(2)
    rows = [{**r, "acc": _metric(r, d.factors, TRUE, rng)} for r in d.runs]
    first = D.verdict(ledger, entry, results=rows)
    assert not first.deviations
    same = D.verdict(ledger, entry, results=list(reversed(rows)))
    assert not same.deviations  # the same results, in another order
    rows[0] = {**rows[0], "acc": rows[0]["acc"] + 5}
    again = D.verdict(ledger, entry, results=rows)
    assert [x["kind"] for x in again.deviations] == ["results-changed"]


def test_a_plan_revised_after_the_runs_began_is_held_to_the_first(tmp_path):
    ledger, d, entry = _registered(tmp_path)
    _fill(ledger, d)
    changed = D.designs.rebuild(d.to_plan("acc"))
    plan = {**d.to_plan("acc").to_dict(), "effects": ["lr", "width"]}
    ledger.seal_plan(entry, plan, [f.to_dict() for f in changed.findings])
    v = D.verdict(ledger, entry)
    assert [x["kind"] for x in v.deviations] == ["plan-revised"]
    assert v.plan_revision == 1 and len(v.analysis.effects) == 3


def test_a_results_table_row_at_an_unplanned_level_is_a_deviation_not_an_error(tmp_path):
    ledger, d, entry = _registered(tmp_path)
    rng = np.random.default_rng(3)
    rows = [{**r, "acc": _metric(r, d.factors, TRUE, rng)} for r in d.runs]
    rows[2] = {**rows[2], **{f: "high" if rows[2][f] == v[1] else "low" for f, v in TWO.items()}}
    rows.append({**rows[0], "lr": 0.5})
    rows.append({**rows[1], "acc": "n/a"})
    v = D.verdict(ledger, entry, results=rows)
    assert sorted(x["kind"] for x in v.deviations) == ["no-result", "unplanned-level"]
    assert v.analysis.n_runs == d.n_runs


# -- refusing to attribute a bundle ------------------------------------------------------------


def test_a_bundle_gets_a_verdict_on_the_bundle_and_a_first_line_that_refuses_attribution(tmp_path):
    ledger = Ledger(tmp_path / "l.db")
    three = {**TWO, "dropout": [0.0, 0.1]}
    d = labcoat.design(three, kind="bundle", seeds=4, noise=0.3, effect_size=1.0)
    entry = D.register(ledger, "all three", d, predict="together they help", metric="acc")
    _fill(ledger, d, {"lr": 1.0, "width": 1.0})
    v = D.verdict(ledger, entry)
    first = v.headline
    assert first.startswith("no single intervention's effect can be attributed: lr = width")
    assert "dropout" in first and "runs ×" in first and "seed(s)" in first
    assert v.verdict == "confirmed"  # on the bundle, never on one of its changes
    [row] = v.to_dict()["effects"]
    assert set(row["aliases"]) == {"width", "dropout", "lr:width:dropout"}
    assert not v.attributable


def test_a_factorial_with_the_same_changes_attributes_each(tmp_path):
    ledger, d, entry = _registered(tmp_path, needed=["lr", "width"])
    _fill(ledger, d)
    v = D.verdict(ledger, entry)
    assert v.attributable and not v.headline.startswith("no single")


# -- the noise from the ledger's earlier runs ---------------------------------------------------


def _history(ledger, sd, *, configs=4, seeds=3, tagged=True, seed=0):
    rng = np.random.default_rng(seed)
    for c in range(configs):
        for s in range(seeds):
            factors = {"width": 64 * (c + 1), "seed": s} if tagged else None
            _run(ledger, factors, 0.5 + 0.1 * c + rng.normal(0, sd))


def test_the_power_comes_from_the_seed_variance_of_the_ledgers_earlier_runs(tmp_path):
    ledger = Ledger(tmp_path / "l.db")
    _history(ledger, 0.05, configs=6, seeds=4)
    d = labcoat.design(TWO, seeds=2, effect_size=0.1, ledger=ledger, metric="acc")
    assert d.noise == pytest.approx(0.05, rel=0.35)
    assert "18 df" in d.noise_source and "24 earlier runs" in d.noise_source
    message = next(f.message for f in d.findings if f.check == "design.power")
    assert "earlier runs" in message
    assert d.power and d.to_plan("acc").noise_source == d.noise_source
    both = labcoat.design(TWO, seeds=2, effect_size=0.1, ledger=ledger, metric="acc",
                          pilot=[0.5, 0.6, 0.4])  # fmt: skip
    assert both.noise == d.noise and "the pilot's noise 0.1 is not used" in both.noise_source


def test_without_replicates_in_the_ledger_nothing_is_measured_and_stated_noise_is_assumed(
    tmp_path,
):
    ledger = Ledger(tmp_path / "l.db")
    _history(ledger, 0.05, configs=4, seeds=1)  # no configuration ran twice
    _history(ledger, 0.05, configs=1, seeds=4, tagged=False, seed=1)  # no config, no factors
    assert D.ledger_noise(ledger, "acc") is None
    d = labcoat.design(TWO, seeds=2, effect_size=0.1, ledger=ledger, metric="acc")
    assert d.noise is None and not d.power
    stated = labcoat.design(TWO, seeds=2, effect_size=0.1, noise=0.05)
    assert stated.noise_source == "assumed (stated, not measured)"
    assert "assumed" in next(f.message for f in stated.findings if f.check == "design.power")
    piloted = labcoat.design(TWO, seeds=2, effect_size=0.1, pilot=[0.5, 0.52, 0.49])
    assert piloted.noise_source == "a pilot of 3 seeds"


# -- end to end, from the shell ------------------------------------------------------------------


def test_design_register_tagged_runs_verdict_from_the_shell(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(labcoat.__path__[0].rsplit("/", 1)[0]))
    db = tmp_path / "l.db"
    spec = tmp_path / "factors.toml"
    spec.write_text(
        "[factors]\nlr = [0.001, 0.003]\nwidth = [64, 256]\n\n"
        '[design]\nseeds = 2\nneeded = ["lr", "width"]\neffect_size = 1.0\nnoise = 0.3\n'
    )
    made = cli("design", spec, "--register", "lr and width", "--predict", "both help",
               "--metric", "acc", "--ledger", db, "--json")  # fmt: skip
    assert made.code == 0, made.err
    planned = json.loads(made.out)
    entry = planned["entry"]
    assert "registered as entry" in made.err and len(planned["runs"]) == 8
    rng = np.random.default_rng(4)
    for run in planned["runs"]:
        value = _metric(run, TWO, TRUE, rng, noise=0.1)
        record = f"from labcoat import Ledger; Ledger().record_event('acc', value={value!r})"
        tags = [f"--factor={f}={run[f]}" for f in ("lr", "width", "seed")]
        got = cli("run", "--ledger", db, "--for", entry, "--no-logs", "--no-git", *tags,
                  "--", sys.executable, "-c", record)  # fmt: skip
        assert got.code == 0, got.err
    page = tmp_path / "v.html"
    judged = cli("verdict", entry, "--ledger", db, "--json", "--html", page)
    assert judged.code == 0, judged.err
    out = json.loads(judged.out)
    assert out["verdict"] == "confirmed" and out["deviations"] == []
    assert {e["effect"]: e["decision"] for e in out["effects"]}["lr"] == "effect"
    assert "half-normal" in page.read_text()
    two_arms = cli("verdict", entry, "--ledger", db, "--a", "a.csv", "--b", "b.csv")
    assert two_arms.code == 2 and "not on two arms" in two_arms.err


def test_power_stays_a_number_where_scipys_far_lower_tail_is_nan():
    from scipy import stats

    from labcoat.design.power import t_power

    crit = stats.t.ppf(1 - 0.05 / 6, 4)
    # scipy 1.17 gives NaN for stats.nct.cdf(-crit, 4, 10.4), which made the power NaN
    power = t_power(1.0, 1.0 / 10.4, 4, 0.05 / 3)
    assert stats.nct.sf(crit, 4, 10.4) <= power <= 1.0


def test_labcoat_design_reads_the_noise_off_the_ledger_and_refuses_a_half_registration(
    cli, tmp_path
):
    db = tmp_path / "l.db"
    ledger = Ledger(db)
    _history(ledger, 0.05, configs=3, seeds=3)
    ledger.close()
    spec = tmp_path / "factors.toml"
    spec.write_text("[factors]\nlr = [0.001, 0.003]\nwidth = [64, 256]\n\n[design]\n"
                    "seeds = 2\neffect_size = 0.1\n")  # fmt: skip
    got = cli("design", spec, "--ledger", db, "--metric", "acc", "--json")
    assert got.code == 0, got.err
    out = json.loads(got.out)
    assert "9 earlier runs in 3 configuration(s)" in out["noise_source"] and out["power"]
    plain = json.loads(cli("design", spec, "--json").out)
    assert plain["noise"] is None and plain["power"] == {}
    half = cli("design", spec, "--register", "t", "--ledger", db)
    assert half.code == 2 and "--register: give --predict" in half.err
    assert len(Ledger(db).entries()) == 0


def test_labcoat_ledger_plan_shows_a_design_plan_and_refuses_to_revise_it(cli, tmp_path):
    ledger, d, entry = _registered(tmp_path)
    db = tmp_path / "ledger.db"
    ledger.close()
    shown = cli("ledger", "plan", entry.id, "--ledger", db, "--json")
    assert shown.code == 0, shown.err
    assert json.loads(shown.out)["plan"]["kind"] == "design"
    revised = cli("ledger", "plan", entry.id, "--ledger", db, "--plan-field", "seeds=3")
    assert revised.code == 2 and "a new one is a new entry" in revised.err


def test_after_a_lost_run_seed_blocks_still_keep_a_seeds_shift_out_of_the_noise():
    three = {**TWO, "dropout": [0.0, 0.1]}
    d = labcoat.design(three, seeds=3)
    rng = np.random.default_rng(5)
    shift = {0: 0.0, 1: 1.0, 2: -1.0}  # each seed moves all its runs alike, 10x the noise
    rows = [
        {**r, "acc": shift[r["seed"]] + _metric({**r, "seed": 0}, three, TRUE, rng, noise=0.1)}
        for r in d.runs
    ][1:]
    a = d.analyse(rows, metric="acc")
    assert a.noise < 0.2, a.noise  # unblocked, the shifts would put it near 0.8
    for row in a.effects:
        assert row["ci"][0] < TRUE.get(row["effect"], 0.0) < row["ci"][1]


def test_a_comparison_entry_still_needs_both_arms_now_that_they_are_optional(cli, tmp_path):
    db = tmp_path / "l.db"
    with Ledger(db) as ledger:
        plan = labcoat.Plan(metric="accuracy", column="correct", id="qid",
                            comparison="superiority", items=100)  # fmt: skip
        entry = labcoat.verdicts.register(ledger, "a beats b", predict="it does", plan=plan)
    got = cli("verdict", entry.id, "--ledger", db)
    assert got.code == 2 and "give the results of both arms (--a and --b" in got.err
