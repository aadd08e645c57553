"""The contract with the doctor and the watch: findings and events stored against runs."""

from __future__ import annotations

import dataclasses
import math

import pytest

from labcoat.errors import InputError
from labcoat.findings import Check, CheckRegistry, failed, passed, skipped, warned
from labcoat.ledger import VERDICT_FOR_STATUS, Ledger

REGISTRY = CheckRegistry(["data", "model"])


@REGISTRY.check(
    "labels_aligned",
    layer="data",
    falsifies="labels are shuffled relative to inputs",
    predicts="a small model overfits 32 examples to zero loss",
)
def _labels(case):
    return passed("loss reached 0.001", final_loss=0.001)


@REGISTRY.check("grads_flow", layer="model", falsifies="part of the graph is detached", predicts="every parameter gets a gradient")
def _grads(case):
    return failed("2 parameters got no gradient", parameters=["head.weight", "head.bias"])


@REGISTRY.check("init_scale", layer="model", falsifies="initialisation is badly scaled", predicts="logits start near zero")
def _init(case):
    return warned("initial logits have std 4.2", std=4.2)


@REGISTRY.check("amp_dtype", layer="model", falsifies="mixed precision overflows", predicts="no inf in fp16 activations")
def _amp(case):
    return skipped("no GPU: mixed precision is not used")


def doctor_findings():
    return [check.finding(check.run(None), step=0, duration_s=0.01) for check in REGISTRY]


def test_status_to_verdict_mapping_is_the_documented_one():
    assert VERDICT_FOR_STATUS == {"pass": "refuted", "fail": "confirmed", "warn": "inconclusive", "skip": "inconclusive"}


def test_doctor_findings_become_resolved_hypotheses(ledger):
    with ledger.run(git=False) as run:
        ids = ledger.record_findings(doctor_findings(), run=run)
    assert ids == [1, 2, 3, 4]
    by_title = {e.title: e for e in ledger.entries(tag="doctor")}
    assert set(by_title) == {c.falsifies for c in REGISTRY}
    labels = by_title["labels are shuffled relative to inputs"]
    assert labels.prediction == "a small model overfits 32 examples to zero loss"
    assert labels.verdict == "refuted" and labels.runs == (run.id,)
    assert labels.result.startswith("pass: loss reached 0.001") and '"final_loss":0.001' in labels.result
    assert set(labels.tags) == {"doctor", "data", "labels_aligned"}
    assert by_title["part of the graph is detached"].verdict == "confirmed"
    assert "model layer is broken" in by_title["part of the graph is detached"].conclusion
    assert by_title["initialisation is badly scaled"].verdict == "inconclusive"
    assert by_title["mixed precision overflows"].verdict == "inconclusive"
    # the prediction is recorded (revision 1) before the observation (revision 2)
    assert [h.change for h in labels.history()] == ["created", "resolved"]
    orders = {p.entry_id: p.order for p in ledger.verify().predictions}
    assert all(orders[e.id] == "before" for e in by_title.values())


def test_findings_read_back_as_finding_objects(ledger):
    original = doctor_findings()
    with ledger.run(git=False) as run:
        ledger.record_findings(original, run=run.id)
    assert ledger.findings(run=run.id) == original
    assert [f.check for f in ledger.findings(status="fail")] == ["grads_flow"]
    assert [f.check for f in ledger.findings(status=["warn", "skip"])] == ["init_scale", "amp_dtype"]
    assert ledger.findings(source="watch") == []
    entry = ledger.entries(text="detached")[0]
    assert [f.check for f in ledger.findings(entry=entry.id)] == ["grads_flow"]


def test_watch_findings_are_stored_without_hypotheses(ledger):
    alert = Check("loss_finite", "update", "the loss became NaN", "the loss stays finite", run=lambda c: None)
    finding = alert.finding(failed("loss is nan at step 120", loss="nan"), step=120, rank=3)
    with ledger.run(git=False) as run:
        run.record_findings([finding], source="watch")
    assert ledger.entries() == []
    [back] = ledger.findings(run=run.id, source="watch")
    assert (back.step, back.rank, back.status, back.evidence) == (120, 3, "fail", {"loss": "nan"})


def test_findings_without_a_run_and_bad_input(ledger):
    assert ledger.record_findings([doctor_findings()[0]], as_hypotheses=False) == [1]
    assert ledger.findings()[0].check == "labels_aligned"
    with pytest.raises(InputError, match="expected labcoat.Finding"):
        ledger.record_findings(["not a finding"])
    with pytest.raises(InputError, match="run 5: there is no such run"):
        ledger.record_findings(doctor_findings(), run=5)
    assert len(ledger.findings()) == 1 and ledger.entries() == []  # the refused batches wrote nothing


def test_findings_join_the_run_that_labcoat_run_is_recording(ledger, monkeypatch):
    with ledger.run(git=False) as run:
        pass
    monkeypatch.setenv("LABCOAT_LEDGER", ledger.storage.target)
    monkeypatch.setenv("LABCOAT_RUN_ID", str(run.id))
    assert ledger.current_run_id() == run.id
    ledger.record_findings(doctor_findings()[:1])
    assert len(ledger.findings(run=run.id)) == 1
    monkeypatch.setenv("LABCOAT_LEDGER", "/some/other/ledger.db")  # another ledger's run: not ours
    assert ledger.current_run_id() is None


def test_events_in_bulk_with_nan_and_filters(ledger):
    with ledger.run(git=False) as run:
        n = run.record_events(
            [{"kind": "loss", "step": s, "rank": s % 2, "value": 1.0 / (s + 1), "lr": 0.1} for s in range(100)]
            + [{"kind": "loss_spike", "step": 100, "rank": 0, "value": float("nan"), "severity": "fail", "message": "loss is nan"}]
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

    ledger.record_events([Alert("desync", 50, 2, "fail", "rank 2 differs", {"tensor": "fc.weight"})])
    [event] = ledger.events(kind="desync")
    assert (event.step, event.rank, event.severity, event.data) == (50, 2, "fail", {"evidence": {"tensor": "fc.weight"}})
    with pytest.raises(InputError, match="must be a mapping, a dataclass"):
        ledger.record_events([object()])


def test_existing_ledger_is_found_for_diagnose(isolated):
    assert Ledger.existing() is None  # diagnose(ledger=None) records nothing and creates nothing
    Ledger().close()
    found = Ledger.existing()
    found.record_findings(doctor_findings())
    assert len(found.entries()) == 4
    found.close()
