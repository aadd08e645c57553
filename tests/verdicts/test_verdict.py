"""The verdict: the registered analysis through labcoat.stats, its decision rule, the family's
adjustment, the CLI's exit codes and JSON shape."""

from __future__ import annotations

import json

import numpy as np
import pytest

from labcoat.stats import compare, mcnemar
from labcoat.stats.multiple import adjust_pvalues
from labcoat.verdicts import Plan, analyse

BASE = dict(metric="accuracy", column="correct", id="qid", comparison="superiority")


def arms(n: int, p_a: float, p_b: float, seed: int = 0, clusters: int = 10):
    rng = np.random.default_rng(seed)
    ids = [f"q{i}" for i in range(n)]
    topic = [f"t{i % clusters}" for i in range(n)]
    a = {"qid": ids, "topic": topic, "correct": (rng.random(n) < p_a).astype(int)}
    b = {"qid": ids, "topic": topic, "correct": (rng.random(n) < p_b).astype(int)}
    return a, b


@pytest.mark.parametrize(
    "changes, p_a, p_b, n, expected",
    [
        (dict(), 0.8, 0.5, 400, "confirmed"),
        (dict(), 0.5, 0.8, 400, "refuted"),
        (dict(), 0.55, 0.5, 40, "inconclusive"),
        (dict(better="lower"), 0.5, 0.8, 400, "confirmed"),
        (dict(margin=0.5), 0.8, 0.5, 400, "refuted"),  # better, but not by the margin
        (dict(comparison="non-inferiority", margin=0.1), 0.7, 0.7, 4000, "confirmed"),
        (dict(comparison="non-inferiority", margin=0.05), 0.4, 0.7, 400, "refuted"),
        (dict(comparison="equivalence", margin=0.1), 0.7, 0.7, 4000, "confirmed"),
        (dict(comparison="equivalence", margin=0.05), 0.9, 0.5, 400, "refuted"),
        (dict(sides="two-sided"), 0.8, 0.5, 400, "confirmed"),
        (dict(sides="two-sided"), 0.5, 0.8, 400, "refuted"),
    ],
)
def test_the_decision_rule(changes, p_a, p_b, n, expected):
    a, b = arms(n, p_a, p_b)
    plan = Plan(**{**BASE, "items": n, "cluster": "topic", **changes})
    assert analyse(plan, a, b).verdict == expected


def test_the_paired_test_is_labcoat_stats_compare():
    a, b = arms(300, 0.6, 0.5)
    plan = Plan(**BASE, items=300, cluster="topic", sides="two-sided")
    result = analyse(plan, a, b)
    by_hand = compare(a["correct"], b["correct"], a["topic"], 0.95, ids_a=a["qid"], ids_b=b["qid"])
    assert result.estimate == by_hand.diff and tuple(result.ci) == tuple(by_hand.ci)
    assert result.pvalue == pytest.approx(by_hand.pvalue, rel=1e-12)
    one = analyse(plan.revised(sides="one-sided"), a, b)
    assert one.pvalue == pytest.approx(by_hand.pvalue / 2, rel=1e-9)  # the diff is positive
    assert tuple(one.ci) == tuple(by_hand.confidence_interval(0.9))


def test_mcnemar_and_the_bootstrap_are_the_libraries():
    a, b = arms(300, 0.6, 0.5)
    plan = Plan(**BASE, items=300, test="mcnemar", sides="two-sided")
    assert analyse(plan, a, b).pvalue == mcnemar(a["correct"], b["correct"]).pvalue
    rng = np.random.default_rng(1)
    gold = rng.integers(0, 2, 300)
    a["pred"] = np.where(rng.random(300) < 0.9, gold, 1 - gold)
    b["pred"] = np.where(rng.random(300) < 0.6, gold, 1 - gold)
    a["gold"] = b["gold"] = gold
    f1 = Plan(**{**BASE, "metric": "f1", "column": "pred"}, items=300, label="gold")
    result = analyse(f1, a, b)
    assert result.test == "bootstrap" and result.verdict == "confirmed"
    assert result.ci.low > 0 and result.deviations == []


def test_the_family_adjusts_with_the_others_latest_p_and_ones_for_the_rest():
    a, b = arms(200, 0.62, 0.5, seed=0)  # one-sided p = 0.039: under alpha, not under Holm
    plan = Plan(**BASE, items=200, family="tasks", family_size=4, correction="holm")
    alone = analyse(plan.revised(family_size=1), a, b)
    result = analyse(plan, a, b, family_pvalues=[0.001])
    expected = adjust_pvalues([alone.pvalue, 0.001, 1.0, 1.0], "holm").adjusted[0]
    assert result.pvalue == alone.pvalue and result.pvalue_adjusted == pytest.approx(expected)
    assert alone.verdict == "confirmed" and result.verdict == "inconclusive"  # the family costs
    bh = analyse(plan.revised(correction="bh"), a, b, family_pvalues=[0.001])
    assert bh.pvalue_adjusted == pytest.approx(
        adjust_pvalues([alone.pvalue, 0.001, 1.0, 1.0], "bh").adjusted[0]
    )


