"""Import labcoat modules as a fresh interpreter would, without starting one per module.

One fresh interpreter imports every module named once, which loads the third-party libraries
they need (torch, transformers, sqlite3, ...); then, per entry of the plan, a forked child unloads
every labcoat module and imports the entry's modules in order. A child starts with no labcoat
module loaded, as a fresh interpreter would, without paying for torch and the others again; the
libraries left loaded cannot hide a cycle among labcoat's own modules.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

_FORK_PER_ENTRY = """
import importlib, json, os, sys, traceback
plan = json.loads(sys.argv[1])
for modules in plan.values():
    for m in modules:
        try:
            importlib.import_module(m)
        except BaseException:
            pass  # the child for its entry reports it
results = {}
for entry, modules in plan.items():
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        for m in [m for m in sys.modules if m == "labcoat" or m.startswith("labcoat.")]:
            del sys.modules[m]
        try:
            for m in modules:
                importlib.import_module(m)
            error = ""
        except BaseException:
            error = traceback.format_exc()[-2000:]
        with os.fdopen(write, "w") as fh:
            fh.write(error)
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as fh:
        error = fh.read()
    status = os.waitpid(pid, 0)[1]
    results[entry] = error or ("" if status == 0 else f"the child exited with {status}")
print(json.dumps(results))
"""


def import_fresh(plan: dict[str, list[str]]) -> dict[str, str]:
    """Entry -> the traceback its modules raised when imported in order ('' when none)."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    res = subprocess.run(
        [sys.executable, "-c", _FORK_PER_ENTRY, json.dumps(plan)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout.strip().splitlines()[-1])
