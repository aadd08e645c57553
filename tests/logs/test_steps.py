"""Steps from what labcoat already knows: ``labcoat.record``'s loops (the step that begins) and
``labcoat.watch``'s ``observe()`` (the step it last saw), unless the script calls
``labcoat.logs.step`` itself."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from labcoat.logs import sources

pytest.importorskip("drain3")
torch = pytest.importorskip("torch")

SCRIPT = textwrap.dedent(
    """
    import sys
    import torch
    import labcoat, labcoat.logs
    labcoat.logs.install(sys.argv[1])
    how, own = sys.argv[2], sys.argv[3] == "own"
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = [torch.randn(8, 4) for _ in range(6)]

    def train(i, x):
        if own:
            labcoat.logs.step(100 + i)
        print(f"forward of batch {i}", flush=True)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    if how == "record":
        with labcoat.replayable(model=model, optimizer=opt, every=1000, ledger=False) as rec:
            for i, x in rec.enumerate("step", data):
                train(i, x)
    else:
        with labcoat.watch(model, opt, ledger=False) as w:
            for i, x in enumerate(data):
                loss = train(i, x)
                w.observe(i, loss)
                print(f"observed batch {i}", flush=True)
    """
)


def _steps(tmp_path, subprocess_env, how, own="no"):
    folder = tmp_path / "logs"
    env = {**subprocess_env, "LABCOAT_RUNS": str(tmp_path / "runs")}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(folder), how, own],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = sources.lines(sources.discover(folder))
    return {line.text: line.step for line in lines if "batch" in line.text}


def test_a_recorded_loop_gives_each_line_the_step_it_is_in(tmp_path, subprocess_env):
    steps = _steps(tmp_path, subprocess_env, "record")
    assert {f"forward of batch {i}": i for i in range(6)}.items() <= steps.items()


def test_a_watched_loop_gives_each_line_the_step_last_observed(tmp_path, subprocess_env):
    steps = _steps(tmp_path, subprocess_env, "watch")
    assert all(steps[f"observed batch {i}"] == i for i in range(6)), steps
    assert steps["forward of batch 0"] is None and steps["forward of batch 3"] == 2


def test_a_more_exact_teller_of_the_step_wins_for_the_rest_of_the_process(monkeypatch):
    """watch < record < the user's own step(): in this process, with the tellers' state put back
    after (the subprocess tests show the same through a captured script)."""
    from labcoat.logs import capture, step

    for name, value in (("_STEP", None), ("_TOLD_BY", 0), ("_capture", None)):
        monkeypatch.setattr(capture, name, value)
    capture.note_step(3, capture.WATCH)
    assert capture.current_step() == 3
    capture.note_step(5, capture.RECORD)
    capture.note_step(6, capture.WATCH)  # less exact than the loop that spoke: ignored
    assert capture.current_step() == 5
    step(100)
    capture.note_step(7, capture.RECORD)
    assert capture.current_step() == 100


@pytest.mark.slow  # a third interpreter with torch (seconds); the precedence is tested above
def test_the_scripts_own_step_call_wins(tmp_path, subprocess_env):
    steps = _steps(tmp_path, subprocess_env, "watch", "own")
    assert all(steps[f"observed batch {i}"] == 100 + i for i in range(6)), steps
