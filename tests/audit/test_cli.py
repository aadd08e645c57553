"""``labcoat audit ...``: JSON with the documented keys, exit 1 on a failed check, exit 2 and
one line on bad input, findings recorded in a ledger when asked."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits

import labcoat
from tests.audit.textgen import documents, paragraph


def _json(result):
    assert result.err == "" or result.code in (0, 1), result.err
    return json.loads(result.out)


def _one_line_error(result) -> str:
    assert result.code == 2, (result.out, result.err)
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("labcoat: error: "), result.err
    return lines[0]


@pytest.fixture
def probs_and_labels(tmp_path):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 200)
    probs = np.full((200, 3), 0.05)
    probs[np.arange(200), y] = 0.9
    flipped = [3, 50, 120]
    probs[flipped] = [[0.02, 0.02, 0.96] if y[i] != 2 else [0.96, 0.02, 0.02] for i in flipped]
    np.save(tmp_path / "p.npy", probs)
    np.save(tmp_path / "y.npy", y)
    with (tmp_path / "y.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["item", "label"])
        w.writerows([f"q{i}", int(v)] for i, v in enumerate(y))
    return tmp_path, flipped


def test_labels_json(cli, probs_and_labels):
    d, flipped = probs_and_labels
    out = _json(
        cli(
            "audit",
            "labels",
            "--pred-probs",
            d / "p.npy",
            "--labels",
            d / "y.npy",
            "--json",
            "--no-ledger",
        )
    )
    assert sorted(out["issues"]) == flipped and out["count"] == 3 and len(out["scores"]) == 3
    out = _json(
        cli(
            "audit",
            "labels",
            "--pred-probs",
            d / "p.npy",
            "--labels",
            d / "y.csv",
            "--label-column",
            "label",
            "--id-column",
            "item",
            "--json",
            "--no-ledger",
        )
    )
    assert out["ids"] == [f"q{i}" for i in out["issues"]]


def test_labels_bad_input(cli, probs_and_labels):
    d, _ = probs_and_labels
    np.save(d / "logits.npy", np.random.default_rng(0).normal(size=(200, 3)))
    assert "not probabilities" in _one_line_error(
        cli("audit", "labels", "--pred-probs", d / "logits.npy", "--labels", d / "y.npy")
    )
    assert "--label-column" in _one_line_error(
        cli("audit", "labels", "--pred-probs", d / "p.npy", "--labels", d / "y.csv")
    )
    assert "no such file" in _one_line_error(
        cli("audit", "labels", "--pred-probs", d / "nope.npy", "--labels", d / "y.npy")
    )


SETUP = """
import numpy as np, torch
from sklearn.datasets import load_digits
from torch import nn
import labcoat

def experiment():
    torch.manual_seed(0)
    x, y = load_digits(return_X_y=True)
    x, y = x[:400] / 16.0, y[:400].copy()
    y[[5, 17, 99, 250]] = (y[[5, 17, 99, 250]] + 3) % 10
    print("noise from the user's file")
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    return labcoat.Experiment(model, (torch.tensor(x, dtype=torch.float32), torch.tensor(y)),
                              nn.CrossEntropyLoss(), torch.optim.Adam(model.parameters(), lr=1e-2))
