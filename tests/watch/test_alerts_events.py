from __future__ import annotations

import json

import pytest

from labcoat.errors import InputError
from labcoat.findings import Finding
from labcoat.watch import Alert, EventLog, merge_alerts, read_alerts, read_events
from labcoat.watch.events import rank_path


def desync(rank, step=20, subject="fc2.bias"):
    return Alert(
        check="desync",
        step=step,
        rank=rank,
        status="fail",
        message=f"replicated tensor {subject!r} differs",
        evidence={"culprit_ranks": [2]},
        subject=subject,
        value=0.1,
        time=1.0,
    )


def test_to_finding_is_a_watch_finding_with_the_invariants_declaration():
    f = desync(1).to_finding()
    assert (f.check, f.layer, f.status, f.step, f.rank) == ("desync", "watch", "fail", 20, 1)
    assert f.falsifies == "replicated parameters are identical on every rank"
    assert f.evidence == {"culprit_ranks": [2], "subject": "fc2.bias", "value": 0.1}
    assert f.to_dict()["evidence"]["subject"] == "fc2.bias"


def test_an_alert_refuses_an_unknown_severity():
    with pytest.raises(ValueError, match="severity"):
        Alert(check="spike", step=1, status="pass", message="m")


def test_an_alert_is_a_finding_of_the_watch_layer():
    alert = desync(1)
    assert isinstance(alert, Finding) and alert.layer == "watch" and alert.check == "desync"
    assert alert.status == "fail" and alert.failed


def test_the_old_alert_names_warn_and_still_work():
    with pytest.warns(DeprecationWarning, match="keywords"):
        old = Alert("desync", 20, 1, "fail", "m", {"culprit_ranks": [2]}, subject="fc2.bias")
    assert (old.check, old.step, old.rank, old.status, old.subject) == (
        "desync",
        20,
        1,
        "fail",
        "fc2.bias",
    )
    with pytest.warns(DeprecationWarning, match="Alert.check"):
        assert old.kind == "desync"
    with pytest.warns(DeprecationWarning, match="Alert.status"):
        assert old.severity == "fail"
    with pytest.warns(DeprecationWarning, match="keywords"):
        assert Alert(kind="spike", step=3, severity="warn", message="m").check == "spike"


def test_an_unregistered_invariant_is_refused_when_stored():
    with pytest.raises(InputError, match="no registered invariant"):
        Alert(check="made_up", step=1, status="warn", message="m").to_finding()


def test_merge_folds_one_event_seen_by_every_rank_into_one_alert():
    alerts = [desync(2), desync(0), desync(1), desync(0, step=25, subject="fc1.weight")]
    merged = merge_alerts(alerts)
    assert [(a.step, a.subject, a.ranks, a.rank) for a in merged] == [
        (20, "fc2.bias", (0, 1, 2), 0),
        (25, "fc1.weight", (0,), 0),
    ]
    assert merge_alerts(merged) == merged  # idempotent


def test_events_round_trip_through_json_lines(tmp_path):
    log = EventLog(tmp_path / "e.jsonl")
    for a in (desync(0), desync(1)):
        log.write(a.to_event())
    log.write({"kind": "eval", "step": 30, "rank": 0, "time": 2.0, "value": 0.9, "message": "eval"})
    log.close()
    events = list(read_events([tmp_path / "e.jsonl"]))
    assert [e["kind"] for e in events] == ["desync", "desync", "eval"]
    (alert,) = read_alerts([tmp_path / "e.jsonl"])  # the eval event is not an alert
    assert alert.ranks == (0, 1) and alert.evidence == {"culprit_ranks": [2]}


def test_rank_path_gives_each_rank_its_own_file():
    assert str(rank_path("run/ev-{rank}.jsonl", 3, 4)) == "run/ev-3.jsonl"
    assert str(rank_path("run/ev.jsonl", 1, 2)) == "run/ev.rank1.jsonl"
    assert str(rank_path("run/ev.jsonl", None, 1)) == "run/ev.jsonl"


def test_unreadable_event_files_say_where_and_what(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        list(read_events([tmp_path / "missing.jsonl"]))
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"kind": "spike", "step": 1}) + "\n{oops\n")
    with pytest.raises(InputError, match=r"line 2: not JSON"):
        list(read_events([bad]))
    bad.write_text('{"step": 1}\n')
    with pytest.raises(InputError, match="expected an object with 'kind'"):
        list(read_events([bad]))
