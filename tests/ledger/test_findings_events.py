"""The contract with the doctor and the watch: findings and events stored against runs."""

from __future__ import annotations

import dataclasses
import math

import pytest

from labcoat.errors import InputError
from labcoat.findings import Check, CheckRegistry, failed, passed, skipped, warned
from labcoat.ledger import Ledger

REGISTRY = CheckRegistry("doctor", ["data", "model"])


@REGISTRY.check(
    "labels_aligned",
    layer="data",
    falsifies="labels are shuffled relative to inputs",
    predicts="a small model overfits 32 examples to zero loss",
)
def _labels(case):
    return passed("loss reached 0.001", final_loss=0.001)


@REGISTRY.check(
    "grads_flow",
    layer="model",
    falsifies="part of the graph is detached",
    predicts="every parameter gets a gradient",
)
def _grads(case):
    return failed("2 parameters got no gradient", parameters=["head.weight", "head.bias"])


@REGISTRY.check(
    "init_scale",
    layer="model",
    falsifies="initialisation is badly scaled",
    predicts="logits start near zero",
)
def _init(case):
    return warned("initial logits have std 4.2", std=4.2)


@REGISTRY.check(
    "amp_dtype",
    layer="model",
    falsifies="mixed precision overflows",
    predicts="no inf in fp16 activations",
)
def _amp(case):
    return skipped("no GPU: mixed precision is not used")


def doctor_findings():
    return [check.finding(check.run(None), step=0, duration_s=0.01) for check in REGISTRY]


def test_a_session_outside_any_run_becomes_one_run_with_its_findings(ledger):
    original = doctor_findings()
    ids = ledger.record_findings(original, source="doctor")
    assert ids == [1, 2, 3, 4]
    [run] = ledger.runs()
    assert (run.name, run.status, run.exit_status) == ("doctor", "ok", None)
    assert run.env_hash and run.command  # the session's provenance, as for any run
    assert ledger.findings(run=run.id) == original
    assert ledger.entries() == [] and ledger.entries(checks=True) == []  # no hypothesis per check
    ledger.record_findings(original[:2], source="watch")
    assert [(r.id, r.name) for r in ledger.runs()] == [(1, "doctor"), (2, "watch")]
    assert len(ledger.findings(source="watch")) == 2 and len(ledger.findings(run=1)) == 4


def test_findings_inside_a_run_join_it(ledger):
    with ledger.run(git=False) as run:
        ledger.record_findings(doctor_findings(), source="doctor")
    assert [r.id for r in ledger.runs()] == [run.id]  # no second run was opened
    assert len(ledger.findings(run=run.id)) == 4


def test_findings_read_back_as_finding_objects(ledger):
    original = doctor_findings()
    with ledger.run(git=False) as run:
        ledger.record_findings(original, run=run.id, source="doctor")
    assert ledger.findings(run=run.id) == original
    assert [f.check for f in ledger.findings(status="fail")] == ["grads_flow"]
    assert [f.check for f in ledger.findings(status=["warn", "skip"])] == [
        "init_scale",
        "amp_dtype",
    ]
    assert [f.check for f in ledger.findings(check=["amp_dtype", "labels_aligned"])] == [
        "labels_aligned",
        "amp_dtype",
    ]
    assert ledger.findings(source="watch") == []
    with pytest.raises(InputError, match="`status` must be one of"):
        ledger.findings(status="broken")


def test_watch_findings_keep_step_and_rank(ledger):
    alert = Check(
        "loss_finite", "update", "the loss became NaN", "the loss stays finite", run=lambda c: None
    )
    finding = alert.finding(failed("loss is nan at step 120", loss="nan"), step=120, rank=3)
    with ledger.run(git=False) as run:
        run.record_findings([finding], source="watch")
    assert ledger.entries() == []
    [back] = ledger.findings(run=run.id, source="watch")
    assert (back.step, back.rank, back.status, back.evidence) == (120, 3, "fail", {"loss": "nan"})


def test_refused_findings_write_nothing(ledger):
    with pytest.raises(InputError, match="expected labcoat.Finding"):
        ledger.record_findings([doctor_findings()[0], "not a finding"], source="doctor")
    with pytest.raises(InputError, match="run 5: there is no such run"):
        ledger.record_findings(doctor_findings(), run=5, source="doctor")
    assert ledger.findings() == [] and ledger.runs() == []  # the refused batches wrote nothing


def test_entries_older_labcoat_made_for_checks_are_listed_only_on_request(ledger):
    """labcoat 0.1 wrote a resolved entry per doctor check, with its finding pointing to it."""
    from labcoat.ledger.records import entries
    from labcoat.ledger.store.chain import append
    from labcoat.ledger.store.schema import FINDINGS

    with ledger.storage.write() as tx:
        old = entries.create(
            tx, title="labels are shuffled", prediction="overfits", tags=["doctor", "data"]
        )
        row = {
            "entry_id": old.id,
            "source": "doctor",
            "recorded_at": "2025-01-01T00:00:00+00:00",
            "check_id": "labels_aligned",
            "status": "pass",
            "severity": 0,
            "evidence": "{}",
        }
        append(tx, FINDINGS, [row])
    mine = ledger.hypothesis(
        "labels are shuffled", predict="overfits", tags=["doctor", "data"]
    )  # the twin
    assert [e.id for e in ledger.entries()] == [mine.id]
    assert [e.id for e in ledger.entries(tag="doctor", match="any", verdict="open")] == [mine.id]
    assert [e.id for e in ledger.entries(checks=True)] == [old.id, mine.id]


