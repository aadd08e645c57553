from __future__ import annotations

import json

import pytest

from labcoat.watch import Alert, EventLog


def write_run(tmp_path):
    paths = []
    for rank in (0, 1):
        log = EventLog(tmp_path / f"events.rank{rank}.jsonl")
        log.write(
            Alert(
                check="desync",
                step=20,
                rank=rank,
                status="fail",
                message="replicated tensor 'fc2.bias' differs across ranks",
                evidence={"culprit_ranks": [1]},
                subject="fc2.bias",
            ).to_event()
        )
        if rank == 0:
            log.write(
                Alert(
                    check="spike",
                    step=7,
                    rank=0,
                    status="warn",
                    message="loss 9 at step 7",
                    subject="loss",
                    value=9.0,
                ).to_event()
            )
            log.write(
                {
                    "kind": "eval",
                    "step": 30,
                    "rank": 0,
                    "time": 1.0,
                    "value": 0.91,
                    "message": "accuracy 0.91 [0.88, 0.94]",
                }
            )
        log.close()
        paths.append(log.path)
    return paths


def test_report_shows_one_row_per_event_with_the_ranks_that_saw_it(cli, tmp_path):
    res = cli("watch", "report", *write_run(tmp_path))
    assert res.code == 1, res.err  # the desync failed: exit 1, like the doctor
    assert "2 alerts from 2 ranks" in res.out
    assert res.out.count("desync") == 1 and "seen by ranks 0, 1" in res.out
    assert "step 30: eval: accuracy 0.91" in res.out


def test_a_failed_alert_exits_1_and_warnings_alone_exit_0(cli, tmp_path):
    failed = cli("watch", "report", "--json", *write_run(tmp_path))
    assert failed.code == 1 and json.loads(failed.out)["ok"] is False
    log = EventLog(tmp_path / "warned.jsonl")  # the healthy twin: a warning, no failure
    log.write(
        Alert("spike", 7, 0, "warn", "loss 9 at step 7", subject="loss", value=9.0).to_event()
    )
    log.close()
    warned = cli("watch", "report", "--json", log.path)
    assert warned.code == 0 and json.loads(warned.out)["ok"] is True
    assert cli("watch", "report", log.path).code == 0


def test_report_json_is_one_object(cli, tmp_path):
    res = cli("watch", "report", "--json", *write_run(tmp_path))
    data = json.loads(res.out)
    assert [(a["kind"], a["step"], a["ranks"]) for a in data["alerts"]] == [
        ("spike", 7, [0]),
        ("desync", 20, [0, 1]),
    ]
    assert data["ranks"] == [0, 1] and data["events"] == 4
    assert [e["kind"] for e in data["other_events"]] == ["eval"]


def test_report_errors_are_one_line(cli, tmp_path):
    res = cli("watch", "report", tmp_path / "nope.jsonl")
    assert (
        res.code == 2
        and res.err.startswith("labcoat: error: events file")
        and res.err.count("\n") == 1
    )
    res = cli("watch", "report")
    assert res.code == 2 and "needs at least one events file" in res.err


@pytest.mark.parametrize(
    "content, says",
    [
        (b"\x80\x81 binary\n", "is not UTF-8 text"),
        (
            b'{"kind": "spike", "step": "abc", "severity": "warn"}\n',
            "line 1: 'step' must be an integer; got \"abc\"",
        ),
        (
            b'{"kind": "spike", "step": 1, "severity": "warn", "value": "x"}\n',
            '\'value\' must be a number, "nan", "inf", "-inf" or null',
        ),
        (
            b'{"kind": "spike", "step": 1, "severity": "warn", "evidence": [1]}\n',
            "'evidence' must be an object",
        ),
        (
            b'{"kind": "spike", "step": 1, "severity": "warn", "rank": "a"}\n',
            "'rank' must be an integer or null",
        ),
        (
            b'{"kind": "spike", "step": 1, "severity": "warn", "ranks": 5}\n',
            "'ranks' must be a list of integers",
        ),
        (b'{"kind": ["spike"], "step": 1}\n', "'kind' must be a string"),
    ],
)
def test_malformed_events_are_one_line_errors_naming_the_field(cli, tmp_path, content, says):
    (tmp_path / "events.jsonl").write_bytes(content)
    res = cli("watch", "report", tmp_path / "events.jsonl")
    assert res.code == 2 and says in res.err and res.err.count("\n") == 1, res.err


def test_non_finite_values_as_the_watch_writes_them_are_read_back(cli, tmp_path):
    log = EventLog(tmp_path / "events.jsonl")
    log.write(
        Alert(
            check="nonfinite",
            step=30,
            rank=None,
            status="fail",
            message="the loss is NaN at step 30",
            subject="loss",
            value=float("nan"),
        ).to_event()
    )
    log.write(
        {
            "kind": "eval",
            "step": 31,
            "rank": None,
            "time": 1.0,
            "value": float("inf"),
            "message": "m",
        }
    )
    log.close()
    res = cli("watch", "report", "--json", log.path)
    assert res.code == 1, res.err  # a failed alert
    data = json.loads(res.out)
    assert data["ok"] is False
    assert data["alerts"][0]["value"] == "nan" and data["other_events"][0]["value"] == "inf"


def test_an_unreadable_file_is_one_line(cli, tmp_path, monkeypatch):
    import builtins

    path = tmp_path / "events.jsonl"
    path.write_text("")

    def refuse(file, *args, **kwargs):  # what chmod 000 does for anyone but root
        if str(file) == str(path):
            raise PermissionError(13, "Permission denied", str(file))
        return builtins.open(file, *args, **kwargs)

    monkeypatch.setattr("labcoat.watch.events.open", refuse, raising=False)
    res = cli("watch", "report", path)
    assert (
        res.code == 2
        and res.err.strip()
        == f"labcoat: error: events file {str(path)!r} cannot be read (Permission denied)."
    )


def test_a_directory_is_named_as_one(cli, tmp_path):
    res = cli("watch", "report", tmp_path)
    assert res.code == 2 and "is a directory" in res.err
