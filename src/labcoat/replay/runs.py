"""Reading a recorded run back: its manifest, its log and its checkpoints."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labcoat.errors import InputError
from labcoat.replay.checkpoint import Store

#: where runs go when ``dir`` is not given (else ``<project root>/.labcoat/runs``)
ENV_RUNS = "LABCOAT_RUNS"


def runs_root(dir: str | os.PathLike[str] | None = None) -> Path:
    """Where runs are kept: ``dir``, else ``$LABCOAT_RUNS``, else ``.labcoat/runs`` at the
    project root."""
    if dir is not None:
        return Path(dir)
    configured = os.environ.get(ENV_RUNS, "").strip()
    if configured:
        return Path(configured)
    from labcoat.ledger.store.location import project_root

    return project_root() / ".labcoat" / "runs"


@dataclass
class RecordedRun:
    """One run's directory as ``labcoat.replayable`` left it (possibly killed mid-way)."""

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


def previous_every(root: Path, command: list[str], look: int = 20) -> tuple[int, str] | None:
    """The ``every`` the latest of the last ``look`` runs under ``root`` that recorded
    ``command`` with an automatic ``every`` ended with, and that run's id."""
    for name in reversed(candidates(root)[-look:]):
        try:
            manifest = json.loads((root / name / "run.json").read_text())
        except (OSError, ValueError):
            continue
        if (
            manifest.get("command") == command
            and manifest.get("every") is None
            and manifest.get("every_source") == "measured"
            and manifest.get("status") == "finished"
            and isinstance(manifest.get("every_chosen"), int)
        ):
            return int(manifest["every_chosen"]), name
    return None


def ledger_runs() -> tuple[str | None, dict[str, Path]]:
    """The runs the project's ledger knows (``labcoat.replayable`` notes each one there): its
    location and run id -> directory; (None, {}) when there is no ledger."""
    from labcoat.ledger import Ledger
    from labcoat.ledger.store.location import default_location

    try:
        ledger = Ledger.existing()
        if ledger is None:
            return None, {}
        events = ledger.events(kind="record", source="replay")
    except Exception:  # noqa: BLE001 - an unreadable ledger only means one place less to look
        return None, {}
    found = {}
    for event in events:
        data = getattr(event, "data", None) or {}
        if data.get("run_id") and data.get("dir"):
            found[str(data["run_id"])] = Path(data["dir"])
    return default_location(), found


def _find(run: str, root: Path) -> Path:
    """A run's directory by id, unique id prefix or ``last``: under the runs root, then among
    the ledger's runs; else an InputError that says where it looked."""
    names = candidates(root)
    if run == "last" and names:
        return root / names[-1]
    if (root / run / "run.json").is_file():
        return root / run
    matches = [n for n in names if n.startswith(run)]
    if len(matches) == 1:
        return root / matches[0]
    where, known = ledger_runs()
    if run != "last":
        hits = [d for rid, d in known.items() if rid.startswith(run) and (d / "run.json").is_file()]
        if len(hits) == 1 and not matches:
            return hits[0]
    shown = ", ".join(names[-5:]) or "none yet"
    ambiguous = f" ({len(matches)} runs start with it)" if len(matches) > 1 else ""
    looked = f"under {root} (the runs root: $LABCOAT_RUNS, else .labcoat/runs at the project root "
    looked += f"of {os.getcwd()})"
    looked += (
        f" and among the {len(known)} runs of the ledger {where}" if where else " (no ledger found)"
    )
    raise InputError(
        f"no recorded run {run!r}{ambiguous}: looked {looked}; recent runs there: {shown}; pass "
        "the run's directory (rec.dir), or set LABCOAT_RUNS to the folder that holds it"
    )


def open_run(run: str | os.PathLike[str], *, what: str = "run") -> RecordedRun:
    """A run by directory, by id (or unique prefix) under the runs root or in the project's
    ledger, or ``last``. A run whose recording process died is marked ``killed`` here."""
    from labcoat.replay.status import settle

    path = Path(run)
    if not (path / "run.json").is_file():
        try:
            path = _find(str(run), runs_root())
        except InputError as exc:
            raise InputError(f"{what}: {exc}") from None
    try:
        manifest = json.loads((path / "run.json").read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"{what}: {path}/run.json cannot be read ({exc})") from None
    manifest = settle(path, manifest)
    return RecordedRun(path, manifest, read_log(path / "log.jsonl"))