def test_findings_join_the_run_that_labcoat_run_is_recording(ledger, monkeypatch):
    with ledger.run(git=False) as run:
        pass
    monkeypatch.setenv("LABCOAT_LEDGER", ledger.storage.target)
    monkeypatch.setenv("LABCOAT_RUN_ID", str(run.id))
    assert ledger.current_run_id() == run.id
    ledger.record_findings(doctor_findings()[:1], source="doctor")
    assert len(ledger.findings(run=run.id)) == 1
    monkeypatch.setenv("LABCOAT_LEDGER", "/some/other/ledger.db")  # another ledger's run: not ours
    assert ledger.current_run_id() is None


def test_events_in_bulk_with_nan_and_filters(ledger):
    with ledger.run(git=False) as run:
        n = run.record_events(
            [
                {"kind": "loss", "step": s, "rank": s % 2, "value": 1.0 / (s + 1), "lr": 0.1}
                for s in range(100)
            ]
            + [
                {
                    "kind": "loss_spike",
                    "step": 100,
                    "rank": 0,
                    "value": float("nan"),
                    "severity": "fail",
                    "message": "loss is nan",
                }
            ]
        )
    assert n == 101
    spikes = ledger.events(run=run.id, kind="loss_spike")
    assert len(spikes) == 1 and math.isnan(spikes[0].value) and spikes[0].severity == "fail"
    assert len(ledger.events(run=run.id, rank=1)) == 50
    window = ledger.events(run=run.id, kind="loss", min_step=10, max_step=19)
    assert [e.step for e in window] == list(range(10, 20)) and window[0].data == {"lr": 0.1}
    assert ledger.record_event("checkpoint", run=run.id, step=101, path="ckpt/101.pt") == 1
    assert ledger.events(kind="checkpoint")[0].data == {"path": "ckpt/101.pt"}
    assert ledger.verify().ok
    with pytest.raises(InputError, match="needs a non-empty 'kind'"):
        ledger.record_events([{"step": 1}])
    with pytest.raises(InputError, match="value must be a number"):
        ledger.record_events([{"kind": "loss", "value": "high"}])


def test_events_may_be_dataclasses_like_watch_alerts(ledger):
    @dataclasses.dataclass
    class Alert:
        kind: str
        step: int
        rank: int
        severity: str
        message: str
        evidence: dict

    ledger.record_events(
        [Alert("desync", 50, 2, "fail", "rank 2 differs", {"tensor": "fc.weight"})]
    )
    [event] = ledger.events(kind="desync")
    assert (event.step, event.rank, event.severity, event.data) == (
        50,
        2,
        "fail",
        {"evidence": {"tensor": "fc.weight"}},
    )
    with pytest.raises(InputError, match="must be a mapping, a dataclass"):
        ledger.record_events([object()])


def test_existing_ledger_is_found_for_diagnose(isolated):
    assert Ledger.existing() is None  # diagnose(ledger=None) records nothing and creates nothing
    Ledger().close()
    found = Ledger.existing()
    found.record_findings(doctor_findings(), source="doctor")
    assert len(found.findings()) == 4 and found.entries() == []
    found.close()


def test_the_watch_path_a_run_its_event_batches_and_its_findings(ledger):
    """What a watch does: open a run, write sampled series and alerts in batches, end with
    its findings; a batch with one bad event is refused whole."""
    run = ledger.start_run(name="watch", git=False)
    for start in range(0, 300, 100):
        batch = [
            {"kind": "loss", "step": s, "value": 1.0 / (s + 1)} for s in range(start, start + 100)
        ]
        assert ledger.record_events(batch, run=run) == 100
    with pytest.raises(InputError, match="step must be a number"):
        ledger.record_events(
            [{"kind": "loss", "step": 300}, {"kind": "loss", "step": "x"}], run=run
        )
    ledger.record_events(
        [{"kind": "alert", "step": 299, "severity": "warn", "message": "no trend"}], run=run
    )
    ledger.record_findings(doctor_findings()[:1], run=run, source="watch")
    ledger.finish_run(run, status="ok", exit_status=None)
    assert len(ledger.events(run=run, kind="loss")) == 300  # the refused batch left nothing
    assert [e.message for e in ledger.events(run=run, kind="alert")] == ["no trend"]
    assert [r.name for r in ledger.runs()] == ["watch"] and ledger.get_run(run).status == "ok"
    assert ledger.verify().rows["events"] == 301
