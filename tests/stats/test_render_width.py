"""In an 80-column terminal no stats number is cut with "…", and the labels say what was
computed (issue 24, item 9)."""

from __future__ import annotations

import re

import numpy as np
import pytest


@pytest.fixture
def evals(tmp_path):
    rng = np.random.default_rng(0)
    n = 500
    doc = np.arange(n) // 5
    for name, p in (("a", 0.7), ("b", 0.65), ("c", 0.6)):
        acc = (rng.uniform(size=n) < p).astype(int)
        (tmp_path / f"{name}.csv").write_text(
            "id,acc,doc\n" + "".join(f"q{i},{acc[i]},d{doc[i]}\n" for i in range(n))
        )
    (tmp_path / "seeds.csv").write_text(
        "method,task,seed,score\n"
        + "".join(
            f"{m},{t},{s},{rng.uniform():.6f}\n"
            for m in ("ppo", "sac")
            for t in ("t1", "t2")
            for s in range(4)
        )
    )
    return tmp_path


def commands(d):
    a, b, c = d / "a.csv", d / "b.csv", d / "c.csv"
    return [
        ("stats", "mean", a, "--score", "acc", "--cluster", "doc"),
        ("stats", "compare", a, b, "--on", "id", "--score", "acc"),
        ("stats", "compare", a, b, "--on", "id", "--score", "acc", "--cluster", "doc"),
        ("stats", "compare", a, b, "--unpaired", "--score", "acc"),
        ("stats", "leaderboard", a, b, c, "--on", "id", "--score", "acc"),
        (
            "stats",
            "power",
            "--pilot-a",
            a,
            "--pilot-b",
            b,
            "--on",
            "id",
            "--score",
            "acc",
            "--mde",
            "0.03",
        ),  # fmt: skip
        ("stats", "bootstrap", a, "--metric", "mean", "--score", "acc", "--resamples", "100"),
        (
            "stats",
            "seeds",
            d / "seeds.csv",
            "--score",
            "score",
            "--task",
            "task",
            "--method",
            "method",
            "--resamples",
            "100",
        ),  # fmt: skip
        ("stats", "sequential", a, "--score", "acc", "--width", "0.1"),
        ("stats", "intervals", a, "--score", "acc"),
    ]


def _run(cli, monkeypatch, columns, args):
    monkeypatch.setenv("COLUMNS", str(columns))
    res = cli(*args, *(["--no-ledger"] if args[1] in ("mean", "compare", "leaderboard") else []))
    assert res.code == 0, res.err
    return res.out


def test_no_number_is_cut_at_80_columns(cli, monkeypatch, evals):
    for args in commands(evals):
        out = _run(cli, monkeypatch, 80, args)
        assert "…" not in out, (args[1], out)
        assert max(len(line) for line in out.splitlines()) <= 80, (args[1], out)


def test_the_interval_is_printed_whole_at_80_columns(cli, monkeypatch, evals):
    args = ("stats", "compare", evals / "a.csv", evals / "b.csv", "--on", "id", "--score", "acc")
    narrow = _run(cli, monkeypatch, 80, args)
    assert re.search(r"\[-0\.\d+, 0\.\d+\]", narrow), narrow  # on one line, uncut
    # the healthy twin: a wide terminal keeps the one-row table, headers across the top
    wide = _run(cli, monkeypatch, 160, args)
    assert re.search(r"diff \(SE\).*95% CI.*clusters", wide) and "…" not in wide


def test_labels_say_what_was_computed(cli, monkeypatch, evals):
    a, b = evals / "a.csv", evals / "b.csv"
    plain = _run(cli, monkeypatch, 100, ("stats", "compare", a, b, "--on", "id", "--score", "acc"))
    assert "cr1" not in plain.lower() and "500 independent paired differences" in plain
    assert "df 499" in plain
    clustered = _run(
        cli,
        monkeypatch,
        100,
        ("stats", "compare", a, b, "--on", "id", "--score", "acc", "--cluster", "doc"),
    )
    assert "CR1 cluster-robust SE over 100 clusters" in clustered and "df 99" in clustered
