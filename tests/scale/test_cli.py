"""``labcoat scale``: JSON contracts, table output, file formats, one-line errors (exit 2)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest

from .conftest import curve_runs, synthetic_runs


@pytest.fixture(scope="module")
def runs_csv(tmp_path_factory):
    N, D, L = synthetic_runs(n=30, noise=0.01)
    path = tmp_path_factory.mktemp("scale") / "runs.csv"
    rows = ["params,tokens,flops,loss"] + [
        ",".join(repr(float(v)) for v in (n, d, 6 * n * d, l)) for n, d, l in zip(N, D, L)
    ]
    path.write_text("\n".join(rows) + "\n")
    return path


DATA = ("--n", "params", "--d", "tokens", "--loss", "loss", "--resamples", "20", "--no-ledger")


def _json(res):
    assert res.code == 0, res.err
    return json.loads(res.out)


def _timeless(out):
    """The findings ``out`` held (popped), without how long each check took."""
    return [{**f, "duration_s": None} for f in out.pop("findings")]


def _one_error_line(res):
    assert res.code == 2, (res.code, res.out, res.err)
    lines = res.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("labcoat: error: "), res.err
    return lines[0]


def test_fit_json_contract(cli, runs_csv):
    out = _json(cli("scale", "fit", runs_csv, *DATA, "--json"))
    assert {"params", "ci", "n_points", "objective", "warnings"} <= set(out)
    assert set(out["params"]) == {"A", "B", "E", "alpha", "beta"}
    assert all(lo <= out["params"][k] <= hi for k, (lo, hi) in out["ci"].items())
    assert out["n_points"] == 30 and out["bootstrap"] == 20


def test_d_is_derived_from_flops_when_there_is_no_d_column(runs_csv):
    from labcoat.scale.data import read_runs as _columns

    n, d, loss = _columns(str(runs_csv), "params", "tokens", None, None, "loss", "chinchilla")
    n2, d2, loss2 = _columns(str(runs_csv), "params", None, "flops", None, "loss", "chinchilla")
    assert np.allclose(d2, d, rtol=1e-12) and np.array_equal(n, n2) and np.array_equal(loss, loss2)


def test_predict_optimal_and_backtest_json(cli, runs_csv):
    pred = _json(
        cli("scale", "predict", runs_csv, *DATA, "--at", "1e10,2e11", "--at", "1e9,1e10", "--json")
    )
    assert [p["N"] for p in pred["predictions"]] == [1e10, 1e9]
    first = pred["predictions"][0]
    assert first["interval"][0] < first["loss"] < first["interval"][1]
    opt = _json(cli("scale", "optimal", runs_csv, *DATA, "--flops", "1e21", "--json"))
    row = opt["optimal"][0]
    assert row["N"] * row["D"] * 6 == pytest.approx(1e21) and row["N_interval"][0] < row["N"]


@pytest.fixture(scope="module")
def curve_jsonl(tmp_path_factory):
    x, L = curve_runs()
    path = tmp_path_factory.mktemp("scale") / "curve.jsonl"
    path.write_text(
        "".join(json.dumps({"step": float(a), "loss": float(b)}) + "\n" for a, b in zip(x, L))
    )
    return path


CURVE = ("--form", "curve", "--x", "step", "--loss", "loss", "--resamples", "20", "--no-ledger")


def test_backtest_json_and_tables(cli, curve_jsonl):
    back = _json(cli("scale", "backtest", curve_jsonl, *CURVE, "--holdout-top", "5", "--json"))
    assert {"mape", "coverage", "points"} <= set(back) and back["n_holdout"] == 5
    assert {"observed", "loss", "interval", "error", "covered"} <= set(back["points"][0])
    res = cli("scale", "backtest", curve_jsonl, *CURVE, "--holdout-top", "5")
    assert res.code == 0, res.err
    assert "MAPE" in res.out and "coverage" in res.out
    fit = cli("scale", "fit", curve_jsonl, *CURVE)
    assert fit.code == 0 and "alpha" in fit.out and "scale.flat" in fit.out


def test_curve_from_jsonl_and_parquet(cli, tmp_path, curve_jsonl):
    x, L = curve_runs()
    jsonl = curve_jsonl
    args = (
        "--form",
        "curve",
        "--x",
        "step",
        "--loss",
        "loss",
        "--resamples",
        "20",
        "--no-ledger",
        "--json",
    )
    from_jsonl = _json(cli("scale", "predict", jsonl, *args, "--at", "1e6"))
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"step": x, "loss": L}), tmp_path / "curve.parquet")
    from_parquet = _json(cli("scale", "predict", tmp_path / "curve.parquet", *args, "--at", "1e6"))
    assert _timeless(from_parquet) == _timeless(from_jsonl)  # the fit's checks, untimed
    assert from_parquet == from_jsonl
    assert from_jsonl["predictions"][0]["loss"] == pytest.approx(2 + 50 * 1e6**-0.5, rel=0.02)


@pytest.mark.parametrize(
    "extra,message",
    [
        (("--n", "size", "--d", "tokens"), "no column 'size'"),
        (("--n", "params"), "--d: give the data column"),
        (("--n", "params", "--d", "tokens", "--flops", "flops"), "--d and --flops: give one"),
        (("--form", "curve"), "--form curve: give --x COL"),
    ],
)
def test_bad_columns_are_one_line(cli, runs_csv, extra, message):
    line = _one_error_line(cli("scale", "fit", runs_csv, *extra, "--loss", "loss", "--no-ledger"))
    assert message in line


def test_bad_values_and_files_are_one_line(cli, runs_csv, tmp_path):
    assert "--at: expected N,D" in _one_error_line(
        cli("scale", "predict", runs_csv, *DATA, "--at", "1e10")
    )
    assert "no such file" in _one_error_line(cli("scale", "fit", tmp_path / "missing.csv", *DATA))
    bad = tmp_path / "bad.csv"
    bad.write_text(runs_csv.read_text().replace("\n", "\n1e9,1e10,6e19,-2.0\n", 1))
    assert "column 'loss' row 1 is -2" in _one_error_line(cli("scale", "fit", bad, *DATA))
    text = tmp_path / "text.csv"
    text.write_text(runs_csv.read_text().replace("\n", "\n1e9,1e10,6e19,oops\n", 1))
    assert "column 'loss' row 1 is 'oops'" in _one_error_line(cli("scale", "fit", text, *DATA))
    assert "--holdout-top: 30 of 30 runs" in _one_error_line(
        cli("scale", "backtest", runs_csv, *DATA, "--holdout-top", "30")
    )
    assert "--form: optimal allocation needs" in _one_error_line(
        cli(
            "scale",
            "optimal",
            runs_csv,
            "--x",
            "params",
            "--form",
            "curve",
            "--loss",
            "loss",
            "--flops",
            "1e20",
        )
    )


def test_scale_help_does_not_import_scipy(subprocess_env):
    code = (
        "import contextlib, io, sys\n"
        "from labcoat.cli.main import main\n"
        "for args in [['scale'], ['scale', 'fit'], ['scale', 'backtest']]:\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        "        assert main([*args, '--help']) == 0\n"
        "import labcoat\n"
        "assert 'scipy' not in sys.modules and 'numpy' not in sys.modules, 'imported eagerly'\n"
        "assert callable(labcoat.scale.fit)\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", code], env=subprocess_env, capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0, res.stderr


@pytest.mark.slow
def test_backtest_by_a_column_gives_one_result_per_curve(cli, tmp_path):
    rows = ["task,examples,loss"]
    for task, seed in (("a", 1), ("b", 2)):
        x, L = curve_runs(x=np.logspace(2, 5, 25), noise=0.01, seed=seed)
        rows += [f"{task},{float(v)!r},{float(l)!r}" for v, l in zip(x, L)]
    path = tmp_path / "curves.csv"
    path.write_text("\n".join(rows) + "\n")
    args = ("--x", "examples", "--loss", "loss", "--form", "m2", "--by", "task")
    out = _json(
        cli("scale", "backtest", path, *args, "--holdout-top", "4", "--resamples", "0", "--json")
    )
    assert out["groups"] == 2 and set(out["results"]) == {"a", "b"}
    assert out["results"]["a"]["n_holdout"] == 4 and out["results"]["a"]["interval"] == "calibrated"
    assert out["coverage"] >= 0.75
    table = cli("scale", "backtest", path, *args, "--holdout-top", "4", "--resamples", "0")
    assert table.code == 0 and "backtests by group" in table.out and "median width" in table.out


def test_the_old_by_n_or_compute_still_picks_the_holdout_with_a_note(cli, curve_jsonl):
    """``--by n|compute`` named the holdout before ``--by`` named a column of curves: it keeps
    working one release, says what replaces it, and gives the --holdout-by answer."""
    old = cli("scale", "backtest", curve_jsonl, *CURVE, "--holdout-top", "5", "--by", "n", "--json")
    new = cli(
        "scale",
        "backtest",
        curve_jsonl,
        *CURVE,
        "--holdout-top",
        "5",
        "--holdout-by",
        "n",
        "--json",
    )
    assert old.code == 0 and "use --holdout-by n" in old.err
    assert _json(old)["points"] == _json(new)["points"]


@pytest.fixture(scope="module")
def seeds_csv(tmp_path_factory):
    """A learning curve as a user trains one: 8 sizes n = 50·2^k, 3 seeds each, the loss and a
    downstream accuracy that follows it."""
    rng = np.random.default_rng(0)
    rows = ["size,seed,loss,accuracy"]
    for k in range(8):
        for seed in range(3):
            loss = (0.3 + 2.0 * (50 * 2**k) ** -0.4) * np.exp(rng.normal(0, 0.02))
            accuracy = 1 - loss / 2.5 + rng.normal(0, 0.005)
            rows.append(f"{50 * 2**k},{seed},{float(loss)!r},{float(accuracy)!r}")
    path = tmp_path_factory.mktemp("scale") / "seeds.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


SEEDS = ("--x", "size", "--loss", "loss", "--form", "m2", "--resamples", "20", "--no-ledger")
DOWNSTREAM = ("--target", "accuracy", "--metric", "accuracy")


@pytest.mark.parametrize(
    "command",
    [
        ("fit",),
        ("predict", "--at", "25600"),
        ("backtest", "--holdout-top", "6"),
        ("fit", *DOWNSTREAM),
        ("predict", "--at", "25600", *DOWNSTREAM),
    ],
    ids=["fit", "predict", "backtest", "fit-accuracy", "predict-accuracy"],
)
def test_html_writes_one_self_contained_page(cli, seeds_csv, tmp_path, command):
    """--html on fit, predict and backtest writes the answer's page (once an internal error:
    the page was asked for with an option no section takes)."""
    pytest.importorskip("matplotlib")
    page = tmp_path / "page.html"
    res = cli("scale", command[0], seeds_csv, *SEEDS, *command[1:], "--html", page)
    assert res.code == 0, res.err
    html = page.read_text()
    assert "default-src 'none'" in html and "<script" not in html
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)  # nothing fetched
    if command[0] == "predict":
        assert "25600" in html.replace(",", "") or "2.56e+04" in html  # the prediction's row
    if "--target" in command:
        assert "predictable" in html


def test_the_fit_table_says_how_many_seeds_each_size_has(cli, seeds_csv, curve_jsonl):
    assert "24 runs at 8 sizes, 3 seeds each" in cli("scale", "fit", seeds_csv, *SEEDS).out
    assert "40 runs at 40 sizes, 1 seed each" in cli("scale", "fit", curve_jsonl, *CURVE).out


def test_backtest_shows_each_held_out_run_beside_the_seed_means(cli, seeds_csv, curve_jsonl):
    out = cli("scale", "backtest", seeds_csv, *SEEDS, "--holdout-top", "6").out
    runs = out[out.index("held-out runs") :].splitlines()
    numbered = [line.split("│")[1].strip() for line in runs if line.startswith("│")]
    assert numbered == ["19", "20", "21", "22", "23", "24"]  # the file's rows, counted from 1
    once = cli("scale", "backtest", curve_jsonl, *CURVE, "--holdout-top", "5")
    assert once.code == 0 and "held-out runs" not in once.out  # one run per size: one table


@pytest.mark.parametrize(
    "command",
    [("fit",), ("predict", "--at", "200"), ("backtest", "--holdout-top", "1")],
    ids=["fit", "predict", "backtest"],
)
@pytest.mark.parametrize("form", ["auto", "m2", "curve"])
def test_runs_all_at_one_size_are_one_line(cli, tmp_path, command, form):
    same = tmp_path / "same.csv"
    same.write_text("size,loss\n" + "".join(f"100,{0.5 + 0.01 * s}\n" for s in range(6)))
    args = ("--x", "size", "--loss", "loss", "--form", form, "--no-ledger")
    line = _one_error_line(cli("scale", command[0], same, *args, *command[1:]))
    assert f"{same}: --x size: all 6 runs are at one size (100)" in line


def test_holdout_top_that_leaves_one_size_to_fit_names_the_option_and_its_most(cli, seeds_csv):
    line = _one_error_line(cli("scale", "backtest", seeds_csv, *SEEDS, "--holdout-top", "19"))
    assert line.startswith("labcoat: error: --holdout-top: 19 holds out 21 of 24 runs")
    assert "all at one size (50)" in line and line.endswith("hold out at most 18")
    ties = _one_error_line(cli("scale", "backtest", seeds_csv, *SEEDS, "--holdout-top", "22"))
    assert "holds out 24 of 24 runs (size >= 50, ties included)" in ties
    most = cli("scale", "backtest", seeds_csv, *SEEDS, "--holdout-top", "18", "--resamples", "0")
    assert most.code == 0, most.err


def test_a_downstream_fit_is_recorded_where_ledger_says(cli, seeds_csv, tmp_path):
    location = tmp_path / "ledger.db"
    args = (*SEEDS[:-1], *DOWNSTREAM, "--ledger", location)
    assert cli("scale", "fit", seeds_csv, *args).code == 0
    found = _json(cli("ledger", "findings", "--ledger", location, "--json"))["findings"]
    assert [f["check"] for f in found] == ["scale.downstream"]


def test_a_bad_metric_column_is_named_by_file_and_option(cli, seeds_csv):
    line = _one_error_line(
        cli("scale", "fit", seeds_csv, *SEEDS, "--target", "accuracy", "--metric", "size")
    )
    assert line.startswith(
        f"labcoat: error: {seeds_csv}: --metric size: accuracy must lie in [0, 1]"
    )


def test_a_downstream_fit_says_which_loss_law_it_used_when_form_names_another(cli, seeds_csv):
    args = ("--x", "size", "--loss", "loss", *DOWNSTREAM, "--no-ledger")
    auto = cli("scale", "fit", seeds_csv, *args, "--form", "auto")
    assert auto.code == 0 and "fits the loss with m2; --form auto only chose" in auto.err
    m2 = cli("scale", "fit", seeds_csv, *args, "--form", "m2")
    assert m2.code == 0 and m2.err == ""


def test_backtest_by_group_where_every_group_is_refused_is_one_line(cli, seeds_csv, tmp_path):
    runs = seeds_csv.read_text().splitlines()
    path = tmp_path / "groups.csv"
    path.write_text(
        "\n".join(["task," + runs[0]] + [f"{t},{r}" for t in "ab" for r in runs[1:]]) + "\n"
    )
    args = (*SEEDS, "--resamples", "0", "--by", "task")
    line = _one_error_line(cli("scale", "backtest", path, *args, "--holdout-top", "19"))
    assert "--by task: none of the 2 groups could be backtested (a: " in line
    # a group that is refused beside one that is not: the backtest of the one, the other named
    lone = tmp_path / "one_refused.csv"
    lone.write_text(path.read_text() + "".join(f"c,{50 * 2**k},0,0.5,0.7\n" for k in range(2)))
    res = cli("scale", "backtest", lone, *args, "--holdout-top", "3")
    assert res.code == 0 and "c: " in res.out, res.err
