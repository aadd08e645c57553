"""Ids on more than one row are an error naming them, or with ``--duplicates mean`` averaged
per id, in every stats command and the audit readers; words read as numbers are said (issue 24,
items 6 and 10)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from labcoat.errors import InputError, LabcoatNote
from labcoat.stats.readers import check_ids, read_table


@pytest.fixture
def files(tmp_path):
    """500 rows, 49 ids on two rows each (the planted mistake), and the healthy twin."""
    rng = np.random.default_rng(0)
    ids = [f"q{i}" for i in range(451)] + [f"q{i}" for i in range(49)]
    a = (rng.uniform(size=500) < 0.7).astype(int)
    b = (rng.uniform(size=500) < 0.6).astype(int)
    rows = lambda ids_: "".join(f"{i},{x},{y},d{int(i[1:]) % 40}\n" for i, x, y in ids_)
    dup = tmp_path / "dup.csv"
    dup.write_text("id,acc,acc2,doc\n" + rows(zip(ids, a, b)))
    ok = tmp_path / "ok.csv"
    ok.write_text("id,acc,acc2,doc\n" + rows(zip(ids[:451], a[:451], b[:451])))
    return dup, ok


COMMANDS = [
    ("mean", "{f}", "--score", "acc"),
    ("compare", "{f}", "--score", "acc", "--score", "acc2"),
    ("compare", "{f}", "{f}", "--on", "id", "--score", "acc"),
    ("compare", "{f}", "{f}", "--unpaired", "--score", "acc"),
    ("leaderboard", "A={f}", "B={f}", "--on", "id", "--score", "acc"),
    ("gate", "{f}", "{f}", "--on", "id", "--score", "acc", "--margin", "0.1"),
    ("bootstrap", "{f}", "--metric", "mean", "--score", "acc", "--resamples", "50"),
    ("sequential", "{f}", "--score", "acc", "--width", "0.3"),
    ("intervals", "{f}", "--score", "acc"),
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: "-".join(c[:3]))
def test_every_stats_command_refuses_repeated_ids(cli, files, command):
    dup, ok = files
    args = [a.format(f=dup) for a in command]
    bad = cli("stats", *args, "--no-ledger" if command[0] in ("mean", "compare") else "--json")
    assert bad.code == 2, (bad.code, bad.err)
    assert "49 id(s) in column 'id' appear on more than one row" in bad.err
    assert "'q0' x2" in bad.err and "--duplicates mean" in bad.err and bad.err.count("\n") == 1
    good = cli("stats", *[a.format(f=ok) for a in command], "--json")
    assert good.code in (0, 1), good.err  # the healthy twin (gate may reject: exit 1)
    assert "appear on more than one row" not in good.err


def test_duplicates_mean_averages_the_rows_of_each_id(cli, files):
    dup, _ = files
    out = cli("stats", "mean", dup, "--score", "acc", "--duplicates", "mean", "--json")
    assert out.code == 0, out.err
    data = json.loads(out.out)
    table = read_table(dup, duplicates="mean")
    assert data["n"] == 451 == len(table)
    raw = read_table(dup, duplicates="mean")  # same as averaging by hand
    acc = np.loadtxt(dup, delimiter=",", skiprows=1, usecols=1)
    assert raw.scores("acc")[0] == pytest.approx((acc[0] + acc[451]) / 2)
    assert data["mean"] == pytest.approx(raw.scores("acc").mean())
    paired = cli(
        "stats", "compare", dup, dup, "--on", "id", "--score", "acc", "--duplicates", "mean"
    )
    assert paired.code == 0, paired.err


def test_an_id_per_task_or_epoch_is_not_a_duplicate(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("id,epoch,acc\nq1,1,1\nq1,2,0\nq2,1,1\nq2,2,1\n")
    assert len(read_table(path)) == 4  # K answers, one per epoch: rightly repeated
    path.write_text("id,epoch,acc\nq1,1,1\nq1,1,0\nq2,1,1\n")
    with pytest.raises(InputError, match="within the same epoch"):
        read_table(path)


def test_a_text_column_that_differs_within_an_id_cannot_be_averaged(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("id,acc,answer,doc\nq1,1,A,d1\nq1,0,B,d1\nq2,1,C,d2\n")
    table = read_table(path, duplicates="mean")
    assert table.scores("acc").tolist() == [0.5, 1.0] and table.labels("doc").tolist() == [
        "d1",
        "d2",
    ]
    with pytest.raises(InputError, match="column 'answer' differs between the rows of id 'q1'"):
        table.column("answer")
    with pytest.raises(InputError, match="`duplicates` must be one of"):
        check_ids(read_table(path, id_column="answer"), duplicates="drop")


def test_audit_readers_refuse_repeated_ids(cli, tmp_path):
    np.save(tmp_path / "p.npy", np.tile([[0.9, 0.1]], (4, 1)))
    (tmp_path / "l.csv").write_text("name,y\na,0\nb,0\na,0\nc,1\n")
    bad = cli(
        "audit", "labels", "--pred-probs", tmp_path / "p.npy", "--labels", tmp_path / "l.csv",
        "--label-column", "y", "--id-column", "name", "--no-ledger",
    )  # fmt: skip
    assert bad.code == 2 and "'a' x2" in bad.err, bad.err
    (tmp_path / "l.csv").write_text("name,y\na,0\nb,0\nd,0\nc,1\n")
    good = cli(
        "audit", "labels", "--pred-probs", tmp_path / "p.npy", "--labels", tmp_path / "l.csv",
        "--label-column", "y", "--id-column", "name", "--no-ledger", "--json",
    )  # fmt: skip
    assert good.code in (0, 1), good.err


def test_audit_duplicates_on_a_text_file_without_text_column_says_which_option(cli, tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("id,text\n1,the cat sat on the mat\n2,the cat sat on the mat\n3,a dog\n")
    res = cli("audit", "duplicates", path, "--no-ledger")
    assert res.code == 2 and "--text-column text" in res.err and "finite score" not in res.err
    nums = tmp_path / "n.csv"  # the healthy twin: numeric rows, the id column left out
    nums.write_text("id,x,y\n1,0.5,2\n2,0.5,2\n3,9,1\n")
    out = cli("audit", "duplicates", nums, "--no-ledger", "--json")
    assert out.code in (0, 1), out.err
    # rows 1 and 2 match once their ids are left out (with the ids in, no row matched)
    assert json.loads(out.out)["within"]["a"] == [[0, 1]], out.out


def test_words_read_as_numbers_are_said(cli, tmp_path):
    words = tmp_path / "w.csv"
    words.write_text("acc\nyes\nno\nyes\n")
    with pytest.warns(LabcoatNote, match="read 'yes' as 1 \\(2 rows\\), 'no' as 0 \\(1 rows\\)"):
        assert read_table(words).scores("acc").tolist() == [1, 0, 1]
    numbers = tmp_path / "n.csv"  # the healthy twin: numbers are read without a note
    numbers.write_text("acc\n1\n0\n1\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error", LabcoatNote)
        assert read_table(numbers).scores("acc").tolist() == [1, 0, 1]
    res = cli("stats", "mean", words, "--score", "acc", "--no-ledger", "--json")
    assert res.code == 0 and "labcoat: note:" in res.err and "'yes' as 1" in res.err, res.err
    assert "labcoat: note" not in cli("stats", "mean", numbers, "--score", "acc", "--json").err


def test_an_unnamed_id_column_with_empty_cells_is_not_in_the_way(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("id,acc\nq1,1\n,0\n,1\n")  # ids missing on some rows: no item named twice
    assert len(read_table(path)) == 3
    with pytest.raises(InputError, match="empty"):  # named, it must be whole
        read_table(path, id_column="id")
