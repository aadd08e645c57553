"""Capture inside a process: the output passes through unchanged, every line gets the step it
was written in, logging records keep their level, a user's sitecustomize still runs, and the
launcher's copies of rank lines are dropped."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from labcoat.logs import classify, sources
from labcoat.logs.api import SITE

CHILD = textwrap.dedent(
    """
    import logging, sys
    import labcoat.logs
    if len(sys.argv) > 1:
        labcoat.logs.install(sys.argv[1])
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    quiet = logging.getLogger("quiet")
    quiet.propagate = False
    quiet.addHandler(logging.NullHandler())
    for step in range(200):
        labcoat.logs.step(step)
        print(f"step {step} a")
        sys.stdout.write(f"step {step} b\\n")
        if step % 50 == 0:
            logging.getLogger("train").warning("checkpoint at step %d", step)
            quiet.error("only in the record, at step %d", step)
    print("progress 50%", end="\\r", flush=True)
    print("no newline at the end", end="")
    """
)


def _run(env, *args):
    return subprocess.run(
        [sys.executable, "-c", CHILD, *args], env=env, capture_output=True, timeout=60
    )


def _records(folder):
    found = sources.discover(folder)
    return [line for line in sources.lines(found)]


def test_output_passes_through_unchanged_and_lines_carry_their_exact_step(tmp_path, subprocess_env):
    env = {**subprocess_env, "PYTHONUNBUFFERED": "1"}
    plain = _run(env)
    captured = _run(env, str(tmp_path))
    assert captured.stdout == plain.stdout and captured.stderr == plain.stderr
    lines = _records(tmp_path)
    steps = [(line.text, line.step) for line in lines if line.text.startswith("step ")]
    assert len(steps) == 400
    assert all(text.split()[1] == str(step) for text, step in steps), steps[:5]
    warning = [line for line in lines if "checkpoint at step 50" in line.text]
    assert warning[0].level == "WARNING" and warning[0].logger == "train"
    assert warning[0].step == 50
    alone = [line for line in lines if line.stream == "log"]  # no handler printed these
    assert [line.text for line in alone][:1] == ["only in the record, at step 0"]
    assert alone[0].level == "ERROR" and alone[0].step == 0
    printed = [line.text for line in lines if line.stream == "stdout"]
    assert printed[-1] == "progress 50%\rno newline at the end"  # a \r is part of a line
    times = [line.time for line in lines]
    assert times == sorted(times)


def test_a_users_own_sitecustomize_still_runs(tmp_path, subprocess_env):
    own = tmp_path / "own"
    own.mkdir()
    (own / "sitecustomize.py").write_text("import os\nos.environ['USER_SITE_RAN'] = '1'\n")
    env = {
        **subprocess_env,
        "RANK": "3",
        "LABCOAT_LOGS_DIR": str(tmp_path / "logs"),
        "PYTHONPATH": os.pathsep.join([SITE, str(own), subprocess_env["PYTHONPATH"]]),
    }
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.environ.get('USER_SITE_RAN'))"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout == "1\n" and done.stderr == ""
    (line,) = _records(tmp_path / "logs")
    assert (line.rank, line.text) == (3, "1")


def test_the_launchers_copy_of_a_rank_line_is_dropped(tmp_path):
    rank = tmp_path / "p10.log"
    rank.write_text(
        '#labcoat-logs 1 {"rank": 0, "pid": 10, "ppid": 1}\n'
        "100.0\tstdout\t\t0\t\tstep 0 loss 1.0\n100.5\tstdout\t\t1\t\tstep 1 loss 0.5\n"
    )
    (tmp_path / sources.LAUNCHER).write_text(
        "100.1\tstdout\t\t\t\tstep 0 loss 1.0\n"
        "100.6\tstdout\t\t\t\tstep 1 loss 0.5\n"
        "101.0\tstderr\t\t\t\tlauncher: ERROR: rank 0 failed\n"
        "130.0\tstdout\t\t\t\tstep 0 loss 1.0\n"  # long after: the launcher's own line
    )
    kept = [(line.rank, line.text) for line in _records(tmp_path)]
    assert kept == [
        (0, "step 0 loss 1.0"),
        (0, "step 1 loss 0.5"),
        (None, "launcher: ERROR: rank 0 failed"),
        (None, "step 0 loss 1.0"),
    ]


@pytest.mark.parametrize(
    "text, kinds",
    [
        ("timeout set to 30 s", []),
        ("clip_grad_norm max_norm=inf", []),
        ("running inference on 8 GPUs", []),
        ("INFO: information about the dataset", []),
        ("nan_to_num applied to the inputs", []),
        ("step 8 loss nan", ["nonfinite"]),
        ("grad_norm: inf, skipping", ["nonfinite"]),
        ("loss tensor(nan, grad_fn=<MseLossBackward0>)", ["nonfinite"]),
        ("RuntimeError: Timed out waiting 8000ms for recv operation", ["timeout"]),
        ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", ["oom"]),
        ("ERROR:root:could not open the checkpoint", ["error"]),
    ],
)
def test_signals_ask_for_the_shape_an_error_has_not_a_word_it_uses(text, kinds):
    assert classify.signals(text, classify.level_of(text)) == kinds
