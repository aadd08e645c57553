"""Histories and results from files, and the CLI: healthy runs exit 0, bad input one line and
exit 2 (a history of one model, ids that do not match, planned items missing)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from labcoat.errors import InputError
from labcoat.evals import read_history, read_results

from .conftest import new_model, shared, simulate


def _write_matrix(path, y, *, models_as_rows=False, plus_minus=False):
    values = y * 2 - 1 if plus_minus else y
    if models_as_rows:
        lines = [",".join([""] + [str(i) for i in range(y.shape[0])])]
        lines += [",".join([f"m{j}"] + [f"{v:g}" for v in values[:, j]]) for j in range(y.shape[1])]
    else:
        lines = [",".join([""] + [f"m{j}" for j in range(y.shape[1])])]
        lines += [",".join([str(i)] + [f"{v:g}" for v in values[i]]) for i in range(y.shape[0])]
    path.write_text("\n".join(lines) + "\n")
    return path


def _write_results(path, scores, ids=None):
    ids = range(len(scores)) if ids is None else ids
    path.write_text("item,score\n" + "".join(f"{i},{v:g}\n" for i, v in zip(ids, scores)))
    return path


def test_a_matrix_reads_either_way_round_and_plus_minus_coding_becomes_0_1(tmp_path):
    _, y = simulate(60)
    a = read_history(_write_matrix(tmp_path / "a.csv", y))
    b = read_history(_write_matrix(tmp_path / "b.csv", y, models_as_rows=True, plus_minus=True))
    assert a.scores.shape == b.scores.shape == (60, 8)
    assert np.array_equal(a.scores, b.scores) and list(a.items) == list(b.items)


def test_one_file_per_model_joins_on_ids_and_refuses_ids_that_do_not_match(tmp_path):
    _, y = simulate(40)
    files = [_write_results(tmp_path / f"m{j}.csv", y[:, j]) for j in range(3)]
    history = read_history(files)
    assert history.n_models == 3 and history.n_items == 40
    bad = _write_results(tmp_path / "other.csv", y[:, 0], ids=[f"x{i}" for i in range(40)])
    with pytest.raises(InputError, match="do not match"):
        read_history(files + [bad])


def test_a_long_table_pivots_into_a_history(tmp_path):
    _, y = simulate(30)
    rows = ["model,item,score"] + [
        f"m{j},{i},{y[i, j]:g}" for j in range(y.shape[1]) for i in range(y.shape[0])
    ]
    (tmp_path / "long.csv").write_text("\n".join(rows) + "\n")
    history = read_history(tmp_path / "long.csv")
    assert history.n_models == 8 and history.n_items == 30


def test_the_real_matrices_read_with_prompt_settings_grouped():
    math = read_history(shared("items", "math500_cbmm_Y.csv"))
    assert math.scores.shape == (500, 140) and np.unique(math.groups).size == 70
    assert set(np.unique(math.scores)) == {0.0, 1.0}
    chem = read_history(shared("items", "chembench_binary_matrix.csv"))
    assert chem.scores.shape == (2854, 22)


def test_lm_eval_and_inspect_logs_read_as_results():
    lm = read_results(shared("evals", "lmeval_eee"))
    assert lm.ids.size == 10 and lm.model.startswith("RylanSchaeffer/")
    inspect = read_results(shared("evals", "inspect_eee_data_arc_sonnet.json"))
    assert inspect.ids.size == 5 and set(inspect.scores) <= {0.0, 1.0}
    with pytest.raises(InputError, match="do not match"):  # two logs of different samples
        read_history(
            [
                shared("evals", "inspect_eee_data_arc_qwen.json"),
                shared("evals", "inspect_eee_data_arc_sonnet.json"),
            ]
        )


@pytest.fixture
def files(tmp_path):
    _, y = simulate(300)
    history = _write_matrix(tmp_path / "history.csv", y)
    a = _write_results(tmp_path / "a.csv", new_model(2.0))
    b = _write_results(tmp_path / "b.csv", new_model(-1.5))
    return tmp_path, history, a, b


def test_cli_plan_estimate_compare(cli, files):
    tmp, history, a, b = files
    plan = tmp / "plan.json"
    out = cli("evals", "plan", history, "--subset-size", "60", "-o", plan, "--json")
    assert out.code == 0, out.err
    assert len(json.loads(out.out)["subset"]) == 60 and plan.exists()
    est = cli("evals", "estimate", a, "--plan", plan, "--json", "--no-ledger")
    assert est.code == 0, est.err
    data = json.loads(est.out)
    assert data["ci"][0] <= new_model(2.0).mean() <= data["ci"][1]
    cmp = cli("evals", "compare", a, b, "--plan", plan, "--json", "--no-ledger")
    assert cmp.code == 0 and json.loads(cmp.out)["decision"] == "A better"
    shown = cli("evals", "estimate", a, "--plan", plan, "--no-ledger")
    assert shown.code == 0 and "Eval estimate" in shown.out


def test_cli_bad_inputs_exit_2_with_one_line(cli, files):
    tmp, history, a, _ = files
    plan = tmp / "plan.json"
    assert cli("evals", "plan", history, "--subset-size", "60", "-o", plan).code == 0
    one = _write_results(tmp / "one.csv", new_model(0.0))
    planted = {
        "a history with one model": ("evals", "plan", one, "--subset-size", "20"),
        "planned items missing": (
            "evals",
            "estimate",
            _write_results(tmp / "few.csv", [1, 0]),
            "--plan",
            plan,
            "--no-ledger",
        ),
        "ids that do not match": (
            "evals",
            "estimate",
            _write_results(tmp / "x.csv", [1.0] * 300, ids=[f"x{i}" for i in range(300)]),
            "--plan",
            plan,
            "--no-ledger",
        ),
        "not a plan": ("evals", "estimate", a, "--plan", one, "--no-ledger"),
    }
    for what, args in planted.items():
        out = cli(*args)
        assert out.code == 2, what
        assert out.err.count("\n") == 1 and out.err.startswith("labcoat: error:"), what


def test_cli_a_refused_estimate_exits_1(cli, files):
    tmp, history, a, _ = files
    plan = tmp / "small.json"
    assert cli("evals", "plan", history, "--subset-size", "8", "-o", plan).code == 1
    out = cli("evals", "estimate", a, "--plan", plan, "--no-ledger", "--json")
    assert out.code == 1 and json.loads(out.out)["refused"] is True


def test_cli_estimate_refuses_duplicate_ids_unless_told_to_average_them(cli, files):
    tmp, history, a, _ = files
    plan = tmp / "plan.json"
    assert cli("evals", "plan", history, "--subset-size", "60", "-o", plan).code == 0
    scores = new_model(0.0)
    dup = tmp / "dup.csv"  # every item also appears as a 1: averaging would inflate the score
    dup.write_text("item,score\n" + "".join(f"{i},{v:g}\n{i},1\n" for i, v in enumerate(scores)))
    for command in (("estimate", dup), ("compare", dup, a)):
        out = cli("evals", *command, "--plan", plan, "--no-ledger")
        assert out.code == 2 and "appear on more than one row" in out.err, command
        assert "--duplicates mean" in out.err and out.err.count("\n") == 1
    healthy = _write_results(tmp / "once.csv", scores)
    once = cli("evals", "estimate", healthy, "--plan", plan, "--no-ledger", "--json")
    assert once.code == 0, once.err
    mean = cli(
        "evals", "estimate", dup, "--plan", plan, "--no-ledger", "--json", "--duplicates", "mean"
    )
    assert mean.code == 0, mean.err
    assert json.loads(mean.out)["mean"] > json.loads(once.out)["mean"]  # averaged, as asked
    epochs = tmp / "epochs.csv"  # one row per item and epoch: averaged per item, no error
    epochs.write_text(
        "item,epoch,score\n"
        + "".join(f"{i},{e},{v:g}\n" for i, v in enumerate(scores) for e in (1, 2))
    )
    again = cli("evals", "estimate", epochs, "--plan", plan, "--no-ledger", "--json")
    assert again.code == 0 and json.loads(again.out)["mean"] == json.loads(once.out)["mean"]


def test_plan_names_a_column_it_was_told_to_use_and_does_not_have(cli, files):
    tmp, history, _, _ = files
    out = cli("evals", "plan", history, "--subset-size", "20", "--id", "qid")
    assert out.code == 2 and "history.csv" in out.err and "'qid'" in out.err
    assert out.err.count("\n") == 1
    assert cli("evals", "plan", history, "--subset-size", "20", "--score", "acc").code == 2
    label = history.read_text().split(",", 1)[0]  # the matrix's own label column (unnamed)
    assert label == "" and cli("evals", "plan", history, "--subset-size", "20").code == 0
    long = tmp / "long.csv"
    _, y = simulate(30)
    long.write_text(
        "model,qid,score\n"
        + "".join(f"m{j},{i},{y[i, j]:g}\n" for j in range(3) for i in range(30))
    )
    assert cli("evals", "plan", long, "--subset-size", "20", "--id", "qid").code == 0
    assert cli("evals", "plan", long, "--subset-size", "20", "--id", "item").code == 2


def test_one_models_results_as_a_history_name_the_fix_that_works(tmp_path):
    _, y = simulate(30)
    one = _write_results(tmp_path / "base.csv", y[:, 0])  # one model's per-item results
    with pytest.raises(InputError, match="one model's per-item results.*one such file per model"):
        read_history(one)
    long = tmp_path / "long.csv"
    long.write_text("model,item,score\n" + "".join(f"m0,{i},{y[i, 0]:g}\n" for i in range(30)))
    with pytest.raises(InputError, match="names one model \\('m0'\\).*add the other models"):
        read_history(long)
    two = _write_results(tmp_path / "other.csv", y[:, 1])
    assert read_history([one, two]).n_models == 2  # the fix it names works


def test_a_long_table_refuses_an_item_twice_for_one_model(tmp_path):
    _, y = simulate(30)
    rows = [f"m{j},{i},{y[i, j]:g}" for j in range(3) for i in range(30)]
    (tmp_path / "long.csv").write_text("model,item,score\n" + "\n".join(rows + ["m0,0,1"]) + "\n")
    with pytest.raises(InputError, match="appears on 2 rows for model 'm0'"):
        read_history(tmp_path / "long.csv")
    assert read_history(tmp_path / "long.csv", duplicates="mean").n_models == 3


def test_compare_decides_in_the_documented_words_and_names_the_winner_beside_them(cli, files):
    tmp, history, a, b = files
    plan = tmp / "plan.json"
    assert cli("evals", "plan", history, "--subset-size", "60", "-o", plan).code == 0
    strong = _write_results(tmp / "zeta-7b.csv", new_model(2.0))  # a name, not "a" or "b"
    for args, words, winner in (
        ((strong, b), "A better", "zeta-7b"),
        ((b, strong), "B better", "zeta-7b"),
    ):
        out = cli("evals", "compare", *args, "--plan", plan, "--no-ledger", "--json")
        data = json.loads(out.out)
        assert data["decision"] == words and data["winner"] == winner, data
        assert data["scores_basis"] == "design-based"
    shown = cli("evals", "compare", strong, b, "--plan", plan, "--no-ledger").out
    assert "A better (zeta-7b)" in shown and "design-based" in shown
    docs = (Path(__file__).resolve().parents[2] / "docs" / "evals.md").read_text()
    assert '"A better", "B better", "inconclusive"' in docs  # the words the docs promise


def test_the_estimate_table_shows_what_the_json_says_of_a_model_stronger_than_the_history(
    cli, files
):
    tmp, history, a, b = files
    plan = tmp / "plan.json"
    assert cli("evals", "plan", history, "--subset-size", "60", "-o", plan).code == 0
    for path, stronger in ((a, True), (b, False)):  # ability 2.0 beyond the history; -1.5 not
        data = json.loads(
            cli("evals", "estimate", path, "--plan", plan, "--no-ledger", "--json").out
        )
        shown = cli("evals", "estimate", path, "--plan", plan, "--no-ledger").out
        assert data["stronger_than_history"] is stronger
        assert ("stronger than every history model" in shown) is stronger
