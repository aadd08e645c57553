"""Runs: provenance captured on entry, the end recorded on exit, and diffs between runs."""

from __future__ import annotations

import subprocess

import pytest

import labcoat.provenance.capture as provenance_module
from labcoat.errors import InputError
from labcoat.ledger import Ledger
from labcoat.provenance.diff import compare, flatten, split_patch
from tests.provenance.test_capture import git, make_repo


def test_run_records_provenance_on_entry_and_end_on_exit(ledger, tmp_path):
    data = tmp_path / "train.csv"
    data.write_text("x,y\n1,0\n")
    with ledger.run(
        config={"lr": 0.1, "opt": {"eps": 1e-8}},
        data=[str(data)],
        seeds={"torch": 0},
        name="baseline",
        git=False,
    ) as run:
        during = ledger.get_run(run.id)
        assert during.status == "running" and during.ended_at is None  # already on record
    stored = ledger.get_run(run.id)
    assert (stored.status, stored.exit_status, stored.name) == ("ok", 0, "baseline")
    assert stored.config == {"lr": 0.1, "opt": {"eps": 1e-8}} and len(stored.config_hash) == 64
    assert [d.name for d in stored.data] == [str(data)] and stored.data[0].method == "full"
    assert stored.seeds["torch"] == 0
    assert stored.env["packages"]["numpy"] and stored.env_hash
    assert stored.duration_s >= 0 and stored.started_at <= stored.ended_at


def test_an_exception_marks_the_run_failed_and_propagates(ledger):
    with pytest.raises(ZeroDivisionError):
        with ledger.run(git=False) as run:
            1 / 0
    stored = ledger.get_run(run.id)
    assert (stored.status, stored.exit_status) == ("failed", 1)
    assert stored.error.startswith("ZeroDivisionError")


def test_keyboard_interrupt_is_recorded_as_interrupted(ledger):
    with pytest.raises(KeyboardInterrupt):
        with ledger.run(git=False) as run:
            raise KeyboardInterrupt
    assert ledger.get_run(run.id).status == "interrupted"


def test_seeds_set_inside_the_block_are_recorded_at_the_end(ledger):
    import torch

    with ledger.run(git=False) as run:
        torch.manual_seed(1234)
    assert ledger.get_run(run.id).end_seeds["torch.initial_seed"] == 1234


def test_entries_link_to_runs(ledger):
    with ledger.run(git=False) as run:
        e = run.hypothesis("warmup too short", predict="early spikes")
    assert e.runs == (run.id,)
    assert [x.id for x in ledger.entries(run=run.id)] == [e.id]
    assert ledger.runs()[-1].id == run.id and ledger.runs(status="ok")[0].id == run.id


def test_run_cannot_end_twice(ledger):
    with ledger.run(git=False) as run:
        pass
    with pytest.raises(InputError, match="has already ended"):
        ledger.finish_run(run, status="ok", exit_status=0)
    with pytest.raises(InputError, match="run 99: there is no such run"):
        ledger.get_run(99)


def _environment_with(monkeypatch, **packages):
    real = provenance_module.capture_environment

    def patched():
        env = real()
        env["packages"] = {**env["packages"], **packages}
        return env

    monkeypatch.setattr(provenance_module, "capture_environment", patched)


def test_diff_shows_config_data_env_and_seed_changes(ledger, tmp_path, monkeypatch):
    data = tmp_path / "train.csv"
    data.write_text("x,y\n1,0\n")
    labels = tmp_path / "labels.csv"
    labels.write_text("0\n")
    with ledger.run(
        config={"lr": 0.1, "opt": {"name": "adam", "eps": 1e-8}},
        data=[str(data), str(labels)],
        seeds=0,
        git=False,
    ) as a:
        pass
    data.write_text("x,y\n1,1\n")
    _environment_with(monkeypatch, numpy="0.0.1-silently-upgraded")
    with ledger.run(
        config={"lr": 0.1, "opt": {"name": "adam", "eps": 1e-6}, "warmup": 100},
        data=[str(data), str(labels)],
        seeds=1,
        git=False,
    ) as b:
        pass
    diff = ledger.provenance_diff(a.id, b.id)
    assert not diff.same
    assert {(c.key, c.kind) for c in diff.section("config")} == {
        ("opt.eps", "changed"),
        ("warmup", "added"),
    }
    assert [c.key for c in diff.section("data")] == [str(data)]  # labels unchanged
    env = {c.key: c for c in diff.section("env")}
    assert env["packages.numpy"].after == "0.0.1-silently-upgraded"
    assert [c.key for c in diff.section("seeds")] == ["seed"]
    assert diff.to_dict()["changes"]["config"][0]["section"] == "config"


def test_diff_of_identical_runs_is_empty_apart_from_command(ledger):
    with ledger.run(config={"lr": 0.1}, git=False, command=["train"]) as a:
        pass
    with ledger.run(config={"lr": 0.1}, git=False, command=["train"]) as b:
        pass
    diff = ledger.provenance_diff(a.id, b.id)
    assert diff.same, diff.changes


def test_diff_shows_code_changes_and_the_diff_is_stored_once(tmp_path, monkeypatch):
    repo = make_repo(tmp_path / "repo", {"model.py": "width = 64\n", "data.py": "shuffle = True\n"})
    monkeypatch.chdir(repo)
    ledger = Ledger(str(tmp_path / "ledger.db"))
    (repo / "model.py").write_text("width = 128\n")
    with ledger.run() as a:
        pass
    with ledger.run() as same_tree:
        pass
    (repo / "data.py").write_text("shuffle = False\n")
    git(repo, "commit", "-q", "-am", "second")
    with ledger.run() as b:
        pass
    ra, rsame, rb = ledger.get_run(a.id), ledger.get_run(same_tree.id), ledger.get_run(b.id)
    assert (
        ra.git_dirty
        and ra.diff_hash == rsame.diff_hash
        and not rb.git_dirty
        and rb.diff_hash is None
    )
    assert "+width = 128" in ledger.run_diff_text(a.id)
    assert ledger.verify().rows["blobs"] == 1  # two runs, one stored diff
    code = {c.key: c for c in ledger.provenance_diff(a.id, b.id).section("code")}
    assert code["commit"].before == ra.git_commit and code["commit"].after == rb.git_commit
    assert code["dirty"].before is True and code["dirty"].after is False
    assert (
        code["uncommitted model.py"].before == "+1 -1"
        and code["uncommitted model.py"].after is None
    )
    assert any("data.py" in line for line in ledger.provenance_diff(a.id, b.id).commit_stat)
    assert ledger.provenance_diff(a.id, same_tree.id).section("code") == []
    ledger.close()


def test_flatten_and_compare():
    assert flatten({"a": {"b": 1, "c": [1, 2]}, "d": {}}) == {"a.b": 1, "a.c": [1, 2], "d": {}}
    changes = compare("config", {"a": 1, "b": 2}, {"a": 1, "c": 3})
    assert [(c.key, c.kind) for c in changes] == [("b", "removed"), ("c", "added")]


def test_split_patch_by_file():
    patch = subprocess.run(
        ["git", "diff", "--no-index", "--no-color", "/dev/null", __file__],
        capture_output=True,
        text=True,
    ).stdout
    parts = split_patch(patch + patch.replace("test_runs.py", "other.py"))
    assert len(parts) == 2
