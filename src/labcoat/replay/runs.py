"""Reading a recorded run back: its manifest, its log and its checkpoints."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labcoat.errors import InputError
from labcoat.replay.checkpoint import Store


@dataclass
class RecordedRun:
    """One run's directory as ``labcoat.record`` left it (possibly killed mid-way)."""

    dir: Path
    manifest: dict[str, Any]
    logs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def id(self) -> str:
        return str(self.manifest.get("run_id") or self.dir.name)

    @property
    def store(self) -> Store:
        return Store(self.dir)

    def checkpoints(self) -> list[int]:
        return self.store.steps()

    @property
    def last_step(self) -> int:
        """The last step the run reached: its last logged step or last checkpoint."""
        steps = [r["step"] for r in self.logs]
        done = int(self.manifest.get("steps") or 0)
        if self.manifest.get("status") == "finished":
            steps.append(max(done - 1, 0))
        elif self.manifest.get("status") == "failed":
            steps.append(done)  # the step that raised: a replay may run into it
        cps = self.checkpoints()
        if cps:
            steps.append(cps[-1])
        return max(steps) if steps else 0

    def names(self) -> set[str]:
        return {k for r in self.logs for k in r["values"]}


def read_log(path: Path) -> list[dict[str, Any]]:
    """``log.jsonl``; a last line cut short by a kill is dropped."""
    out = []
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return out
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            break
    return out


def candidates(root: Path) -> list[str]:
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "run.json").is_file())


def open_run(run: str | os.PathLike[str], *, what: str = "run") -> RecordedRun:
    """A run by directory, by id under the runs root, or ``last``."""
    from labcoat.replay.record import runs_root

    path = Path(run)
    root = runs_root()
    if not (path / "run.json").is_file():
        names = candidates(root)
        if str(run) == "last" and names:
            path = root / names[-1]
        elif (root / str(run) / "run.json").is_file():
            path = root / str(run)
        else:
            matches = [n for n in names if n.startswith(str(run))]
            if len(matches) == 1:
                path = root / matches[0]
            else:
                shown = ", ".join(names[-5:]) or "none yet"
                raise InputError(
                    f"{what}: no recorded run {str(run)!r} (not a directory holding run.json, nor "
                    f"a run id under {root}; recent runs: {shown}); pass the run's directory "
                    "(rec.dir) or its id"
                )
    try:
        manifest = json.loads((path / "run.json").read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"{what}: {path}/run.json cannot be read ({exc})") from None
    return RecordedRun(path, manifest, read_log(path / "log.jsonl"))
