"""Readers: plain tables, lm-eval-harness samples and Inspect logs, with one-line errors."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

from labcoat.errors import InputError
from labcoat.stats import read_table


def _lm_eval_record(doc_id, acc, filt="none", metric="acc"):
    return {
        "doc_id": doc_id,
        "doc": {"question": f"q{doc_id}"},
        "target": "A",
        "arguments": [["ctx", " A"]],
        "resps": [[["-1.2", "True"]]],
        "filtered_resps": [["-1.2", "True"]],
        "filter": filt,
        "metrics": [metric],
        metric: acc,
        "doc_hash": "x",
    }


def _inspect_sample(sid, epoch, grade, subject):
    return {
        "id": sid,
        "epoch": epoch,
        "input": "question",
        "target": "A",
        "scores": {
            "choice": {"value": grade, "answer": "A"},
            "judge": {"value": {"accuracy": 1, "f1": 0.5}},
        },
        "metadata": {"subject": subject, "nested": {"skip": True}},
    }


def test_csv_and_jsonl_give_the_same_columns(tmp_path):
    (tmp_path / "r.csv").write_text("id,acc\n1,1\n2,0\n3,true\n")
    (tmp_path / "r.jsonl").write_text(
        "\n".join(json.dumps({"id": i, "acc": a}) for i, a in [(1, 1), (2, 0), (3, True)]) + "\n"
    )
    for name in ("r.csv", "r.jsonl"):
        table = read_table(tmp_path / name)
        np.testing.assert_array_equal(table.scores("acc"), [1.0, 0.0, 1.0])
        assert table.labels("id").tolist() == ["1", "2", "3"]


def test_a_byte_order_mark_is_not_part_of_the_first_column(tmp_path):
    (tmp_path / "r.csv").write_bytes(
        b"\xef\xbb\xbfid,acc\r\n1,1\r\n2,0\r\n"
    )  # as Excel saves UTF-8 CSV
    (tmp_path / "r.jsonl").write_bytes(b'\xef\xbb\xbf{"id": 1, "acc": 1}\n{"id": 2, "acc": 0}\n')
    (tmp_path / "r.json").write_bytes(b'\xef\xbb\xbf[{"id": 1, "acc": 1}, {"id": 2, "acc": 0}]')
    for name in ("r.csv", "r.jsonl", "r.json"):
        assert read_table(tmp_path / name).labels("id").tolist() == ["1", "2"], name


def test_a_file_with_another_separator_gets_a_hint(tmp_path):
    (tmp_path / "r.csv").write_text("id;acc\n1;1\n")
    with pytest.raises(InputError, match="is the file separated by ';'"):
        read_table(tmp_path / "r.csv").scores("acc")


def test_parquet(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": ["a", "b"], "score": [0.5, 1.0]}), tmp_path / "r.parquet")
    table = read_table(tmp_path / "r.parquet")
    np.testing.assert_array_equal(table.scores("score"), [0.5, 1.0])


def test_lm_eval_samples_single_and_multiple_filters(tmp_path):
    one = tmp_path / "samples_arc_easy_2024-01-01T00-00-00.jsonl"
    one.write_text("\n".join(json.dumps(_lm_eval_record(i, float(i % 2))) for i in range(4)))
    table = read_table(one)
    np.testing.assert_array_equal(table.scores("acc"), [0, 1, 0, 1])
    np.testing.assert_array_equal(table.scores("acc,none"), [0, 1, 0, 1])
    assert table.labels("doc_id").tolist() == ["0", "1", "2", "3"]

    two = tmp_path / "samples_gsm8k_2024.jsonl"
    rows = [
        _lm_eval_record(i, 1.0, f, "exact_match")
        for i in range(3)
        for f in ("strict-match", "flexible-extract")
    ]
    two.write_text("\n".join(json.dumps(r) for r in rows))
    table = read_table(two)
    assert len(table) == 3  # one row per document, not per filter
    assert "exact_match,strict-match" in table.names and "exact_match" not in table.names


def test_inspect_json_and_eval_logs(tmp_path):
    samples = [
        _inspect_sample(s, e, g, "bio" if s < 2 else "chem")
        for s, e, g in [(1, 1, "C"), (1, 2, "I"), (2, 1, "P"), (3, 1, "C")]
    ]
    log = {
        "version": 2,
        "status": "success",
        "eval": {"task": "mmlu", "model": "m"},
        "samples": samples,
    }
    (tmp_path / "log.json").write_text(json.dumps(log))
    with zipfile.ZipFile(tmp_path / "log.eval", "w") as zf:
        zf.writestr("header.json", json.dumps({"eval": log["eval"]}))
        for s in samples:
            zf.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))
    for name in ("log.json", "log.eval"):
        table = read_table(tmp_path / name)
        assert sorted(zip(table.labels("id"), table.scores("choice"))) == [
            ("1", 0.0),
            ("1", 1.0),
            ("2", 0.5),
            ("3", 1.0),
        ]
        assert set(table.labels("metadata.subject")) == {"bio", "chem"}
        assert "judge.f1" in table.names and "metadata.nested" not in table.names


@pytest.mark.parametrize(
    "name, text, call, match",
    [
        ("r.csv", "id,acc\n1,1\n2,\n", lambda t: t.scores("acc"), r"column 'acc' row 2 is missing"),
        ("r.csv", "id,acc\n1,1\n2,nan\n", lambda t: t.scores("acc"), r"row 2 is 'nan'"),
        (
            "r.csv",
            "id,acc\n1,1\n",
            lambda t: t.scores("accuracy"),
            r"no column 'accuracy'; columns are: id, acc",
        ),
        ("r.jsonl", '{"a": 1}\nnot json\n', None, "line 2 is not valid JSON"),
        ("r.txt", "x", None, "unknown file type .txt"),
        ("r.csv", "", None, "no header row"),
        ("r.json", '{"a": 1}', None, "Inspect eval log"),
        ("r.eval", "not a zip", None, "could not be read"),
        (
            "r.json",
            '{"eval": {}, "samples": [1]}',
            None,
            "sample 1: sample is a JSON int, not an object",
        ),
        (
            "r.json",
            '{"eval": {}, "samples": [{"scores": [1]}]}',
            None,
            "sample 1: its 'scores' is a JSON list",
        ),
        (
            "r.json",
            '{"eval": {}, "samples": [{"metadata": "x"}]}',
            None,
            "sample 1: its 'metadata' is a JSON str",
        ),
    ],
)
def test_bad_files_are_one_line_errors(tmp_path, name, text, call, match):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InputError, match=match):
        table = read_table(path)
        call(table)


def test_corrupt_parquet_is_an_input_error(tmp_path):
    pytest.importorskip("pyarrow")
    (tmp_path / "r.parquet").write_bytes(b"PAR1 not really parquet PAR1")
    with pytest.raises(InputError, match="could not be read as parquet"):
        read_table(tmp_path / "r.parquet")


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_table(tmp_path / "nope.csv")


def _lm_eval_task_file(folder, task, subjects, scores):
    rows = []
    for i, (subject, score) in enumerate(zip(subjects, scores)):
        record = _lm_eval_record(i, score)
        record["doc"] = {"question": f"{task} q{i}", "subject": subject, "choices": ["a", "b"]}
        rows.append(json.dumps(record))
    path = folder / f"samples_{task}_2024-05-01T10-11-12.123456.jsonl"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_lm_eval_directory_reads_every_task_with_doc_fields_and_the_model(tmp_path):
    run = tmp_path / "out" / "org__model"
    run.mkdir(parents=True)
    for task, n in (("mmlu_anatomy", 3), ("mmlu_virology", 4), ("arc_easy", 2)):
        _lm_eval_task_file(
            run, task, [f"{task}-s{i % 2}" for i in range(n)], [float(i % 2) for i in range(n)]
        )
    (run / "results_2024-05-01T10-11-12.123456.json").write_text(
        json.dumps(
            {
                "results": {},
                "config": {"model": "hf", "model_args": "pretrained=org/model,dtype=bfloat16"},
            }
        )
    )
    table = read_table(tmp_path / "out")
    assert len(table) == 9 and table.model == "org/model"
    assert sorted(set(table.labels("task"))) == ["arc_easy", "mmlu_anatomy", "mmlu_virology"]
    assert len(set(table.labels("task_doc_id"))) == 9  # doc ids repeat across tasks; these do not
    assert "doc.subject" in table.names and "doc.choices" not in table.names  # scalars only
    globbed = read_table(str(run / "samples_mmlu_*.jsonl"))
    assert len(globbed) == 7 and set(globbed.labels("task")) == {"mmlu_anatomy", "mmlu_virology"}
    single = read_table(next(run.glob("samples_arc_easy_*.jsonl")))
    assert (
        single.labels("task").tolist() == ["arc_easy", "arc_easy"] and single.model == "org/model"
    )
    (run / "results_2024-06-01T00-00-00.json").write_text(
        json.dumps({"model_name": "org/model-v2"})
    )
    assert read_table(tmp_path / "out").model == "org/model-v2"  # the newest results file


def test_directories_and_patterns_that_hold_nothing(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="is a directory with no lm-eval samples"):
        read_table(tmp_path / "empty")
    with pytest.raises(InputError, match="matches no files"):
        read_table(str(tmp_path / "samples_*.jsonl"))


def test_inspect_logs_without_samples_say_so(tmp_path):
    header = {"version": 2, "status": "success", "eval": {"task": "mmlu", "model": "openai/gpt-4o"}}
    (tmp_path / "log.json").write_text(json.dumps(header))
    with zipfile.ZipFile(tmp_path / "log.eval", "w") as zf:
        zf.writestr("header.json", json.dumps(header))
    for name in ("log.json", "log.eval"):
        with pytest.raises(InputError, match="an Inspect log with no samples"):
            read_table(tmp_path / name)
    header["samples"] = [_inspect_sample(1, 1, "C", "bio"), _inspect_sample(2, 1, "I", "bio")]
    (tmp_path / "full.json").write_text(json.dumps(header))
    assert read_table(tmp_path / "full.json").model == "openai/gpt-4o"


def test_csv_without_pyarrow_reads_the_same_table(tmp_path, monkeypatch):
    text = "id,acc,doc\n007,1,a\n8,0.5,b\n9,true,\n"
    (tmp_path / "r.csv").write_text(text)
    fast = read_table(tmp_path / "r.csv")
    import builtins

    real_import = builtins.__import__

    def no_pyarrow(name, *args, **kwargs):
        if name.startswith("pyarrow"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    slow = read_table(tmp_path / "r.csv")
    for table in (fast, slow):
        assert table.labels("id").tolist() == ["007", "8", "9"]  # ids keep their leading zeros
        np.testing.assert_array_equal(table.scores("acc"), [1.0, 0.5, 1.0])
        with pytest.raises(InputError, match="column 'doc' is empty in 1 row"):
            table.labels("doc")


def test_id_lists_for_exclusion(tmp_path):
    from labcoat.stats.readers import read_id_list

    for body in ([1, "q2", 3.0], {"ids": [1, "q2", 3.0]}, {"count": 3, "issues": [1, "q2", 3.0]}):
        (tmp_path / "f.json").write_text(json.dumps(body))
        assert read_id_list(tmp_path / "f.json") == ["1", "q2", "3"]
    (tmp_path / "bad.json").write_text(json.dumps([{"id": 1}]))
    with pytest.raises(InputError, match="a JSON list of ids"):
        read_id_list(tmp_path / "bad.json")
