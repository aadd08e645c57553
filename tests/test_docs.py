"""Every Python and bash block in README.md and docs/*.md runs as written.

A document is read the way a new user reads it: from a clone. Each document gets a fresh
temporary directory (holding a copy of `examples/`, as the clone's root does); its Python blocks
run first, in order, in one fresh interpreter (so a later block may use what an earlier one
defined), then its bash blocks in order, in one bash under `set -euo pipefail`, with `labcoat`
meaning `python -m labcoat` (run by tests/docs_server.py, which forks each command from one
process that imported labcoat, torch and scikit-learn once, where the system allows). A
command a document expects to fail says so in its comment (`# exit 1: broken at update`) and
must exit with that code.

Not executed: a block whose fence says so (```python no-run, ```bash no-run), or one right
below an HTML comment `<!-- no-run: why -->`; a block that reads `../shared` when the shared
data is not beside the clone (a user's clone lacks it). Documents run two at a time, so the
suite waits for the slowest document, not for the sum.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHARED = ROOT.parent / "shared"
NO_RUN_COMMENT = re.compile(r"<!--\s*no-run:\s*(.+?)\s*-->")
EXPECTED_EXIT = re.compile(r"#\s*exit ([0-9]+)(?::|\s*$)")  # "# exit 1: why", not "exit 1 if"
RUNNABLE = ("python", "bash")
#: a guard against a hung block, not a speed limit: a busy machine runs these several times slower
TIMEOUT_S = 600


@dataclass
class Block:
    lang: str
    code: str
    line: int  # 1-based line of the opening fence
    skip: str | None = None  # why it is not executed, or None


@dataclass
class Document:
    path: Path
    blocks: list[Block] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.path.relative_to(ROOT).as_posix()

    def runnable(self, lang: str) -> list[Block]:
        return [b for b in self.blocks if b.lang == lang and b.skip is None]


def parse(path: Path, shared_present: bool = SHARED.is_dir()) -> Document:
    """A document's fenced blocks: language, code, line, and why one is not executed."""
    doc = Document(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            info, start = lines[i][3:].split(), i
            lang, flags = (info[0] if info else ""), info[1:]
            i += 1
            body = []
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            code = "\n".join(body) + "\n"
            above = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
            comment = NO_RUN_COMMENT.search(above)
            skip = None
            if "no-run" in flags:
                skip = "fenced no-run"
            elif comment:
                skip = comment.group(1)
            elif "../shared" in code and not shared_present:
                skip = "needs ../shared, which is not beside this clone"
            doc.blocks.append(Block(lang, code, start + 1, skip))
        i += 1
    return doc


def expect_exit_codes(code: str) -> str:
    """`cmd  # exit N: ...` becomes `cmd && exit 99 || [ $? -eq N ]`: the documented failure
    must happen."""
    out = []
    for line in code.splitlines():
        m = EXPECTED_EXIT.search(line)
        if m and int(m.group(1)) != 0:
            cmd = line[: m.start()].rstrip()
            line = f"{cmd} && exit 99 || [ $? -eq {m.group(1)} ]  # {line[m.start() :]}"
        out.append(line)
    return "\n".join(out) + "\n"


DOCS = [parse(p) for p in DOCUMENTS]


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


def start_server(tmp_path: Path) -> tuple[subprocess.Popen | None, Path | None]:
    """tests/docs_server.py on a socket in ``tmp_path``, or (None, None) where it cannot run."""
    if sys.platform != "linux" or not hasattr(socket, "send_fds"):
        return None, None
    path = tmp_path / "labcoat.sock"
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "docs_server.py"), str(path)],
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        text=True,
    )
    if proc.stdout.readline().strip() != "ready":
        proc.kill()
        return None, None
    return proc, path


def _labcoat_command(bin_dir: Path, server: Path | None) -> None:
    labcoat = bin_dir / "labcoat"
    if server is None:
        labcoat.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m labcoat "$@"\n')
    else:
        from tests.docs_server import CLIENT

        labcoat.write_text(f"#!{sys.executable} -IS\n" + CLIENT.format(socket_path=str(server)))
    labcoat.chmod(0o755)


