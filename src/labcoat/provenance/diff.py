"""What changed between two runs: code, config, data, environment, seeds and command.

It compares two recorded provenances (a :class:`labcoat.ledger.Run` holds one) and their
uncommitted diffs; it needs nothing else from the ledger.

Each difference is one :class:`Change` (section, key, before, after). Nested config and
environment values are compared key by key (``optimizer.lr``, ``packages.numpy``) so a silent
dependency upgrade shows up as one line, not as "the environment hash differs".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

if TYPE_CHECKING:
    from labcoat.ledger.records.runs import Run

SECTIONS = ("code", "config", "data", "env", "seeds", "command")
_MISSING = object()


@dataclass(frozen=True)
class Change:
    section: str
    key: str
    before: Any
    after: Any

    @property
    def kind(self) -> str:
        if self.before is None:
            return "added"
        if self.after is None:
            return "removed"
        return "changed"

    def to_dict(self) -> dict[str, Any]:
        return {
            "section": self.section,
            "key": self.key,
            "kind": self.kind,
            "before": self.before,
            "after": self.after,
        }


@dataclass
class RunDiff:
    run_a: int
    run_b: int
    changes: list[Change] = field(default_factory=list)
    #: ``git diff --stat`` between the two commits, when the repository is at hand
    commit_stat: list[str] = field(default_factory=list)

    @property
    def same(self) -> bool:
        return not self.changes

    #: the sections a diff compares, in the order they are shown
    sections: ClassVar[tuple[str, ...]] = SECTIONS

    def section(self, name: str) -> list[Change]:
        return [c for c in self.changes if c.section == name]

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_a": self.run_a,
            "run_b": self.run_b,
            "same": self.same,
            "changes": {s: [c.to_dict() for c in self.section(s)] for s in SECTIONS},
            "commit_stat": list(self.commit_stat),
        }

    def __rich__(self):
        from labcoat.provenance.view import diff_view

        return diff_view(self)


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested mappings to dotted keys; lists and scalars are leaves."""
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        if not value and prefix:
            out[prefix] = {}
        return out
    return {prefix or "value": value}


def compare(section: str, before: Any, after: Any) -> list[Change]:
    a, b = flatten(before or {}), flatten(after or {})
    changes = []
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key, _MISSING), b.get(key, _MISSING)
        if x != y:
            changes.append(
                Change(section, key, None if x is _MISSING else x, None if y is _MISSING else y)
            )
    return changes


_FILE_HEADER = re.compile(r"^diff --git a/(.*?) b/(.*)$", re.MULTILINE)


def split_patch(patch: str) -> dict[str, str]:
    """A ``git diff`` split into one patch per file path."""
    heads = list(_FILE_HEADER.finditer(patch))
    out = {}
    for i, m in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(patch)
        out[m.group(2)] = patch[m.start() : end]
    return out


def _patch_summary(patch: str) -> str:
    lines = patch.splitlines()
    added = sum(1 for ln in lines if ln.startswith("+") and not ln.startswith("+++"))
    removed = sum(1 for ln in lines if ln.startswith("-") and not ln.startswith("---"))
    return f"+{added} -{removed}"


def _code_changes(a: Run, b: Run, diff_a: str, diff_b: str) -> list[Change]:
    changes = compare(
        "code",
        {"commit": a.git_commit, "branch": a.git_branch, "dirty": a.git_dirty},
        {"commit": b.git_commit, "branch": b.git_branch, "dirty": b.git_dirty},
    )
    if a.diff_hash != b.diff_hash:
        pa, pb = split_patch(diff_a), split_patch(diff_b)
        for path in sorted(set(pa) | set(pb)):
            if pa.get(path) != pb.get(path):
                changes.append(
                    Change(
                        "code",
                        f"uncommitted {path}",
                        _patch_summary(pa[path]) if path in pa else None,
                        _patch_summary(pb[path]) if path in pb else None,
                    )
                )
    return changes


def _data_changes(a: Run, b: Run) -> list[Change]:
    fa = {f.name: f for f in a.data}
    fb = {f.name: f for f in b.data}
    changes = []
    for name in sorted(set(fa) | set(fb)):
        x, y = fa.get(name), fb.get(name)
        if x is not None and y is not None and x.digest == y.digest:
            continue

        def show(f):
            if f is None:
                return None
            extra = f", shape {list(f.shape)}" if f.shape is not None else ""
            return f"{f.digest.split(':')[-1][:12]} ({f.size} bytes{extra}, {f.method})"

        changes.append(Change("data", name, show(x), show(y)))
    return changes


def diff_runs(
    a: Run, b: Run, *, diff_a: str = "", diff_b: str = "", commit_stat: list[str] | None = None
) -> RunDiff:
    """Compare run ``a`` (before) with run ``b`` (after). ``diff_*`` are their uncommitted diffs."""
    changes = _code_changes(a, b, diff_a, diff_b)
    changes += compare("config", a.config, b.config)
    changes += _data_changes(a, b)
    changes += compare("env", a.env, b.env)
    changes += compare("seeds", a.seeds, b.seeds)
    changes += compare(
        "command",
        {"argv": " ".join(a.command), "cwd": a.cwd, "host": a.host},
        {"argv": " ".join(b.command), "cwd": b.cwd, "host": b.host},
    )
    return RunDiff(a.id, b.id, changes, list(commit_stat or []))
