"""The ledger stores and verifies without the engines that judge: ``labcoat.ledger`` imports,
and its storage tests pass, with ``labcoat.verdicts`` and ``labcoat.stats`` blocked."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCKED = ("labcoat.verdicts", "labcoat.stats")

#: installed in every Python process of the run (the CLI's subprocesses too) by sitecustomize
BLOCKER = textwrap.dedent(
    f"""
    import importlib.abc, sys

    class _Blocked(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if any(name == b or name.startswith(b + ".") for b in {BLOCKED!r}):
                raise ImportError(f"{{name}} is blocked: the ledger must not need it")
            return None

    sys.meta_path.insert(0, _Blocked())
    """
)


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "sitecustomize.py").write_text(BLOCKER)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT / "src"), str(ROOT)]),
    }
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )


def test_the_blocker_blocks_and_the_ledger_imports_and_stores_without_verdicts_or_stats(
    tmp_path,
):
    code = (
        "import labcoat.ledger as L\n"
        "try:\n    import labcoat.stats\nexcept ImportError as e:\n    print('blocked:', e)\n"
        f"with L.Ledger({str(tmp_path / 'l.db')!r}) as book:\n"
        "    e = book.hypothesis('h', predict='p', sealed_plan={'metric': 'accuracy'})\n"
        "    book.record_verdict(e, {'verdict': 'confirmed', 'n': {'paired': 2}}, summary='+1',"
        " plan_revision=1)\n"
        "    print(book.verify().ok, book.plan_status([book.entry(e)]))\n"
    )
    done = _run(tmp_path, "-c", code)
    assert done.returncode == 0, done.stderr
    assert "blocked: labcoat.stats is blocked" in done.stdout
    assert "True {1: 'planned'}" in done.stdout


@pytest.mark.slow  # the whole ledger suite again, in a subprocess
def test_the_ledger_storage_tests_pass_with_verdicts_and_stats_blocked(tmp_path):
    done = _run(
        tmp_path,
        "-m",
        "pytest",
        "-q",
        "-x",
        "-n",
        "0",
        "-p",
        "no:cacheprovider",
        "tests/ledger",
        "--deselect",
        "tests/ledger/test_storage_alone.py",
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
