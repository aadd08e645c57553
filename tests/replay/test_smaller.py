"""The smaller promises of issue 33, each with a planted case and its healthy twin: a killed
run's status, where runs are looked for, the data a run read, a reproducible ``every``,
``diff --only`` and what ``diff --bisect`` says when no module is at fault."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import labcoat
from labcoat.errors import InputError
from labcoat.replay import status
from labcoat.replay.diff import divergence, no_module
from labcoat.replay.results import DiffResult
from labcoat.replay.runs import open_run

torch.set_num_threads(1)


def _train(runs: Path, *, every=4, steps=8, data=None, noise=0.0, ledger=False):
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    if data is None:
        data = torch.arange(24.0).reshape(8, 3)
    loader = DataLoader(TensorDataset(data), batch_size=2)
    with labcoat.replayable(
        model=model, optimizer=opt, every=every, dir=runs, ledger=ledger
    ) as rec:
        for _ in rec.loop("epoch", range(steps // len(loader))):
            for (x,) in rec.loop("step", loader):
                loss = model(x).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                rec.log(loss=loss, noise=noise * rec.step)
    return rec


# -- a killed run ------------------------------------------------------------------------------
def _dead_process() -> dict:
    """The identity of a process that ran and exited."""
    proc = subprocess.Popen(["sleep", "30"])
    identity = {**status.identity(), "pid": proc.pid, "started": status._started(proc.pid)}
    proc.kill()
    proc.wait()
    return identity


def _running(tmp_path: Path, process: dict) -> Path:
    rec = _train(tmp_path / "runs")
    manifest = json.loads((rec.dir / "run.json").read_text())
    manifest.update(status="running", process=process)
    (rec.dir / "run.json").write_text(json.dumps(manifest))
    return rec.dir


@pytest.mark.parametrize("how", ["exited", "pid reused"])
def test_a_running_run_whose_process_died_is_marked_killed(tmp_path, how):
    process = _dead_process() if how == "exited" else {**status.identity(), "started": "1"}
    run = _running(tmp_path, process)
    assert open_run(run).manifest["status"] == "killed"
    assert json.loads((run / "run.json").read_text())["status"] == "killed"  # written back


@pytest.mark.parametrize("how", ["alive", "another host"])
def test_the_twin_a_run_still_running_or_out_of_sight_stays_running(tmp_path, how):
    process = status.identity()
    if how == "another host":
        process = {**_dead_process(), "host": "elsewhere"}
    run = _running(tmp_path, process)
    assert open_run(run).manifest["status"] == "running"


def test_a_finished_recording_holds_its_process_and_stays_finished(tmp_path):
    rec = _train(tmp_path / "runs")
    manifest = open_run(rec.dir).manifest
    assert manifest["status"] == "finished" and manifest["process"]["pid"] > 0


# -- where runs are looked for -----------------------------------------------------------------
def test_a_run_id_is_found_through_the_ledger_from_another_directory(tmp_path, monkeypatch):
    ledger = tmp_path / "ledger.db"
    rec = _train(tmp_path / "project" / "runs", ledger=str(ledger))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.setenv("LABCOAT_RUNS", str(elsewhere / "runs"))
    monkeypatch.setenv("LABCOAT_LEDGER", str(ledger))
    assert open_run(rec.run_id).dir == rec.dir.resolve()
    assert open_run(rec.run_id[:18]).dir == rec.dir.resolve()  # a unique prefix


def test_the_twin_without_a_ledger_the_error_says_where_it_looked(tmp_path, monkeypatch):
    rec = _train(tmp_path / "project" / "runs")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABCOAT_RUNS", str(tmp_path / "other"))
    monkeypatch.setenv("LABCOAT_LEDGER", str(tmp_path / "no-ledger.db"))
    with pytest.raises(InputError) as err:
        open_run(rec.run_id)
    message = str(err.value)
    assert str(tmp_path / "other") in message and "no ledger found" in message
    assert "LABCOAT_RUNS" in message


# -- the data a run read -----------------------------------------------------------------------
def test_a_diff_names_the_data_files_and_the_dataset_that_differ(tmp_path, monkeypatch):
    (tmp_path / "a.csv").write_text("1,2,3\n")
    (tmp_path / "b.csv").write_text("1,2,4\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["train.py", "--data", "a.csv"])
    run_a = _train(tmp_path / "runs")
    monkeypatch.setattr(sys, "argv", ["train.py", "--data=b.csv"])
    run_b = _train(tmp_path / "runs", data=torch.arange(24.0).reshape(8, 3) + 1)
    rows = [r for r in divergence(run_a.dir, run_b.dir).provenance if r["section"] == "data"]
    keys = {r["key"] for r in rows}
    assert {"argv:a.csv", "argv:b.csv", "loader:step"} <= keys, rows
    (finding,) = divergence(run_a.dir, run_b.dir).findings
    assert "data: " in finding.message and "argv:a.csv" in finding.message


def test_the_twin_the_same_data_shows_no_data_difference(tmp_path, monkeypatch):
    (tmp_path / "a.csv").write_text("1,2,3\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["train.py", "a.csv"])
    run_a, run_b = _train(tmp_path / "runs"), _train(tmp_path / "runs")
    manifest = open_run(run_a.dir).manifest
    assert {d["name"] for d in manifest["provenance"]["data"]} == {"argv:a.csv", "loader:step"}
    assert not [r for r in divergence(run_a.dir, run_b.dir).provenance if r["section"] == "data"]


# -- a reproducible every ----------------------------------------------------------------------
def test_a_repeat_of_the_same_command_checkpoints_where_the_first_did(tmp_path):
    first = open_run(_train(tmp_path / "runs", every=None, steps=32).dir).manifest
    second_rec = _train(tmp_path / "runs", every=None, steps=32)
    second = open_run(second_rec.dir).manifest
    assert first["every_source"] == "measured" and first["every_changes"]
    assert second["every_source"] == {"reused_from": first["run_id"]}
    assert second["every_chosen"] == first["every_chosen"]
    steps = open_run(second_rec.dir).checkpoints()
    assert all(s % first["every_chosen"] == 0 for s in steps)


def test_the_twin_another_command_measures_its_own(tmp_path):
    first = open_run(_train(tmp_path / "runs", every=None, steps=16).dir).manifest
    manifest_path = tmp_path / "runs" / first["run_id"] / "run.json"
    manifest_path.write_text(json.dumps({**first, "command": ["python", "other.py"]}))
    second = open_run(_train(tmp_path / "runs", every=None, steps=16).dir).manifest
    assert second["every_source"] == "measured"


# -- diff --only -------------------------------------------------------------------------------
def test_diff_only_compares_the_chosen_values(tmp_path):
    a = _train(tmp_path / "runs", noise=0.0)
    b = _train(tmp_path / "runs", noise=1.0)
    everything = divergence(a.dir, b.dir)
    assert everything.first_divergence["name"] == "noise"  # planted: a value that differs
    loss = divergence(a.dir, b.dir, only=["loss"])
    assert loss.first_divergence is None and loss.ok  # the twin: the chosen value agrees
    assert [row[0] for row in loss.values["loss"]] == list(range(8))
    assert all(row[1] == row[2] for row in loss.values["loss"])
    with pytest.raises(InputError, match="--only: lr not logged by both runs"):
        divergence(a.dir, b.dir, only=["lr"])


def test_the_cli_takes_only(tmp_path):
    from click.testing import CliRunner

    from labcoat.cli.main import cli

    a = _train(tmp_path / "runs", noise=0.0)
    b = _train(tmp_path / "runs", noise=1.0)
    args = ["divergence", str(a.dir), str(b.dir), "--only", "noise", "--no-ledger", "--json"]
    out = CliRunner().invoke(cli, args)
    data = json.loads(out.output)
    assert data["only"] == ["noise"] and data["first_divergence"]["step"] == 1


# -- bisect with no module at fault ------------------------------------------------------------
def test_a_bisect_without_a_module_says_the_value_itself_differs():
    found = {"step": 6, "name": "lr", "a": 0.05, "b": 0.025}
    bisected = no_module(found)
    result = DiffResult(a="A", b="B", provenance=[], first_divergence=found, bisect=bisected)
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(_view(result))
    text = console.export_text()
    assert "is None" not in text
    assert "'lr'" in text and "hyperparameter" in text and "no module is at fault" in text


def _view(result):
    from labcoat.replay.view import diff_view

    return diff_view(result)


def test_the_twin_a_bisect_naming_a_module_names_it():
    found = {"step": 6, "name": "loss", "a": 0.5, "b": 0.6}
    bisected = {"step": 6, "module": "0.body"}
    result = DiffResult(a="A", b="B", provenance=[], first_divergence=found, bisect=bisected)
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(_view(result))
    assert "first module that differs is '0.body'" in console.export_text()


def test_a_datasets_arrays_and_paths_are_fingerprinted_and_an_opaque_one_is_not(tmp_path):
    from labcoat.replay.datasets import dataset_fingerprint

    class Images:
        def __init__(self, data, root):
            self.data, self.targets, self.root = data, torch.zeros(4), root

    same = dataset_fingerprint(Images(torch.ones(4, 2), str(tmp_path)), "step")
    again = dataset_fingerprint(Images(torch.ones(4, 2), str(tmp_path)), "step")
    other = dataset_fingerprint(Images(torch.ones(4, 2) * 2, str(tmp_path)), "step")
    assert same["attributes"] == ["data", "targets", "root"] and same["name"] == "loader:step"
    assert same["digest"] == again["digest"] != other["digest"]
    assert dataset_fingerprint(object(), "step") is None  # nothing to vouch for: no entry


@pytest.mark.parametrize("version", [1, 2])
def test_a_run_of_the_first_recorder_is_said_to_replay_its_batches_differently(tmp_path, version):
    from labcoat.replay.replay import ReplayFailed, replay

    rec = _train(tmp_path / "runs")
    manifest = json.loads((rec.dir / "run.json").read_text())
    manifest.update(version=version, command=[sys.executable, "-c", "pass"])
    (rec.dir / "run.json").write_text(json.dumps(manifest))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ReplayFailed):  # the stand-in command records nothing
            replay(rec.dir, from_step=0, to_step=1)
    said = [w for w in caught if "first recorder" in str(w.message)]
    assert len(said) == (1 if version == 1 else 0)