"""


def test_labels_from_a_setup_file(cli, tmp_path):
    torch.set_num_threads(1)
    (tmp_path / "setup.py").write_text(SETUP)
    result = cli(
        "audit",
        "labels",
        f"{tmp_path / 'setup.py'}:experiment",
        "--folds",
        "2",
        "--json",
        "--no-ledger",
    )
    out = _json(result)  # what the file printed went to stderr
    assert {5, 17, 99, 250} & set(out["issues"]) and out["folds"]["folds"] == 2
    assert "noise from the user's file" in result.err


def test_duplicates_text_table_and_arrays(cli, tmp_path):
    rng = np.random.default_rng(0)
    train, val = documents(50, rng), documents(20, rng)
    val[4] = train[7]
    for name, rows in (("train", train), ("val", val)):
        with (tmp_path / f"{name}.jsonl").open("w") as fh:
            fh.writelines(json.dumps({"text": t}) + "\n" for t in rows)
    res = cli(
        "audit",
        "duplicates",
        tmp_path / "train.jsonl",
        tmp_path / "val.jsonl",
        "--text-column",
        "text",
        "--json",
        "--no-ledger",
    )
    assert res.code == 1  # an exact copy across splits fails the check
    out = json.loads(res.out)
    assert out["pairs"] == [{"a": 7, "b": 4, "similarity": 1.0, "exact": True}] and (
        out["n_a"],
        out["n_b"],
    ) == (50, 20)

    x, _ = load_digits(return_X_y=True)
    np.save(tmp_path / "a.npy", x[:300])
    torch.save(torch.tensor(x[300:400]), tmp_path / "b.pt")
    out = _json(
        cli("audit", "duplicates", tmp_path / "a.npy", tmp_path / "b.pt", "--json", "--no-ledger")
    )
    assert not [p for p in out["pairs"] if p["exact"]]
    assert "no column 'body'" in _one_line_error(
        cli(
            "audit",
            "duplicates",
            tmp_path / "train.jsonl",
            tmp_path / "val.jsonl",
            "--text-column",
            "body",
        )
    )


@pytest.mark.check("audit.contamination", planted=True)
def test_contamination_cli(cli, tmp_path):
    rng = np.random.default_rng(0)
    items = [paragraph(rng, 3) for _ in range(20)]
    (tmp_path / "corpus").mkdir()
    docs = documents(30, rng)
    docs[3] += " " + items[11]
    docs[25] += " " + items[2]
    for i, d in enumerate(docs[:20]):
        (tmp_path / "corpus" / f"{i}.txt").write_text(d)
    with (tmp_path / "more.jsonl").open("w") as fh:
        fh.writelines(json.dumps({"text": d}) + "\n" for d in docs[20:])
    with (tmp_path / "eval.jsonl").open("w") as fh:
        for i, t in enumerate(items):
            fh.write(json.dumps({"id": f"q{i}", "question": t, "acc": i % 2}) + "\n")
    res = cli(
        "audit",
        "contamination",
        "--corpus",
        tmp_path / "corpus",
        tmp_path / "more.jsonl",
        "--eval",
        tmp_path / "eval.jsonl",
        "--text-column",
        "question",
        "--id-column",
        "id",
        "--score-column",
        "acc",
        "--json",
        "--no-ledger",
    )
    assert res.code == 1
    out = json.loads(res.out)
    assert out["n_dirty"] == 2 and out["n_items"] == 20 and out["corpus"]["documents"] == 30
    assert [i["id"] for i in out["items"] if i["dirty"]] == ["q2", "q11"]
    assert "no column 'query'" in _one_line_error(
        cli(
            "audit",
            "contamination",
            "--corpus",
            tmp_path / "corpus",
            "--eval",
            tmp_path / "eval.jsonl",
            "--text-column",
            "query",
        )
    )


def test_groups_cli_and_ledger(cli, tmp_path):
    for name, patients in (("train", ["p1", "p2", "p3", "p3"]), ("test", ["p3", "p4"])):
        with (tmp_path / f"{name}.csv").open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["patient", "x"])
            w.writerows([p, i] for i, p in enumerate(patients))
    ledger = tmp_path / "ledger.db"
    res = cli(
        "audit",
        "groups",
        tmp_path / "train.csv",
        tmp_path / "test.csv",
        "--group",
        "patient",
        "--json",
        "--ledger",
        ledger,
    )
    assert res.code == 1
    assert json.loads(res.out)["shared"] == [{"group": "p3", "n_a": 2, "n_b": 1}]
    stored = labcoat.Ledger(ledger).findings(source="audit")
    assert [(f.check, f.status) for f in stored] == [("audit.groups", "fail")]
    table = cli(
        "audit",
        "groups",
        tmp_path / "train.csv",
        tmp_path / "test.csv",
        "--group",
        "patient",
        "--no-ledger",
    )
    assert "p3" in table.out and "audit.groups" in table.out
    assert "no column 'site'" in _one_line_error(
        cli("audit", "groups", tmp_path / "train.csv", tmp_path / "test.csv", "--group", "site")
    )


def test_audit_help_imports_no_heavy_library(subprocess_env):
    code = (
        "import sys, contextlib, io\n"
        "from labcoat.cli.main import main\n"
        "for args in (['audit'], ['audit', 'labels'], ['audit', 'contamination']):\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        "        assert main([*args, '--help']) == 0\n"
        "heavy = {'torch', 'cleanlab', 'datasketch', 'ray', 'scipy'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", code], env=subprocess_env, capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0, res.stderr
