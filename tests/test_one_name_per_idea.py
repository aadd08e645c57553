"""One name per idea: the doctor's result is ``Diagnosis`` (``labcoat.report`` draws pages), its
``effort`` is how much the controls train (a budget is evals' items or FLOPs), ``record`` saves a
result (the replay recorder is ``labcoat.replayable``; a ledger run's row is
``ActiveRun.stored()``), and each diff names what it compares (``labcoat divergence``, ``labcoat
ledger provenance-diff``). Every old name keeps working one release and says what replaces it
(docs/deprecations.md)."""

from __future__ import annotations

import json
import warnings

import pytest

import labcoat
from labcoat.errors import InputError


def test_the_doctors_result_is_a_diagnosis_and_report_still_answers_with_a_warning():
    import labcoat.doctor
    import labcoat.doctor.result as result

    for module, where in ((labcoat, "labcoat"), (labcoat.doctor, "labcoat.doctor"), (result, "")):
        with pytest.warns(DeprecationWarning, match=r"Report is deprecated.*Diagnosis"):
            assert module.Report is result.Diagnosis, where
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert labcoat.Diagnosis is labcoat.doctor.Diagnosis is result.Diagnosis


def test_effort_names_how_much_the_controls_train_and_budget_still_works():
    import torch
    from torch import nn

    from labcoat.doctor.result import Diagnosis

    found = Diagnosis(findings=[], layers_run=["data"], effort="full")
    assert found.to_dict()["effort"] == found.to_dict()["budget"] == "full"
    with pytest.warns(DeprecationWarning, match=r"budget is deprecated.*\.effort"):
        assert found.budget == "full"
    model = nn.Linear(2, 2)
    parts = ([(torch.zeros(2), 0)] * 4, nn.functional.cross_entropy)
    with pytest.warns(DeprecationWarning, match=r"Experiment\(budget=\.\.\.\).*effort"):
        experiment = labcoat.Experiment(
            model, parts[0], parts[1], torch.optim.SGD(model.parameters(), 0.1), budget="full"
        )
    assert experiment.effort == "full"
    with pytest.warns(DeprecationWarning, match="`budget` is deprecated.*`effort`"):
        with pytest.raises(InputError, match="effort"):  # passed on as effort=, then checked
            labcoat.diagnose(model, parts[0], parts[1], experiment.optimizer, budget="huge")


def test_the_replay_recorder_is_replayable_and_record_still_answers():
    with pytest.warns(DeprecationWarning, match=r"labcoat.record is deprecated.*replayable"):
        assert labcoat.record is labcoat.replayable
    from labcoat.replay.record import record

    with pytest.warns(DeprecationWarning, match=r"labcoat.record\(\).*labcoat.replayable\(\)"):
        with pytest.raises(TypeError):
            record(no_such_argument=1)


def test_each_diff_names_what_it_compares_and_the_old_names_still_work(tmp_path, cli):
    with labcoat.Ledger(tmp_path / "l.db") as ledger:
        for lr in (0.1, 0.2):
            with ledger.run(config={"lr": lr}, git=False) as run:
                pass
        new = ledger.provenance_diff(1, 2)
        with pytest.warns(DeprecationWarning, match=r"Ledger.diff.*provenance_diff"):
            assert ledger.diff(1, 2).to_dict() == new.to_dict()
        with pytest.warns(DeprecationWarning, match=r"ActiveRun.record\(\).*stored\(\)"):
            assert run.record() == run.stored() == ledger.get_run(2)
    args = ["1", "2", "--ledger", tmp_path / "l.db", "--json"]
    now, before = cli("ledger", "provenance-diff", *args), cli("ledger", "diff", *args)
    assert now.code == before.code == 0 and json.loads(before.out) == json.loads(now.out)
    assert "labcoat ledger diff is deprecated; use labcoat ledger provenance-diff" in before.err
    from labcoat import replay

    with pytest.warns(DeprecationWarning, match=r"replay.diff\(\).*replay.divergence\(\)"):
        with pytest.raises(InputError):
            replay.diff(tmp_path / "no-a", tmp_path / "no-b")
    old = cli("diff", tmp_path / "no-a", tmp_path / "no-b")
    assert old.code == cli("divergence", tmp_path / "no-a", tmp_path / "no-b").code == 2
    assert "labcoat diff is deprecated; use labcoat divergence" in old.err
    listed = cli("--help").out + cli("ledger").err
    assert "divergence" in listed and "provenance-diff" in listed
    assert " diff " not in listed.replace("provenance-diff", "")
