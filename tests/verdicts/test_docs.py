"""docs/verdicts.md: its Python blocks run as written, and its table names every plan field."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from labcoat.verdicts.plan import FIELDS

DOC = Path(__file__).resolve().parents[2] / "docs" / "verdicts.md"


def test_the_python_blocks_run(subprocess_env, tmp_path):
    blocks = re.findall(r"^```python\n(.*?)^```", DOC.read_text(), flags=re.S | re.M)
    assert blocks
    for code in blocks:
        done = subprocess.run(
            [sys.executable, "-c", code],
            cwd=tmp_path,
            env=subprocess_env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert "by the registered plan" in done.stdout


def test_every_plan_field_is_documented():
    text = DOC.read_text()
    assert [name for name in FIELDS if f"`{name}`" not in text] == []
