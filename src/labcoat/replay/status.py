"""A run's status when its process died without saying so: ``running`` becomes ``killed``.

``labcoat.replayable`` writes ``"status": "running"`` when it starts and ``finished`` or ``failed``
when its block ends; a process killed with SIGKILL (or by the OOM killer, or a lost machine)
never writes the end. So the manifest also holds the recording process's identity: host, pid
and the process's start time. The next command that opens the run (:func:`settle`) checks it:
on the same host, a pid that no longer exists, or that now belongs to a process started at
another time (the pid was reused), is a dead recording, and the manifest is rewritten with
``"status": "killed"``. A run recorded on another host is left as it is, since its process cannot
be seen from here (:func:`state` says ``unknown``).
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any

#: what a run whose process died mid-way is marked
KILLED = "killed"


def _started(pid: int) -> str | None:
    """An id of process ``pid``'s start (``/proc/PID/stat``'s start time, in clock ticks since
    boot), ``""`` where the system has no ``/proc`` but the process exists, None if none."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        if Path("/proc/self/stat").exists():
            return None
    except OSError:
        text = ""
    else:
        fields = text[text.rindex(")") + 2 :].split()  # the name in (...) may hold spaces
        return None if fields[0] == "Z" else fields[19]  # a zombie has finished
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return ""


def identity() -> dict[str, Any]:
    """This process, as :func:`state` recognises it later."""
    pid = os.getpid()
    return {"host": socket.gethostname(), "pid": pid, "started": _started(pid)}


def state(process: dict[str, Any] | None) -> str:
    """``alive``, ``dead`` or ``unknown`` (no identity recorded, or another host)."""
    if not process or process.get("host") != socket.gethostname() or not process.get("pid"):
        return "unknown"
    now = _started(int(process["pid"]))
    if now is None:
        return "dead"
    recorded = process.get("started")
    if not now or not recorded:
        return "alive"  # it exists; whether it is the same process cannot be told here
    return "alive" if now == recorded else "dead"  # another start time: the pid was reused


def settle(run_dir: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    """``manifest`` with a dead recording's ``running`` turned into ``killed`` (written back)."""
    if manifest.get("status") != "running" or state(manifest.get("process")) != "dead":
        return manifest
    from labcoat.replay.checkpoint import write_atomic

    settled = {**manifest, "status": KILLED, "status_seen": time.time()}
    try:
        write_atomic(run_dir / "run.json", json.dumps(settled, indent=1).encode())
    except OSError:  # a read-only copy of the run: say it, without writing
        pass
    return settled
