"""``labcoat logs`` from the shell: the --why JSON, exit codes, filters, the folded view, folders
of per-rank files and bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.logs.conftest import PROC_JOB

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")

WHY_KEYS = {
    "run",
    "ranks",
    "lines",
    "templates",
    "first",
    "consequences",
    "silent_ranks",
    "changes",
    "findings",
    "ok",
}


def test_why_json_has_the_documented_shape_and_exit_codes(job, cli):
    ledger, _ = job("raise")
    done = cli("logs", "last", "--why", "--json", "--ledger", ledger)
    assert done.code == 1
    data = json.loads(done.out)
    assert set(data) == WHY_KEYS | {"kind", "version"}  # every result says what it is
    assert set(data["first"]) == {"rank", "node", "step", "time", "line", "template", "why"}
    assert set(data["consequences"][0]) == {"rank", "step", "line", "because"}
    assert data["ok"] is False and data["ranks"] == [0, 1]
    checks = {f["check"] for f in data["findings"]}
    assert {"logs.first_error", "logs.silent_rank", "logs.rate_change"} <= checks
    # the findings are in the ledger with the run, queryable like every other engine's
    found = cli("ledger", "findings", "--run", "1", "--json", "--ledger", ledger)
    assert any(
        f["check"] == "logs.first_error" and f["status"] == "fail"
        for f in json.loads(found.out)["findings"]
    )


def test_records_filter_by_rank_level_step_and_grep_and_sql_sees_them(job, cli):
    ledger, _ = job("raise")
    done = cli(
        "logs", "1", "--json", "--rank", "1", "--step", "3..5", "--grep", "loss", "--ledger", ledger
    )
    assert done.code == 0
    records = json.loads(done.out)["records"]
    assert [r["step"] for r in records] == [3, 4, 5]
    assert {r["rank"] for r in records} == {1} and all("loss" in r["text"] for r in records)
    assert records[0]["template"] == "step <*> loss <*>"
    errors = json.loads(cli("logs", "1", "--json", "--level", "error", "--ledger", ledger).out)
    assert errors["records"] and all(r["level"] in ("ERROR", "CRITICAL") for r in errors["records"])
    assert errors["records"][0]["text"].startswith("Traceback")
    sql = cli(
        "ledger",
        "sql",
        "SELECT rank, count(*) AS n FROM log_lines WHERE run_id = 1 "
        "AND rank IS NOT NULL GROUP BY rank",
        "--json",
        "--ledger",
        ledger,
    )
    rows = json.loads(sql.out)["rows"]
    assert len(rows) == 2


def test_the_folded_view_of_a_healthy_8_rank_run_is_ten_times_shorter(job, cli):
    ledger, done = job("healthy", 8)
    assert done.returncode == 0, done.stderr
    raw = cli("logs", "last", "--ledger", ledger).out.splitlines()
    folded = cli("logs", "last", "--folded", "--ledger", ledger).out.splitlines()
    assert len(raw) >= 10 * len(folded), "\n".join(folded)
    assert any("[ranks 0-7]" in line and "step <*> loss <*>" in line for line in folded)
    banner = [line for line in folded if "toy trainer" in line]
    assert banner and "[ranks 0-7]" in banner[0]
    groups = json.loads(cli("logs", "last", "--folded", "--json", "--ledger", ledger).out)
    steps = next(g for g in groups["groups"] if g["template"] == "step <*> loss <*>")
    assert steps["count"] == 8 * 16 and steps["ranks"] == "ranks 0-7"


def test_a_folder_of_capture_files_is_read_without_labcoat_run(tmp_path, subprocess_env, cli):
    """The hook and ``labcoat.logs.install`` write the same files ``labcoat logs FOLDER``
    reads; here the launcher runs on its own, with the capture folder in its environment."""
    from labcoat.logs.api import SITE

    folder = tmp_path / "logs"
    env = {
        **subprocess_env,
        "LABCOAT_LOGS_DIR": str(folder),
        "PYTHONPATH": SITE + os.pathsep + subprocess_env["PYTHONPATH"],
    }
    subprocess.run(
        [sys.executable, str(PROC_JOB), "raise"], env=env, capture_output=True, timeout=60
    )
    assert len(list(folder.glob("p*.log"))) == 2
    done = cli("logs", str(folder), "--why", "--json")
    assert done.code == 1, done.err
    first = json.loads(done.out)["first"]
    assert (first["rank"], first["step"]) == (1, 8)


def test_torchrun_log_dir_files_are_read_by_rank(tmp_path, cli):
    """torchrun --log-dir's layout (attempt_N/<local rank>/stderr.log): lines without times,
    read by rank; the first error is still named."""
    for rank in (0, 1):
        d = tmp_path / "run_x" / "attempt_0" / str(rank)
        d.mkdir(parents=True)
        lines = [f"step {s} loss {1 / (s + 1):.4f}" for s in range(5)]
        if rank == 1:
            lines += [
                "Traceback (most recent call last):",
                '  File "t.py", line 1, in <module>',
                "ValueError: planted",
            ]
        (d / "stderr.log").write_text("\n".join(lines) + "\n")
        (d / "stdout.log").write_text("")
    done = cli("logs", str(tmp_path), "--why", "--json")
    data = json.loads(done.out)
    assert done.code == 1 and data["first"]["rank"] == 1
    assert data["first"]["line"] == "ValueError: planted"
    assert {f["check"]: f["status"] for f in data["findings"]}["logs.silent_rank"] == "skip"


BAD = [
    (["logs", "7", "--why"], "there is no run 7"),
    (["logs", "nonsense"], "RUN must be a run id"),
    (["logs", "1", "--level", "loud"], "--level: expected one of"),
    (["logs", "1", "--step", "a..b"], "--step: expected A..B"),
    (["logs", "1", "--grep", "("], "--grep"),
]


def test_bad_input_is_one_line_and_exit_2(job, cli, tmp_path):
    ledger, _ = job("healthy")
    for args, says in BAD:
        done = cli(*args, "--ledger", ledger)
        assert done.code == 2 and says in done.err and "Traceback" not in done.err, args
    missing = cli("logs", "last", "--ledger", tmp_path / "none.db")
    assert missing.code == 2 and "no ledger here yet" in missing.err
