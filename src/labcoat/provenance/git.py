"""The state of the code a run used: commit, branch, dirty flag and the uncommitted diff.

The diff is taken against HEAD and includes untracked (not ignored) files, by marking them
intent-to-add in a throwaway copy of the index: the user's own index is never touched. Large
untracked files (data, checkpoints) are left out and named instead, so the diff stays a diff.
Git is run as a subprocess; without git or outside a repository there is simply no state.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

#: untracked files larger than this are named, not copied into the diff
MAX_UNTRACKED_FILE_BYTES = 1 << 20
#: and at most this much untracked content in total
MAX_UNTRACKED_TOTAL_BYTES = 16 << 20
GIT_TIMEOUT_S = 60


@dataclass(frozen=True)
class GitState:
    root: str
    commit: str | None  # None before the first commit
    branch: str | None  # None on a detached HEAD
    dirty: bool
    diff: bytes = b""  # uncommitted changes, untracked files included (git diff --binary)
    untracked_skipped: tuple[str, ...] = field(default=())


def _git(
    args: list[str], cwd: str | os.PathLike[str], *, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    base = dict(os.environ)
    base.update({"GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"})
    base.update(env or {})
    return subprocess.run(
        ["git", *args], cwd=cwd, env=base, capture_output=True, timeout=GIT_TIMEOUT_S, check=False
    )


def _out(proc: subprocess.CompletedProcess) -> str | None:
    return proc.stdout.decode(errors="replace").strip() if proc.returncode == 0 else None


def git_state(
    cwd: str | os.PathLike[str] | None = None, *, exclude: Iterable[str | os.PathLike[str]] = ()
) -> GitState | None:
    """The repository state around ``cwd``; None when git is absent or this is not a repository.

    Files in ``exclude`` (the ledger's own database, which changes with every run) are never
    part of the state, tracked or not: they neither make the tree dirty nor enter the diff.
    """
    cwd = os.fspath(cwd or os.getcwd())
    if shutil.which("git") is None:
        return None
    root = _out(_git(["rev-parse", "--show-toplevel"], cwd))
    if not root:
        return None
    commit = _out(_git(["rev-parse", "--verify", "-q", "HEAD"], root)) or None
    branch = _out(_git(["symbolic-ref", "--short", "-q", "HEAD"], root)) or None
    excluded = {os.path.realpath(p) for p in exclude}
    untracked, skipped = _untracked(root, excluded)
    inside = [os.path.relpath(p, os.path.realpath(root)) for p in sorted(excluded)]
    pathspec = [f":(top,exclude,literal){p}" for p in inside if not p.startswith("..")]
    diff = _diff(root, commit, untracked, pathspec)
    return GitState(
        root=root,
        commit=commit,
        branch=branch,
        dirty=bool(diff) or bool(skipped),
        diff=diff,
        untracked_skipped=tuple(skipped),
    )


def _untracked(root: str, exclude: set[str]) -> tuple[list[str], list[str]]:
    proc = _git(["ls-files", "--others", "--exclude-standard", "-z"], root)
    names = (
        [n for n in proc.stdout.decode(errors="surrogateescape").split("\0") if n]
        if proc.returncode == 0
        else []
    )
    names = [n for n in names if os.path.realpath(os.path.join(root, n)) not in exclude]
    kept, skipped, total = [], [], 0
    for name in sorted(names):
        try:
            size = (Path(root) / name).stat().st_size
        except OSError:
            continue
        if size > MAX_UNTRACKED_FILE_BYTES or total + size > MAX_UNTRACKED_TOTAL_BYTES:
            skipped.append(name)
        else:
            kept.append(name)
            total += size
    return kept, skipped


def _diff(root: str, commit: str | None, untracked: list[str], excluded: list[str]) -> bytes:
    base = commit or _out(_git(["hash-object", "-t", "tree", os.devnull], root))
    if base is None:
        return b""
    index = _out(_git(["rev-parse", "--git-path", "index"], root))  # relative to root, or absolute
    with tempfile.TemporaryDirectory(prefix="labcoat-git-") as tmp:
        temp_index = os.path.join(tmp, "index")
        if index and os.path.exists(os.path.join(root, index)):
            # with its mtime: git reads the content of a file whose entry is as new as the index
            # ("racily clean"); a copy stamped now would trust that entry's stale size and mtime
            shutil.copy2(os.path.join(root, index), temp_index)
        env = {"GIT_INDEX_FILE": temp_index}
        if untracked:
            subprocess.run(
                ["git", "add", "--intent-to-add", "--pathspec-from-file=-", "--pathspec-file-nul"],
                cwd=root,
                env={**os.environ, **env, "GIT_OPTIONAL_LOCKS": "0"},
                input="\0".join(untracked).encode(errors="surrogateescape"),
                capture_output=True,
                timeout=GIT_TIMEOUT_S,
                check=False,
            )
        args = ["diff", base, "--binary", "--no-color", "--no-ext-diff", "--no-textconv"]
        proc = _git([*args, "--", ":(top)", *excluded] if excluded else args, root, env=env)
    return proc.stdout if proc.returncode == 0 else b""


def commit_stat(root: str | None, before: str | None, after: str | None) -> list[str]:
    """``git diff --stat before after`` lines, or [] without the repository or a commit."""
    if not root or not before or not after or before == after or shutil.which("git") is None:
        return []
    if not os.path.isdir(root):
        return []
    proc = _git(["diff", "--stat", "--no-color", before, after], root)
    if proc.returncode != 0:
        return []
    return [
        line.rstrip() for line in proc.stdout.decode(errors="replace").splitlines() if line.strip()
    ]
