"""``labcoat stats``: JSON contracts, tables, and one-line errors with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from labcoat._jsonable import jsonable
from labcoat.stats import compare, mean, sample_size


@pytest.fixture
def evals(tmp_path):
    """Two models on 400 questions in 80 documents, A about 8 points better."""
    rng = np.random.default_rng(0)
    n = 400
    p = rng.uniform(size=n)
    a = (rng.uniform(size=n) < np.clip(p + 0.08, 0, 1)).astype(int)
    b = (rng.uniform(size=n) < p).astype(int)
    doc = np.arange(n) // 5
    lines = ["id,acc,doc"] + [f"q{i},{a[i]},d{doc[i]}" for i in range(n)]
    (tmp_path / "a.csv").write_text("\n".join(lines) + "\n")
    order = rng.permutation(n)  # B's file lists the questions in another order
    (tmp_path / "b.jsonl").write_text(
        "".join(
            json.dumps({"id": f"q{i}", "acc": int(b[i]), "doc": f"d{doc[i]}"}) + "\n" for i in order
        )
    )
    return tmp_path, a, b, doc


def _json(res):
    assert res.code == 0, res.err
    return json.loads(res.out)


def test_mean_json_contract(cli, evals):
    path, a, _, doc = evals
    out = _json(
        cli("stats", "mean", path / "a.csv", "--score", "acc", "--cluster", "doc", "--json")
    )
    expected = mean(a, cluster=doc)
    want = jsonable(expected.to_dict())
    assert set(out) == set(want)
    for key, value in want.items():
        assert out[key] == (pytest.approx(value) if key != "warnings" else value), key
    assert set(out) >= {
        "mean",
        "se",
        "ci",
        "n",
        "n_clusters",
        "df",
        "se_clt",
        "warnings",
        "formula",
    }
    assert out["n_clusters"] == 80 and out["n"] == 400 and out["df"] == 79
    plain = _json(cli("stats", "mean", path / "a.csv", "--score", "acc", "--json"))
    assert plain["n_clusters"] is None and plain["se"] == pytest.approx(expected.se_clt)
    paper = _json(
        cli(
            "stats",
            "mean",
            path / "a.csv",
            "--score",
            "acc",
            "--cluster",
            "doc",
            "--formula",
            "miller",
            "--json",
        )
    )
    assert (
        paper["se"] == pytest.approx(mean(a, cluster=doc, formula="miller").se)
        and paper["df"] is None
    )


def test_json_carries_the_warnings_the_table_shows(cli, tmp_path):
    (tmp_path / "few.csv").write_text(
        "id,acc,doc\n" + "".join(f"{i},{i % 3 > 0:d},d{i % 4}\n" for i in range(12))
    )
    out = _json(
        cli("stats", "mean", tmp_path / "few.csv", "--score", "acc", "--cluster", "doc", "--json")
    )
    assert any("only 12 questions" in w for w in out["warnings"])
    assert any("only 4 clusters" in w for w in out["warnings"])
    table = cli("stats", "mean", tmp_path / "few.csv", "--score", "acc", "--cluster", "doc")
    for w in out["warnings"]:
        assert w[:30] in " ".join(table.out.split())


def test_mean_table_uses_millers_format(cli, evals):
    res = cli("stats", "mean", evals[0] / "a.csv", "--score", "acc", "--cluster", "doc")
    assert res.code == 0
    assert "score (SE)" in res.out and "clusters" in res.out and "clustered SE (cr1) is" in res.out
    assert "t(79)" in res.out


def test_compare_json_contract_matches_ids_across_formats(cli, evals):
    path, a, b, doc = evals
    out = _json(
        cli(
            "stats",
            "compare",
            path / "a.csv",
            path / "b.jsonl",
            "--on",
            "id",
            "--score",
            "acc",
            "--json",
        )
    )
    assert set(out) >= {
        "diff",
        "se",
        "ci",
        "statistic",
        "pvalue",
        "df",
        "correlation",
        "n",
        "mean_a",
        "mean_b",
        "n_clusters",
        "mde",
        "effect_size",
        "n_dropped_a",
        "n_dropped_b",
        "warnings",
    }
    expected = compare(a, b)
    assert out["mean_a"] == pytest.approx(a.mean()) and out["mean_b"] == pytest.approx(b.mean())
    assert out["mde"] == pytest.approx(expected.mde) and out["pvalue"] == pytest.approx(
        expected.pvalue
    )
    assert out["diff"] == pytest.approx(a.mean() - b.mean())
    assert out["se"] == pytest.approx(expected.se) and out["correlation"] == pytest.approx(
        expected.correlation
    )
    clustered = _json(
        cli(
            "stats",
            "compare",
            path / "a.csv",
            path / "b.jsonl",
            "--on",
            "id",
            "--score",
            "acc",
            "--cluster",
            "doc",
            "--json",
        )
    )
    assert clustered["se"] == pytest.approx(compare(a, b, cluster=doc).se)
    with_test = _json(
        cli(
            "stats",
            "compare",
            path / "a.csv",
            path / "b.jsonl",
            "--on",
            "id",
            "--score",
            "acc",
            "--json",
            "--mcnemar",
        )
    )
    assert with_test["mcnemar"]["only_a"] == int(np.sum((a == 1) & (b == 0)))
    table = cli(
        "stats",
        "compare",
        path / "a.csv",
        path / "b.jsonl",
        "--on",
        "id",
        "--score",
        "acc",
        "--mcnemar",
    )
    assert "McNemar" in table.out and "diff" in table.out and "MDE" in table.out


def test_power_json_contract(cli):
    out = _json(cli("stats", "power", "--omega2", str(1 / 9), "--mde", "0.03", "--json"))
    assert (
        out["n"] == 969
        and isinstance(out["n"], int)
        and out["n_exact"] == pytest.approx(968.997, abs=1e-3)
    )
    assert out["solved"] == "n" and out["power"] == 0.8 and out["design_effect"] == 1.0
    out = _json(
        cli(
            "stats",
            "power",
            "--omega2",
            str(1 / 9),
            "--sigma2-a",
            str(1 / 6),
            "--sigma2-b",
            str(1 / 6),
            "--k-a",
            "10",
            "--k-b",
            "10",
            "--n",
            "198",
            "--json",
        )
    )
    assert (
        out["solved"] == "mde"
        and round(out["mde"], 3) == 0.076
        and out["omega2"] == pytest.approx(1 / 9)
    )
    at = _json(
        cli("stats", "power", "--omega2", str(1 / 9), "--n", "969", "--effect", "0.03", "--json")
    )
    assert at["solved"] == "power" and at["power"] == pytest.approx(0.8, abs=1e-3)
    clustered = _json(
        cli(
            "stats",
            "power",
            "--omega2",
            str(1 / 9),
            "--mde",
            "0.03",
            "--icc",
            "0.1",
            "--cluster-size",
            "11",
            "--one-sided",
            "--json",
        )
    )
    assert (
        clustered["design_effect"] == pytest.approx(2.0) and clustered["alternative"] == "one-sided"
    )
    assert clustered["n"] == int(
        np.ceil(2 * sample_size(0.03, 1 / 9, alternative="one-sided").n_exact)
    )


def test_power_from_pilot_files(cli, evals):
    path = evals[0]
    out = _json(
        cli(
            "stats",
            "power",
            "--pilot-a",
            path / "a.csv",
            "--pilot-b",
            path / "b.jsonl",
            "--on",
            "id",
            "--score",
            "acc",
            "--mde",
            "0.05",
            "--json",
        )
    )
    assert 100 < out["n"] < 5000


def test_bootstrap_metrics(cli, tmp_path):
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 300)
    p = np.where(rng.uniform(size=300) < 0.8, y, 1 - y)
    rows = ["y,p,nll,tok,hyp,ref"] + [
        f"{y[i]},{p[i]},{rng.uniform(5, 10):.3f},{rng.integers(3, 9)},a b c d e,a b c d f"
        for i in range(300)
    ]
    (tmp_path / "items.csv").write_text("\n".join(rows) + "\n")
    f1 = _json(
        cli(
            "stats",
            "bootstrap",
            tmp_path / "items.csv",
            "--metric",
            "f1",
            "--true",
            "y",
            "--pred",
            "p",
            "--resamples",
            "300",
            "--json",
        )
    )
    assert set(f1) >= {"statistic", "se", "ci"} and 0.7 < f1["statistic"] < 0.9 and f1["se"] > 0
    ppl = _json(
        cli(
            "stats",
            "bootstrap",
            tmp_path / "items.csv",
            "--metric",
            "perplexity",
            "--nll",
            "nll",
            "--tokens",
            "tok",
            "--json",
        )
    )
    assert ppl["statistic"] > 1
    bleu = _json(
        cli(
            "stats",
            "bootstrap",
            tmp_path / "items.csv",
            "--metric",
            "bleu",
            "--hyp",
            "hyp",
            "--ref",
            "ref",
            "--json",
        )
    )
    # every item: 4/5 unigrams, 3/4 bigrams, 2/3 trigrams, 1/2 four-grams match; equal lengths
    assert bleu["statistic"] == pytest.approx(100 * (4 / 5 * 3 / 4 * 2 / 3 * 1 / 2) ** 0.25)
    assert bleu["se"] == pytest.approx(0, abs=1e-9)
    missing = cli("stats", "bootstrap", tmp_path / "items.csv", "--metric", "f1", "--true", "y")
    assert missing.code == 2 and "--pred" in missing.err


def test_seeds(cli, tmp_path):
    rng = np.random.default_rng(2)
    rows = ["method,task,seed,score"]
    for method, shift in (("new", 0.1), ("old", 0.0)):
        for task in range(6):
            for seed in range(5):
                rows.append(f"{method},t{task},{seed},{rng.normal(0.5 + shift, 0.1):.4f}")
    (tmp_path / "runs.csv").write_text("\n".join(rows) + "\n")
    out = _json(
        cli(
            "stats",
            "seeds",
            tmp_path / "runs.csv",
            "--score",
            "score",
            "--task",
            "task",
            "--method",
            "method",
            "--resamples",
            "300",
            "--json",
        )
    )
    assert set(out["methods"]) == {"new", "old"}
    assert (
        out["methods"]["new"]["aggregates"]["iqm"]["statistic"]
        > out["methods"]["old"]["aggregates"]["iqm"]["statistic"]
    )
    assert out["probability_of_improvement"][0]["statistic"] > 0.5
    (tmp_path / "ragged.csv").write_text("\n".join(rows[:-1]) + "\n")
    ragged = cli(
        "stats",
        "seeds",
        tmp_path / "ragged.csv",
        "--score",
        "score",
        "--task",
        "task",
        "--method",
        "method",
    )
    assert ragged.code == 2 and "unequal runs per task" in ragged.err


def test_sequential_stops_early_on_a_clear_difference(cli, tmp_path):
    rng = np.random.default_rng(3)
    n = 3000
    p = rng.uniform(size=n)
    a = (rng.uniform(size=n) < np.clip(p + 0.3, 0, 1)).astype(int)
    b = (rng.uniform(size=n) < p).astype(int)
    (tmp_path / "a.csv").write_text("id,acc\n" + "".join(f"{i},{a[i]}\n" for i in range(n)))
    (tmp_path / "b.csv").write_text("id,acc\n" + "".join(f"{i},{b[i]}\n" for i in range(n)))
    out = _json(
        cli(
            "stats",
            "sequential",
            tmp_path / "a.csv",
            "--score",
            "acc",
            "--baseline",
            tmp_path / "b.csv",
            "--on",
            "id",
            "--threshold",
            "0",
            "--batch",
            "10",
            "--json",
        )
    )
    assert out["stopped"] and out["n_used"] < n / 2 and out["ci"][0] > 0
    tight = _json(
        cli(
            "stats",
            "sequential",
            tmp_path / "a.csv",
            "--score",
            "acc",
            "--width",
            "0.001",
            "--json",
        )
    )
    assert not tight["stopped"] and tight["n_used"] == n


def test_intervals(cli, tmp_path):
    out = _json(cli("stats", "intervals", "--successes", "10", "--n", "10", "--json"))
    assert out["intervals"]["normal"] == [1.0, 1.0] and out["intervals"]["wilson"][0] < 0.8
    (tmp_path / "s.csv").write_text("acc\n1\n0\n1\n")
    assert (
        _json(cli("stats", "intervals", tmp_path / "s.csv", "--score", "acc", "--json"))[
            "successes"
        ]
        == 2
    )


@pytest.mark.parametrize(
    "files, args, match",
    [
        ({"a.csv": "id,acc\n1,1\n2,nan\n"}, ["mean", "a.csv", "--score", "acc"], "row 2 is 'nan'"),
        (
            {"a.csv": "id,acc\n1,1\n2,0\n"},
            ["mean", "a.csv", "--score", "accuracy"],
            "no column 'accuracy'",
        ),
        (
            {"a.jsonl": "{broken\n"},
            ["mean", "a.jsonl", "--score", "acc"],
            "line 1 is not valid JSON",
        ),
        ({}, ["mean", "missing.csv", "--score", "acc"], "no such file"),
        (
            {"a.csv": "id,acc\n1,1\n2,0\n3,1\n", "b.csv": "id,acc\n1,1\n2,0\n4,1\n"},
            ["compare", "a.csv", "b.csv", "--on", "id", "--score", "acc", "--strict"],
            r"1 only in A \('3'\); 1 only in B \('4'\)",
        ),
        (
            {"a.csv": "id,acc\n1,1\n2,0\n"},
            ["mean", "a.csv", "--score", "acc", "--score", "id"],
            "--score given more than once",
        ),
        (
            {"a.csv": "id,acc\n1,1\n2,0\n"},
            ["mean", "a.csv", "--score=acc", "--cluster", "id", "--score", "id"],
            "--score given more than once",
        ),
        (
            {"a.csv": "id,x,y\n1,1,0\n2,0,0\n"},
            ["compare", "a.csv", "--score", "x"],
            "give --score twice",
        ),
        (
            {"a.csv": "id,x\n1,1\n", "b.csv": "id,x\n1,1\n"},
            ["compare", "a.csv", "b.csv", "--on", "id", "--score", "x", "--score", "y"],
            "two files take one --score",
        ),
        (
            {"f.json": '{"rows": [1]}', "a.csv": "id,x\n1,1\n", "b.csv": "id,x\n1,1\n"},
            ["compare", "a.csv", "b.csv", "--on", "id", "--score", "x", "--exclude", "f.json"],
            "an 'ids' or 'issues' list",
        ),
        (
            {"a.csv": "id,x\n1,1\n2,0\n"},
            ["leaderboard", "a.csv", "--score", "x"],
            "at least 2 files",
        ),
        ({}, ["power", "--omega2", "0.1"], "give mde="),
        (
            {},
            ["power", "--omega2", "0.1", "--mde", "0.1", "--icc", "0.1"],
            "--icc and --cluster-size go together",
        ),
        ({}, ["adjust"], "give p-values"),
        ({}, ["power", "--mde", "0.03"], "give omega2="),
        ({}, ["intervals", "--successes", "11", "--n", "10"], "cannot exceed"),
        (
            {"a.csv": "id,acc\n1,1\n2,0\n"},
            ["bootstrap", "a.csv", "--metric", "mean", "--score", "acc", "--seed", "-1"],
            "'--seed': -1 is not in the range",
        ),
        (
            {"a.csv": "id,acc\n1,1\n2,0\n"},
            ["bootstrap", "a.csv", "--metric", "mean", "--score", "acc", "--resamples", "0"],
            "'--resamples': 0 is not in the range",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(cli, tmp_path, monkeypatch, files, args, match):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    res = cli("stats", *args)
    assert res.code == 2
    assert res.err.startswith("labcoat: error:") and res.err.count("\n") == 1
    assert __import__("re").search(match, res.err), res.err


def test_runs_as_a_module_without_importing_torch(subprocess_env, evals):
    path = evals[0]
    code = (
        "import sys, labcoat.stats, labcoat.cli.stats; from labcoat.cli.main import main; "
        f"rc = main(['stats', 'mean', {str(path / 'a.csv')!r}, '--score', 'acc', '--json']); "
        "assert 'torch' not in sys.modules, 'torch was imported'; sys.exit(rc)"
    )
    res = subprocess.run(
        [sys.executable, "-c", code], env=subprocess_env, capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0, res.stderr
    assert {"mean", "se", "ci", "n", "n_clusters"} <= set(json.loads(res.stdout))


def test_mean_and_compare_do_not_import_scipy(subprocess_env, tmp_path):
    """``import scipy`` costs more than reading 100k rows; mean and compare need none of it."""
    rows = "".join(f"q{i},{i % 3 > 0:d},d{i // 50}\n" for i in range(3000))
    (tmp_path / "big.csv").write_text("id,acc,doc\n" + rows)
    code = (
        "import sys; from labcoat.cli.main import main; "
        f"rc = main(['stats', 'mean', {str(tmp_path / 'big.csv')!r}, '--score', 'acc', "
        "'--cluster', 'doc', '--json']); "
        f"rc += main(['stats', 'compare', {str(tmp_path / 'big.csv')!r}, "
        f"{str(tmp_path / 'big.csv')!r}, '--on', 'id', "
        "'--score', 'acc', '--cluster', 'doc', '--json']); "
        "assert 'scipy' not in sys.modules and 'pandas' not in sys.modules, 'heavy import'; "
        "sys.exit(rc)"
    )
    res = subprocess.run(
        [sys.executable, "-c", code], env=subprocess_env, capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0, res.stderr


def test_two_columns_of_a_wide_file(cli, tmp_path, evals):
    _, a, b, doc = evals
    rows = "".join(f"q{i},{a[i]},{b[i]},d{doc[i]}\n" for i in range(a.size))
    (tmp_path / "wide.csv").write_text("id,model_a,model_b,doc\n" + rows)
    out = _json(
        cli(
            "stats",
            "compare",
            tmp_path / "wide.csv",
            "--score",
            "model_a",
            "--score",
            "model_b",
            "--cluster",
            "doc",
            "--json",
        )
    )
    expected = compare(a, b, cluster=doc)
    assert out["diff"] == pytest.approx(expected.diff) and out["se"] == pytest.approx(expected.se)
    table = cli(
        "stats", "compare", tmp_path / "wide.csv", "--score", "model_a", "--score", "model_b"
    )
    assert "model_a − model_b" in table.out


def test_partial_overlap_uses_shared_ids_and_reports_the_dropped(cli, tmp_path):
    (tmp_path / "a.csv").write_text("id,acc\n" + "".join(f"q{i},{i % 2}\n" for i in range(50)))
    (tmp_path / "b.csv").write_text(
        "id,acc\n" + "".join(f"q{i},{i % 3 == 0:d}\n" for i in range(5, 60))
    )
    out = _json(
        cli(
            "stats",
            "compare",
            tmp_path / "a.csv",
            tmp_path / "b.csv",
            "--on",
            "id",
            "--score",
            "acc",
            "--json",
        )
    )
    assert out["n"] == 45 and out["n_dropped_a"] == 5 and out["n_dropped_b"] == 10
    assert any("5 question(s) only in A and 10 only in B" in w for w in out["warnings"])


def test_exclude_rescore_and_say_whether_the_decision_changes(cli, tmp_path):
    """A's lead comes from 40 questions flagged as label errors: without them it vanishes."""
    rng = np.random.default_rng(5)
    n = 400
    a = rng.binomial(1, 0.6, size=n)
    b = a.copy()
    flipped = rng.choice(n, size=40, replace=False)
    a[flipped], b[flipped] = 1, 0  # A right, B wrong only on the flagged questions
    (tmp_path / "a.csv").write_text("id,acc\n" + "".join(f"{i},{a[i]}\n" for i in range(n)))
    (tmp_path / "b.jsonl").write_text(
        "".join(json.dumps({"id": i, "acc": int(b[i])}) + "\n" for i in range(n))
    )
    (tmp_path / "flagged.json").write_text(
        json.dumps({"count": 40, "issues": [int(i) for i in flipped]})
    )
    out = _json(
        cli(
            "stats",
            "compare",
            tmp_path / "a.csv",
            tmp_path / "b.jsonl",
            "--on",
            "id",
            "--score",
            "acc",
            "--exclude",
            tmp_path / "flagged.json",
            "--json",
        )
    )
    ex = out["exclude"]
    assert ex["n_excluded_a"] == ex["n_excluded_b"] == 40 and out["n"] == n - 40
    assert (
        ex["decision_before"] == "A > B"
        and ex["decision"] == "no difference"
        and ex["decision_changed"]
    )
    table = cli(
        "stats",
        "compare",
        tmp_path / "a.csv",
        tmp_path / "b.jsonl",
        "--on",
        "id",
        "--score",
        "acc",
        "--exclude",
        tmp_path / "flagged.json",
    )
    assert "decision CHANGES" in " ".join(table.out.split())
    # the healthy twin: excluding 40 questions on which both models agree changes nothing
    same = [int(i) for i in np.setdiff1d(np.arange(n), flipped)[:40]]
    (tmp_path / "agree.json").write_text(json.dumps(same))
    kept = _json(
        cli(
            "stats",
            "compare",
            tmp_path / "a.csv",
            tmp_path / "b.jsonl",
            "--on",
            "id",
            "--score",
            "acc",
            "--exclude",
            tmp_path / "agree.json",
            "--json",
        )
    )
    assert kept["exclude"]["decision_changed"] is False and kept["exclude"]["n_excluded_a"] == 40


