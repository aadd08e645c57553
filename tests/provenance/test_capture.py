"""Provenance: git state with the uncommitted diff, data fingerprints, environment, config."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from labcoat.errors import InputError
from labcoat.provenance.capture import capture_provenance, normalise_config
from labcoat.provenance.environment import capture_environment, relevant_variables
from labcoat.provenance.fingerprint import (
    CHUNK_BYTES,
    SAMPLE_ABOVE_BYTES,
    fingerprint,
    fingerprint_all,
)
from labcoat.provenance.git import git_state


def git(repo, *args):
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def make_repo(root, files: dict[str, str]):
    """A git repository at ``root`` with ``files`` committed on branch main."""
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "lab@example.org")
    git(root, "config", "user.name", "Lab")
    for name, text in files.items():
        (root / name).write_text(text)
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "first")
    return root


@pytest.fixture
def repo(tmp_path):
    return make_repo(tmp_path / "repo", {"train.py": "lr = 0.1\n", ".gitignore": "*.ckpt\n"})


def test_an_edit_in_the_instant_the_index_was_written_is_in_the_diff(repo):
    # git trusts a file whose size and mtime match its index entry, unless the entry is as new as
    # the index file itself ("racily clean"): then it reads the content. A diff taken on a copy
    # of the index must keep the index's mtime, or such an edit is lost (ctime is left out of
    # git's check here, as core.trustctime=false does; mtimes are set where a fast edit puts them)
    git(repo, "config", "core.trustctime", "false")
    then = (repo / "train.py").stat().st_mtime_ns - 10**9
    os.utime(repo / "train.py", ns=(then, then))
    git(repo, "update-index", "--refresh")  # the entry records that mtime
    (repo / "train.py").write_text("lr = 0.3\n")  # the same size as "lr = 0.1\n"
    os.utime(repo / "train.py", ns=(then, then))
    os.utime(repo / ".git" / "index", ns=(then, then))
    plain = subprocess.run(
        ["git", "diff"],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},  # read the index, do not rewrite it
    ).stdout
    assert "+lr = 0.3" in plain  # git itself sees it
    diff = git_state(repo).diff.decode()
    assert "-lr = 0.1" in diff and "+lr = 0.3" in diff


def test_clean_repository(repo):
    state = git_state(repo)
    assert state.root == str(repo) and state.branch == "main" and len(state.commit) == 40
    assert state.dirty is False and state.diff == b""


def test_uncommitted_changes_and_untracked_files_are_in_the_diff(repo):
    (repo / "train.py").write_text("lr = 0.3\n")
    (repo / "notes.md").write_text("new idea\n")
    (repo / "model.ckpt").write_bytes(b"\0" * 100)  # ignored: not part of the code
    index_before = (repo / ".git" / "index").read_bytes()
    state = git_state(repo)
    diff = state.diff.decode()
    assert state.dirty
    assert "-lr = 0.1" in diff and "+lr = 0.3" in diff
    assert "notes.md" in diff and "+new idea" in diff
    assert "model.ckpt" not in diff
    assert (repo / ".git" / "index").read_bytes() == index_before  # the user's index is untouched
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True
    ).stdout
    assert "?? notes.md" in status  # still untracked


def test_large_untracked_files_are_named_not_copied(repo, monkeypatch):
    import labcoat.provenance.git as gitinfo

    monkeypatch.setattr(gitinfo, "MAX_UNTRACKED_FILE_BYTES", 1000)
    (repo / "big.bin").write_bytes(os.urandom(5000))
    state = git_state(repo)
    assert state.untracked_skipped == ("big.bin",) and state.dirty and b"big.bin" not in state.diff


def test_the_ledgers_own_files_are_not_part_of_the_code_state(repo, monkeypatch):
    from labcoat.ledger import Ledger

    monkeypatch.chdir(repo)
    ledger = Ledger(repo / ".labcoat" / "ledger.db")
    with ledger.run() as first:
        pass
    with ledger.run() as second:
        pass
    for run in (first, second):
        assert run.provenance.git.dirty is False and run.provenance.git.diff == b""
    (repo / "notes.md").write_text("new idea\n")  # other untracked files still count
    with ledger.run() as third:
        pass
    assert third.provenance.git.dirty and b"notes.md" in third.provenance.git.diff
    assert b"ledger.db" not in third.provenance.git.diff
    ledger.close()


def test_repository_without_commits_and_outside_git(tmp_path):
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git(fresh, "init", "-q")
    (fresh / "a.py").write_text("x = 1\n")
    state = git_state(fresh)
    assert state.commit is None and state.dirty and b"+x = 1" in state.diff
    plain = tmp_path / "plain"
    plain.mkdir()
    assert git_state(plain) is None


# ---- fingerprints ----------------------------------------------------------------------


def test_small_files_are_hashed_in_full_and_ignore_mtime(tmp_path):
    a = tmp_path / "a.csv"
    a.write_text("x,y\n1,2\n")
    first = fingerprint(a)
    os.utime(a, (0, 0))
    assert fingerprint(a).digest == first.digest and first.method == "full"
    copy = tmp_path / "b.csv"
    copy.write_bytes(a.read_bytes())
    assert fingerprint(copy).digest == first.digest  # content, not path
    a.write_text("x,y\n1,3\n")
    assert fingerprint(a).digest != first.digest


def test_large_files_are_sampled_and_full_hash_sees_every_byte(tmp_path):
    path = tmp_path / "shard.bin"
    data = bytearray(
        np.random.default_rng(0).integers(0, 256, SAMPLE_ABOVE_BYTES * 4, dtype=np.uint8).tobytes()
    )
    path.write_bytes(data)
    sampled, full = fingerprint(path), fingerprint(path, full=True)
    assert (sampled.method, full.method) == ("sampled", "full") and sampled.digest != full.digest

    data[0] ^= 1  # the first chunk is always sampled
    path.write_bytes(data)
    assert fingerprint(path).digest != sampled.digest
    data[0] ^= 1
    data[CHUNK_BYTES + 10] ^= 1  # between the first two sampled chunks: sampling misses it ...
    path.write_bytes(data)
    assert fingerprint(path).digest == sampled.digest
    assert fingerprint(path, full=True).digest != full.digest  # ... the full hash does not
    path.write_bytes(bytes(data) + b"x")  # an append changes the size
    assert fingerprint(path).digest != sampled.digest


def test_directories_depend_on_names_and_contents(tmp_path):
    d = tmp_path / "data"
    (d / "train").mkdir(parents=True)
    (d / "train" / "0.txt").write_text("a")
    (d / "test.txt").write_text("b")
    first = fingerprint(d)
    assert first.kind == "directory" and first.files == 2 and first.size == 2
    (d / "test.txt").rename(d / "val.txt")
    assert fingerprint(d).digest != first.digest


def test_arrays_and_tensors(tmp_path):
    import torch

    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    fa = fingerprint(a, name="x")
    assert (fa.kind, fa.shape, fa.dtype, fa.size) == ("array", (3, 4), "float32", 48)
    assert fingerprint(a.copy()).digest == fa.digest
    assert fingerprint(a.reshape(4, 3)).digest != fa.digest  # same bytes, other shape
    assert fingerprint(a.astype(np.int32)).digest != fa.digest
    assert fingerprint(np.asfortranarray(a)).digest == fa.digest  # layout is not content
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    ft = fingerprint(t)
    assert ft.kind == "tensor" and ft.shape == (3, 4)
    assert fingerprint(t.t().contiguous().t()).digest == ft.digest
    assert fingerprint(t.to(torch.bfloat16)).digest != ft.digest
    ds = torch.utils.data.TensorDataset(t, torch.zeros(3))
    assert fingerprint(ds).kind == "collection"
    with pytest.raises(InputError, match="dtype object"):
        fingerprint(np.array([object()]))
    with pytest.raises(InputError, match="cannot fingerprint a set"):
        fingerprint({1, 2})
    with pytest.raises(InputError, match="is not an existing file"):
        fingerprint(str(tmp_path / "missing.csv"))


def test_fingerprint_all_names_inputs(tmp_path):
    p = tmp_path / "a.txt"
    p.write_text("a")
    named = fingerprint_all({"train": str(p), "labels": np.zeros(3)})
    assert [f.name for f in named] == ["train", "labels"]
    assert [f.name for f in fingerprint_all([str(p), np.zeros(2)])] == [str(p), "data[1]"]


# ---- environment and config ------------------------------------------------------------


def test_environment_lists_packages_without_importing_torch(subprocess_env):
    code = (
        "import sys, json; from labcoat.provenance.environment import capture_environment; "
        "env = capture_environment(); "
        "print(json.dumps({'torch_imported': 'torch' in sys.modules, 'torch': env['torch'], "
        "'has_torch_pkg': 'torch' in env['packages'], 'numpy': env['packages'].get('numpy')}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=subprocess_env, capture_output=True, text=True, check=True
    )
    info = json.loads(out.stdout)
    assert info == {
        "torch_imported": False,
        "torch": None,
        "has_torch_pkg": True,
        "numpy": np.__version__,
    }


def test_environment_describes_torch_when_it_is_imported():
    import torch

    env = capture_environment()
    assert env["torch"]["version"] == str(torch.__version__)
    assert env["torch"]["cuda_available"] == torch.cuda.is_available()
    assert env["python"]["version"].count(".") == 2


def test_gpus_are_described_when_cuda_is_available(monkeypatch):
    """No GPU here: stand in for torch.cuda's answers to exercise the GPU branch."""
    import types

    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i: f"Lab GPU {i}")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda i: (9, 0))
    monkeypatch.setattr(
        torch.cuda, "get_device_properties", lambda i: types.SimpleNamespace(total_memory=80 << 30)
    )
    details = capture_environment()["torch"]
    assert details["cuda_available"] is True and "tf32_matmul" in details
    assert details["gpus"] == [
        {"name": f"Lab GPU {i}", "capability": [9, 0], "memory_bytes": 80 << 30} for i in range(2)
    ]