def _csv(path, rows):
    import csv

    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(rows)
        w.writerows(zip(*rows.values()))
    return str(path)


@pytest.mark.parametrize(
    "p_a, p_b, code, verdict",
    [(0.8, 0.5, 0, "confirmed"), (0.5, 0.8, 1, "refuted"), (0.52, 0.5, 4, "inconclusive")],
)
def test_cli_exit_codes_and_json_shape(cli, tmp_path, p_a, p_b, code, verdict):
    a, b = arms(60 if code == 4 else 400, p_a, p_b)
    fa, fb = _csv(tmp_path / "a.csv", a), _csv(tmp_path / "b.csv", b)
    ledger = tmp_path / "l.db"
    items = len(a["qid"])
    added = cli(
        "ledger",
        "add",
        "A beats B",
        "--predict",
        "A > B",
        "--ledger",
        ledger,
        "--plan-field",
        "metric=accuracy",
        "--plan-field",
        "column=correct",
        "--plan-field",
        "id=qid",
        "--plan-field",
        "comparison=superiority",
        "--plan-field",
        f"items={items}",
        "--plan-field",
        "cluster=topic",
        "--json",
    )
    assert added.code == 0, added.err
    entry = json.loads(added.out)["id"]
    got = cli("verdict", entry, "--a", fa, "--b", fb, "--ledger", ledger, "--json")
    assert got.code == code, got.err
    data = json.loads(got.out)
    assert list(data) == [
        "kind",
        "version",
        "id",
        "verdict",
        "registered_verdict",
        "estimate",
        "ci",
        "pvalue",
        "pvalue_adjusted",
        "mde",
        "underpowered",
        "n",
        "deviations",
        "plan",
        "findings",
    ]
    assert data["kind"] == "verdicts.verdict" and data["verdict"] == verdict
    assert data["id"] == entry and len(data["ci"]) == 2
    assert data["n"] == {"a": items, "b": items, "paired": items} and data["deviations"] == []
    text = cli("verdict", entry, "--a", fa, "--b", fb, "--ledger", ledger)
    assert text.out.splitlines()[0] == f"#{entry} {verdict}, by the registered plan"


def test_cli_bad_input_is_exit_2_and_a_deviation_is_the_first_line(cli, tmp_path):
    a, b = arms(100, 0.7, 0.5)
    fa, fb = _csv(tmp_path / "a.csv", a), _csv(tmp_path / "b.csv", b)
    ledger = tmp_path / "l.db"
    plan = Plan(**BASE, items=100)
    plan.write(tmp_path / "plan.toml")
    added = cli(
        "ledger", "add", "h", "--predict", "p", "--plan", tmp_path / "plan.toml", "--ledger", ledger
    )
    assert added.code == 0 and "design review" in added.out
    got = cli("verdict", 1, "--a", fa, "--b", tmp_path / "missing.csv", "--ledger", ledger)
    assert got.code == 2 and "missing.csv: no such file" in got.err
    got = cli("verdict", 1, "--a", fa, "--b", fb, "--score", "nope", "--ledger", ledger)
    assert got.code == 2 and "no column 'nope'" in got.err
    unplanned = cli("ledger", "add", "no plan", "--predict", "p", "--ledger", ledger)
    assert unplanned.code == 0
    got = cli("verdict", 2, "--a", fa, "--b", fb, "--ledger", ledger)
    assert got.code == 2 and "has no registered plan" in got.err
    b_short = {k: v[:90] for k, v in b.items()}
    got = cli(
        "verdict", 1, "--a", fa, "--b", _csv(tmp_path / "b2.csv", b_short), "--ledger", ledger
    )
    assert "DEVIATING FROM ITS PLAN" in got.out.splitlines()[0]


def test_results_render_as_html_and_rich_and_b_may_lack_the_cluster_column():
    from rich.console import Console

    from labcoat.verdicts import review

    a, b = arms(100, 0.8, 0.5)
    del b["topic"]
    plan = Plan(**BASE, items=100, cluster="topic")
    result = analyse(plan, a, b)
    assert "by the registered plan" in result.to_html()
    assert "design.control" in review(plan).to_html()
    console = Console(record=True, width=100)
    console.print(result)
    assert console.export_text().startswith("confirmed, by the registered plan")