def test_permutation_flag(cli, evals):
    path = evals[0]
    out = _json(
        cli(
            "stats",
            "compare",
            path / "a.csv",
            path / "b.jsonl",
            "--on",
            "id",
            "--score",
            "acc",
            "--permutation",
            "--json",
        )
    )
    assert 0 <= out["permutation"]["pvalue"] <= 1 and out["permutation"]["n_units"] == 400


def _model_files(tmp_path, gains, n=300):
    rng = np.random.default_rng(11)
    p = rng.uniform(size=n)
    names = []
    for k, gain in enumerate(gains):
        s = (rng.uniform(size=n) < np.clip(p + gain, 0, 1)).astype(int)
        order = rng.permutation(n)
        name = f"model{k}.csv"
        (tmp_path / name).write_text(
            "id,acc,doc\n" + "".join(f"q{i},{s[i]},d{i // 6}\n" for i in order)
        )
        names.append(name)
    return names


def test_leaderboard_json_shape(cli, tmp_path):
    names = _model_files(tmp_path, [0.0, 0.02, 0.25])
    out = _json(
        cli(
            "stats",
            "leaderboard",
            *[tmp_path / f for f in names],
            "--on",
            "id",
            "--score",
            "acc",
            "--cluster",
            "doc",
            "--resamples",
            "300",
            "--json",
        )
    )
    assert [m["name"] for m in out["models"]][0] == "model2"
    assert set(out["models"][0]) >= {"name", "mean", "ci", "rank", "rank_ci"}
    assert set(out["pairs"][0]) >= {"a", "b", "diff", "ci", "pvalue", "pvalue_holm", "mde"}
    assert out["groups"] == [["model2"], ["model1", "model0"]] and out["n_clusters"] == 50
    named = _json(
        cli(
            "stats",
            "leaderboard",
            f"new={tmp_path / names[2]}",
            tmp_path / names[0],
            "--on",
            "id",
            "--score",
            "acc",
            "--resamples",
            "200",
            "--json",
        )
    )
    assert {m["name"] for m in named["models"]} == {"new", "model0"}