def test_relevant_variables_keep_numerics_and_drop_secrets():
    kept = relevant_variables(
        {
            "CUDA_VISIBLE_DEVICES": "0",
            "PYTHONHASHSEED": "0",
            "HF_TOKEN": "x",
            "NCCL_SECRET_KEY": "y",
            "HOME": "/root",
        }
    )
    assert kept == {"CUDA_VISIBLE_DEVICES": "0", "PYTHONHASHSEED": "0"}


def test_config_forms():
    @dataclasses.dataclass
    class Cfg:
        lr: float = 0.1
        layers: tuple = (64, 64)

    assert normalise_config(Cfg()) == {"lr": 0.1, "layers": [64, 64]}
    assert normalise_config(argparse.Namespace(lr=0.2)) == {"lr": 0.2}
    assert normalise_config({"opt": {"eps": np.float64(1e-8)}, "n": np.int64(3)}) == {
        "opt": {"eps": 1e-8},
        "n": 3,
    }
    with pytest.raises(InputError, match="config: expected a mapping"):
        normalise_config([("lr", 0.1)])


def test_capture_provenance_hashes_config_data_and_environment(repo, monkeypatch):
    monkeypatch.chdir(repo)
    p1 = capture_provenance(config={"lr": 0.1, "bs": 32}, data=[str(repo / "train.py")], seeds=0)
    p2 = capture_provenance(config={"bs": 32, "lr": 0.1}, data=[str(repo / "train.py")], seeds=0)
    assert (
        p1.config_hash == p2.config_hash
        and p1.data_hash == p2.data_hash
        and p1.env_hash == p2.env_hash
    )
    assert p1.seeds["seed"] == 0 and p1.git.commit == p2.git.commit
    assert capture_provenance(config={"lr": 0.2, "bs": 32}).config_hash != p1.config_hash
    assert p1.command[0] == sys.executable
