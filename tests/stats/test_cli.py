"""``labcoat stats``: JSON contracts, tables, and one-line errors with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from labcoat.stats import compare, mean


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
        "".join(json.dumps({"id": f"q{i}", "acc": int(b[i]), "doc": f"d{doc[i]}"}) + "\n" for i in order)
    )
    return tmp_path, a, b, doc


def _json(res):
    assert res.code == 0, res.err
    return json.loads(res.out)


def test_mean_json_contract(cli, evals):
    path, a, _, doc = evals
    out = _json(cli("stats", "mean", path / "a.csv", "--score", "acc", "--cluster", "doc", "--json"))
    assert set(out) == {"mean", "se", "ci", "n", "n_clusters"}
    expected = mean(a, cluster=doc)
    assert out["se"] == pytest.approx(expected.se) and out["n_clusters"] == 80 and out["n"] == 400
    assert out["ci"] == pytest.approx(list(expected.ci))
    plain = _json(cli("stats", "mean", path / "a.csv", "--score", "acc", "--json"))
    assert plain["n_clusters"] is None and plain["se"] == pytest.approx(expected.se_clt)


def test_mean_table_uses_millers_format(cli, evals):
    res = cli("stats", "mean", evals[0] / "a.csv", "--score", "acc", "--cluster", "doc")
    assert res.code == 0
    assert "score (SE)" in res.out and "clusters" in res.out and "clustered SE is" in res.out


def test_compare_json_contract_matches_ids_across_formats(cli, evals):
    path, a, b, doc = evals
    out = _json(cli("stats", "compare", path / "a.csv", path / "b.jsonl", "--on", "id", "--score", "acc", "--json"))
    assert set(out) == {"diff", "se", "ci", "z", "p_value", "correlation", "n"}
    expected = compare(a, b)
    assert out["diff"] == pytest.approx(a.mean() - b.mean())
    assert out["se"] == pytest.approx(expected.se) and out["correlation"] == pytest.approx(expected.correlation)
    clustered = _json(cli("stats", "compare", path / "a.csv", path / "b.jsonl", "--on", "id", "--score", "acc", "--cluster", "doc", "--json"))
    assert clustered["se"] == pytest.approx(compare(a, b, cluster=doc).se)
    with_test = _json(cli("stats", "compare", path / "a.csv", path / "b.jsonl", "--on", "id", "--score", "acc", "--json", "--mcnemar"))
    assert with_test["mcnemar"]["only_a"] == int(np.sum((a == 1) & (b == 0)))
    table = cli("stats", "compare", path / "a.csv", path / "b.jsonl", "--on", "id", "--score", "acc")
    assert "McNemar" in table.out and "diff (SE)" in table.out


def test_power_json_contract(cli):
    assert _json(cli("stats", "power", "--omega2", str(1 / 9), "--mde", "0.03", "--json")) == {"n": pytest.approx(969, abs=0.5)}
    out = _json(cli("stats", "power", "--omega2", str(1 / 9), "--sigma2-a", str(1 / 6), "--sigma2-b", str(1 / 6),
                    "--k-a", "10", "--k-b", "10", "--n", "198", "--json"))
    assert set(out) == {"mde"} and round(out["mde"], 3) == 0.076


def test_power_from_pilot_files(cli, evals):
    path = evals[0]
    out = _json(cli("stats", "power", "--pilot-a", path / "a.csv", "--pilot-b", path / "b.jsonl", "--on", "id",
                    "--score", "acc", "--mde", "0.05", "--json"))
    assert 100 < out["n"] < 5000


def test_bootstrap_metrics(cli, tmp_path):
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 300)
    p = np.where(rng.uniform(size=300) < 0.8, y, 1 - y)
    rows = ["y,p,nll,tok,hyp,ref"] + [f"{y[i]},{p[i]},{rng.uniform(5, 10):.3f},{rng.integers(3, 9)},a b c d e,a b c d f" for i in range(300)]
    (tmp_path / "items.csv").write_text("\n".join(rows) + "\n")
    f1 = _json(cli("stats", "bootstrap", tmp_path / "items.csv", "--metric", "f1", "--true", "y", "--pred", "p",
                   "--resamples", "300", "--json"))
    assert set(f1) >= {"statistic", "se", "ci"} and 0.7 < f1["statistic"] < 0.9 and f1["se"] > 0
    ppl = _json(cli("stats", "bootstrap", tmp_path / "items.csv", "--metric", "perplexity", "--nll", "nll", "--tokens", "tok", "--json"))
    assert ppl["statistic"] > 1
    bleu = _json(cli("stats", "bootstrap", tmp_path / "items.csv", "--metric", "bleu", "--hyp", "hyp", "--ref", "ref", "--json"))
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
    out = _json(cli("stats", "seeds", tmp_path / "runs.csv", "--score", "score", "--task", "task", "--method", "method",
                    "--resamples", "300", "--json"))
    assert set(out["methods"]) == {"new", "old"}
    assert out["methods"]["new"]["aggregates"]["iqm"]["estimate"] > out["methods"]["old"]["aggregates"]["iqm"]["estimate"]
    assert out["probability_of_improvement"][0]["estimate"] > 0.5
    (tmp_path / "ragged.csv").write_text("\n".join(rows[:-1]) + "\n")
    ragged = cli("stats", "seeds", tmp_path / "ragged.csv", "--score", "score", "--task", "task", "--method", "method")
    assert ragged.code == 2 and "unequal runs per task" in ragged.err


def test_sequential_stops_early_on_a_clear_difference(cli, tmp_path):
    rng = np.random.default_rng(3)
    n = 3000
    p = rng.uniform(size=n)
    a = (rng.uniform(size=n) < np.clip(p + 0.3, 0, 1)).astype(int)
    b = (rng.uniform(size=n) < p).astype(int)
    (tmp_path / "a.csv").write_text("id,acc\n" + "".join(f"{i},{a[i]}\n" for i in range(n)))
    (tmp_path / "b.csv").write_text("id,acc\n" + "".join(f"{i},{b[i]}\n" for i in range(n)))
    out = _json(cli("stats", "sequential", tmp_path / "a.csv", "--score", "acc", "--baseline", tmp_path / "b.csv",
                    "--on", "id", "--threshold", "0", "--batch", "10", "--json"))
    assert out["stopped"] and out["n_used"] < n / 2 and out["ci"][0] > 0
    tight = _json(cli("stats", "sequential", tmp_path / "a.csv", "--score", "acc", "--width", "0.001", "--json"))
    assert not tight["stopped"] and tight["n_used"] == n


def test_intervals(cli, tmp_path):
    out = _json(cli("stats", "intervals", "--successes", "10", "--n", "10", "--json"))
    assert out["intervals"]["normal"] == [1.0, 1.0] and out["intervals"]["wilson"][0] < 0.8
    (tmp_path / "s.csv").write_text("acc\n1\n0\n1\n")
    assert _json(cli("stats", "intervals", tmp_path / "s.csv", "--score", "acc", "--json"))["successes"] == 2


@pytest.mark.parametrize(
    "files, args, match",
    [
        ({"a.csv": "id,acc\n1,1\n2,nan\n"}, ["mean", "a.csv", "--score", "acc"], "row 2 is 'nan'"),
        ({"a.csv": "id,acc\n1,1\n2,0\n"}, ["mean", "a.csv", "--score", "accuracy"], "no column 'accuracy'"),
        ({"a.jsonl": "{broken\n"}, ["mean", "a.jsonl", "--score", "acc"], "line 1 is not valid JSON"),
        ({}, ["mean", "missing.csv", "--score", "acc"], "no such file"),
        (
            {"a.csv": "id,acc\n1,1\n2,0\n3,1\n", "b.csv": "id,acc\n1,1\n2,0\n4,1\n"},
            ["compare", "a.csv", "b.csv", "--on", "id", "--score", "acc"],
            r"1 only in A \('3'\); 1 only in B \('4'\)",
        ),
        ({}, ["power", "--omega2", "0.1"], "exactly one of --mde"),
        ({}, ["power", "--mde", "0.03"], "give --omega2"),
        ({}, ["intervals", "--successes", "11", "--n", "10"], "cannot exceed"),
        ({"a.csv": "id,acc\n1,1\n2,0\n"}, ["bootstrap", "a.csv", "--metric", "mean", "--score", "acc", "--seed", "-1"], "'--seed': -1 is not in the range"),
        ({"a.csv": "id,acc\n1,1\n2,0\n"}, ["bootstrap", "a.csv", "--metric", "mean", "--score", "acc", "--resamples", "0"], "'--resamples': 0 is not in the range"),
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
    res = subprocess.run([sys.executable, "-c", code], env=subprocess_env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert set(json.loads(res.stdout)) == {"mean", "se", "ci", "n", "n_clusters"}