def test_gate_exit_codes(cli, tmp_path):
    names = _model_files(tmp_path, [0.0, 0.0, -0.3])
    old, same, worse = (tmp_path / f for f in names)
    allow = cli(
        "stats", "gate", same, old, "--on", "id", "--score", "acc", "--margin", "0.5", "--json"
    )
    assert allow.code == 0 and json.loads(allow.out)["decision"] == "ALLOW"
    reject = cli("stats", "gate", worse, old, "--on", "id", "--score", "acc", "--margin", "0.05")
    assert reject.code == 1 and "REJECT" in reject.out
    unsure = cli(
        "stats", "gate", same, old, "--on", "id", "--score", "acc", "--margin", "0.02", "--json"
    )
    out = json.loads(unsure.out)
    assert unsure.code == 4 and out["decision"] == "INCONCLUSIVE" and out["more_items"] > 0
    assert set(out) >= {"decision", "diff", "ci", "margin", "more_items", "warnings"}
    assert any("more questions would decide" in w for w in out["warnings"])
    (tmp_path / "short.csv").write_text((tmp_path / names[0]).read_text().rsplit("\n", 6)[0] + "\n")
    partial = json.loads(
        cli(
            "stats",
            "gate",
            same,
            tmp_path / "short.csv",
            "--on",
            "id",
            "--score",
            "acc",
            "--margin",
            "0.5",
            "--json",
        ).out
    )
    assert any("5 question(s) only in NEW and 0 only in OLD" in w for w in partial["warnings"])


