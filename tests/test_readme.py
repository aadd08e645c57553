"""Every Python and bash block in README.md runs as written.

The README is read the way a new user reads it: from a clone, one section at a time. Each `##`
section gets a fresh temporary directory (holding a copy of `examples/`, as the clone's root
does); its Python blocks run first, in order, in one fresh interpreter (so a later block may use
what an earlier one defined), then its bash blocks in order, each under `set -euo pipefail`
with `labcoat` meaning `python -m labcoat`. A command the README expects to fail says so in its
comment (`# exit 1: broken at update`) and must exit with that code. A block that needs a
service or a long run is preceded by `<!-- no-run: why -->` and is skipped; nothing else is.
Sections run two at a time; the whole README takes about a minute of two idle cores.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
NO_RUN = re.compile(r"<!--\s*no-run:\s*(.+?)\s*-->")
EXPECTED_EXIT = re.compile(r"#\s*exit ([0-9]+)(?::|\s*$)")  # "# exit 1: why", not "exit 1 if"
#: a guard against a hung block, not a speed limit: a busy machine runs these several times slower
TIMEOUT_S = 600


@dataclass
class Block:
    lang: str
    code: str
    line: int  # 1-based line of the opening fence
    no_run: str | None = None


@dataclass
class Section:
    title: str
    blocks: list[Block] = field(default_factory=list)


def readme_sections(text: str) -> list[Section]:
    """The `##` sections and their fenced blocks, with any `no-run` mark right above a block."""
    sections = [Section("(top)")]
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("## "):
            sections.append(Section(line[3:].strip()))
        elif line.startswith("```"):
            lang, start = line[3:].strip(), i
            i += 1
            body = []
            while not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            above = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
            mark = NO_RUN.search(above)
            sections[-1].blocks.append(
                Block(lang, "\n".join(body) + "\n", start + 1, mark.group(1) if mark else None)
            )
        i += 1
    return [s for s in sections if any(b.lang in ("python", "bash") for b in s.blocks)]


def expect_exit_codes(code: str) -> str:
    """`cmd  # exit N: ...` becomes `cmd || [ $? -eq N ]`: the documented failure must happen."""
    out = []
    for line in code.splitlines():
        m = EXPECTED_EXIT.search(line)
        if m and int(m.group(1)) != 0:
            cmd = line[: m.start()].rstrip()
            line = f"{cmd} && exit 99 || [ $? -eq {m.group(1)} ]  # {line[m.start() :]}"
        out.append(line)
    return "\n".join(out) + "\n"


SECTIONS = readme_sections(README.read_text(encoding="utf-8"))


def _env(bin_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LABCOAT_")}
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=str(ROOT / "src"),
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        PYTHONHASHSEED="0",
        COLUMNS="120",
    )
    return env


def _run(args: list[str], cwd: Path, env: dict[str, str], what: str) -> str | None:
    """None when the command succeeded, else what to show."""
    try:
        proc = subprocess.run(
            args, check=False, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        return f"{what} ran past {TIMEOUT_S} s"
    if proc.returncode == 0:
        return None
    return (
        f"{what} exited {proc.returncode}\n--- stdout (tail)\n{proc.stdout[-3000:]}"
        f"\n--- stderr (tail)\n{proc.stderr[-3000:]}"
    )


def run_section(section: Section, tmp_path: Path) -> str | None:
    """Run one section's blocks as described above; None when every block ran as written."""
    work = tmp_path / "clone"
    work.mkdir()
    shutil.copytree(ROOT / "examples", work / "examples")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    labcoat = bin_dir / "labcoat"
    labcoat.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m labcoat "$@"\n')
    labcoat.chmod(0o755)
    env = _env(bin_dir)

    runnable = [b for b in section.blocks if b.lang in ("python", "bash") and not b.no_run]
    python = [b for b in runnable if b.lang == "python"]
    if python:
        script = work / "readme_blocks.py"
        script.write_text(
            "".join(f"# README.md line {b.line}\n{b.code}\n" for b in python), encoding="utf-8"
        )
        lines = ", ".join(str(b.line) for b in python)
        failed = _run([sys.executable, str(script)], work, env, f"Python blocks at lines {lines}")
        if failed:
            return failed
    for b in runnable:
        if b.lang == "bash":
            script = work / f"readme_block_{b.line}.sh"
            script.write_text("set -euo pipefail\n" + expect_exit_codes(b.code), encoding="utf-8")
            failed = _run(["bash", str(script)], work, env, f"bash block at line {b.line}")
            if failed:
                return failed
    return None


@pytest.fixture(scope="module")
def section_runs(request, tmp_path_factory) -> dict[str, Future]:
    """The selected sections, started at once on two workers (each section is one process at a
    time, and the sections are independent): the suite waits for the slowest, not the sum."""
    wanted = {
        item.callspec.params["section"].title
        for item in request.session.items
        if item.originalname == "test_readme_section_runs"
    }
    pool = ThreadPoolExecutor(max_workers=2)
    request.addfinalizer(pool.shutdown)
    return {
        s.title: pool.submit(run_section, s, tmp_path_factory.mktemp("readme"))
        for s in SECTIONS
        if s.title in wanted
        and any(b.lang in ("python", "bash") and not b.no_run for b in s.blocks)
    }


def test_readme_has_runnable_blocks():
    runnable = [b for s in SECTIONS for b in s.blocks if b.lang in ("python", "bash")]
    assert len(runnable) >= 10
    assert all(b.no_run is None or len(b.no_run) > 3 for b in runnable)


@pytest.mark.parametrize("section", SECTIONS, ids=[s.title.split(" —")[0] for s in SECTIONS])
def test_readme_section_runs(section: Section, section_runs: dict[str, Future]):
    if section.title not in section_runs:
        pytest.skip(
            "every block is marked no-run: "
            + "; ".join(b.no_run for b in section.blocks if b.no_run)
        )
    failed = section_runs[section.title].result()
    if failed:
        pytest.fail(failed, pytrace=False)
