"""diagnose(ledger=...) records one run with its findings in the lab notebook, only where asked."""

import pytest

import labcoat
from tests.doctor.helpers import diagnose, mlp


def test_a_doctor_session_is_one_run_with_its_findings(tmp_path):
    path = tmp_path / "ledger.db"
    report = diagnose(mlp(), ledger=str(path))
    ledger = labcoat.Ledger(path)
    [run] = ledger.runs()
    assert run.name == "doctor"
    stored = ledger.findings(run=run, source="doctor")
    assert [f.check for f in stored] == [f.check for f in report.findings]
    assert report.extras["ledger"]["findings"]
    assert ledger.entries() == []  # the user's hypotheses are not buried under the checks
    assert ledger.verify()


def test_failed_check_is_a_confirmed_hypothesis(tmp_path):
    model = mlp()
    import torch

    opt = torch.optim.Adam(model[0].parameters(), lr=1e-3)
    ledger = labcoat.Ledger(tmp_path / "l.db")
    report = diagnose(model, optimizer=opt, ledger=ledger)
    assert report.failed_layer == "update"
    failed = ledger.findings(status="fail")
    assert [f.check for f in failed] == ["update.optimizer.coverage"]
    assert ledger.findings(check="update.optimizer.coverage")[0].falsifies == failed[0].falsifies


def test_default_none_creates_nothing_when_no_ledger_exists(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LABCOAT_LEDGER", raising=False)
    report = diagnose(mlp(), ledger=None)
    assert "ledger" not in report.extras
    assert list(tmp_path.iterdir()) == []


def test_default_none_records_in_an_existing_default_ledger(tmp_path, monkeypatch):
    path = tmp_path / "team.db"
    labcoat.Ledger(path)  # the user keeps a ledger
    monkeypatch.setenv("LABCOAT_LEDGER", str(path))
    report = diagnose(mlp(), ledger=None)
    assert report.extras["ledger"]["findings"]


def test_bad_ledger_argument_is_an_input_error():
    with pytest.raises(labcoat.InputError, match="ledger"):
        diagnose(mlp(), ledger=3.5)


def test_findings_inside_a_run_block_join_that_run(tmp_path):
    ledger = labcoat.Ledger(tmp_path / "l.db")
    with ledger.run(config={"model": "mlp"}) as run:
        diagnose(mlp(), ledger=ledger)
    outside = diagnose(mlp(), ledger=ledger)
    inside = ledger.findings(run=run)
    assert inside and len(ledger.findings()) == len(inside) + len(outside.findings)
    assert [r.name for r in ledger.runs()] == [
        None,
        "doctor",
    ]  # the block's run, then one of its own