def test_adjust_from_arguments_and_a_file(cli, tmp_path):
    out = _json(cli("stats", "adjust", "0.01", "0.04", "0.03", "--json"))
    assert out["adjusted"] == pytest.approx([0.03, 0.06, 0.06]) and out["method"] == "holm"
    (tmp_path / "p.csv").write_text("task,p\na,0.01\nb,0.04\nc,0.03\n")
    bh = _json(
        cli(
            "stats",
            "adjust",
            "--file",
            tmp_path / "p.csv",
            "--column",
            "p",
            "--label",
            "task",
            "--method",
            "bh",
            "--json",
        )
    )
    assert bh["adjusted"] == pytest.approx([0.03, 0.04, 0.04]) and bh["labels"] == ["a", "b", "c"]
    assert "Benjamini" in cli("stats", "adjust", "0.01", "0.2", "--method", "bh").out


def test_power_design_effect_from_pilot_files_with_clusters(cli, tmp_path):
    """Passages shift both models' differences together: the pilot's design effect says so."""
    rng = np.random.default_rng(12)
    n, size = 600, 20
    passage = np.arange(n) // size
    shift = rng.normal(0, 0.25, n // size)[passage]
    p = rng.uniform(0.2, 0.8, size=n)
    a = (rng.uniform(size=n) < np.clip(p + shift, 0, 1)).astype(int)
    b = (rng.uniform(size=n) < p).astype(int)
    (tmp_path / "a.csv").write_text(
        "id,acc,doc\n" + "".join(f"q{i},{a[i]},d{passage[i]}\n" for i in range(n))
    )
    (tmp_path / "b.csv").write_text("id,acc\n" + "".join(f"q{i},{b[i]}\n" for i in range(n)))
    pilot = [
        "--pilot-a",
        tmp_path / "a.csv",
        "--pilot-b",
        tmp_path / "b.csv",
        "--on",
        "id",
        "--score",
        "acc",
    ]
    flat = _json(cli("stats", "power", *pilot, "--mde", "0.15", "--json"))
    clustered = _json(cli("stats", "power", *pilot, "--cluster", "doc", "--mde", "0.15", "--json"))
    assert flat["design_effect"] == 1.0 and clustered["design_effect"] > 1.5
    assert clustered["n"] > 1.5 * flat["n"]