def run_document(doc: Document, tmp_path: Path, server: Path | None = None) -> str | None:
    """Run one document's blocks as described above; None when every block ran as written."""
    work = tmp_path / "clone"
    work.mkdir()
    shutil.copytree(ROOT / "examples", work / "examples")
    if SHARED.is_dir():
        (tmp_path / "shared").symlink_to(SHARED)  # ../shared, as beside a clone
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    _labcoat_command(bin_dir, server)
    env = _env(bin_dir)

    python = doc.runnable("python")
    if python:
        script = work / "doc_blocks.py"
        script.write_text(
            "".join(f"# {doc.name} line {b.line}\n{b.code}\n" for b in python), encoding="utf-8"
        )
        lines = ", ".join(str(b.line) for b in python)
        failed = _run(
            [sys.executable, str(script)], work, env, f"{doc.name}: Python blocks at lines {lines}"
        )
        if failed:
            return failed
    bash = doc.runnable("bash")
    if bash:
        script = work / "doc_blocks.sh"
        script.write_text(
            "set -euo pipefail\n"
            + "".join(
                f"echo '--- {doc.name} line {b.line}' >&2\n{expect_exit_codes(b.code)}"
                for b in bash
            ),
            encoding="utf-8",
        )
        lines = ", ".join(str(b.line) for b in bash)
        failed = _run(["bash", str(script)], work, env, f"{doc.name}: bash blocks at lines {lines}")
        if failed:
            return failed
    return None


@pytest.fixture(scope="module")
def document_runs(request, tmp_path_factory) -> dict[str, Future]:
    """The selected documents, started at once on two workers (each document is one process at
    a time, and the documents are independent)."""
    wanted = {
        item.callspec.params["doc"].name
        for item in request.session.items
        if item.originalname == "test_document_runs"
    }
    pool = ThreadPoolExecutor(max_workers=2)
    request.addfinalizer(pool.shutdown)
    server, path = start_server(tmp_path_factory.mktemp("server"))
    if server is not None:
        request.addfinalizer(server.kill)
    # the slowest documents first, so the two workers finish together
    order = sorted(DOCS, key=lambda d: -sum(len(b.code) for b in d.blocks if b.skip is None))
    return {
        d.name: pool.submit(run_document, d, tmp_path_factory.mktemp("doc"), path)
        for d in order
        if d.name in wanted and (d.runnable("python") or d.runnable("bash"))
    }


def test_documents_have_runnable_blocks():
    runnable = [b for d in DOCS for b in d.blocks if b.lang in RUNNABLE]
    assert len(runnable) >= 10
    assert all(b.skip is None or len(b.skip) > 3 for b in runnable)


def test_a_fence_or_a_comment_or_missing_shared_data_skips_a_block(tmp_path):
    md = tmp_path / "x.md"
    md.write_text(
        "```python no-run\nraise SystemExit(1)\n```\n"
        "<!-- no-run: starts a server -->\n```bash\nexit 1\n```\n"
        "```python\nopen('../shared/data/x')\n```\n"
        "```python\nprint(1)\n```\n",
        encoding="utf-8",
    )
    absent = parse(md, shared_present=False)
    assert [b.skip is None for b in absent.blocks] == [False, False, False, True]
    assert absent.blocks[1].skip == "starts a server"
    assert [b.skip is None for b in parse(md, shared_present=True).blocks][2]


def test_a_documented_exit_code_must_happen():
    script = expect_exit_codes("true  # exit 1: should fail\n")
    assert subprocess.run(["bash", "-c", script], check=False).returncode == 99
    script = expect_exit_codes("false  # exit 1: fails as documented\n")
    assert subprocess.run(["bash", "-c", script], check=False).returncode == 0


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_document_runs(doc: Document, document_runs: dict[str, Future]):
    if doc.name not in document_runs:
        reasons = sorted({b.skip for b in doc.blocks if b.lang in RUNNABLE and b.skip})
        pytest.skip("no block to run" + (": " + "; ".join(reasons) if reasons else ""))
    failed = document_runs[doc.name].result()
    if failed:
        pytest.fail(failed, pytrace=False)
