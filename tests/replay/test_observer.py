"""A recorder is an observer: a script logs under ``labcoat.replayable`` bit for bit what it logs
bare, and a replay from a mid-run checkpoint reproduces the recording (tests/replay/eight.py).

The fast tests run each script bare and recorded in this process, and replay in this process
too (the plan ``labcoat replay`` would hand the script, set by hand); the slow test runs the
eight scripts as users do, in subprocesses, and replays them with ``labcoat replay``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import labcoat
from labcoat.replay.record import ENV_REPLAY, ReplayStop
from labcoat.replay.runs import open_run
from tests.replay.eight import EIGHT, EVERY, SCRIPTS, train
from tests.replay.scripts import cli, env

ROOT = Path(__file__).resolve().parents[2]


def _recorder(runs: Path, every: int = EVERY):
    def make(**objs):
        return labcoat.replayable(**objs, every=every, dir=runs, ledger=False, keep=None)

    return make


def _record(name: str, runs: Path, every: int = EVERY):
    """(what the recorded script logged, its run directory)."""
    before = set(runs.iterdir()) if runs.exists() else set()
    logged = train(name, _recorder(runs, every))
    (run,) = [p for p in runs.iterdir() if p not in before and p.is_dir()]
    return logged, run


def _replay_in_process(name: str, run: Path, checkpoint: int, to: int, tmp: Path, monkeypatch):
    """Replay ``run`` from ``checkpoint`` through ``to`` in this process: the values logged."""
    out, plan = tmp / "out.json", tmp / "plan.json"
    plan.write_text(
        json.dumps(
            {"run_dir": str(run), "checkpoint": checkpoint, "to": to, "probes": [], "out": str(out)}
        )
    )
    monkeypatch.setenv(ENV_REPLAY, str(plan))
    with pytest.raises(ReplayStop):
        train(name, _recorder(tmp / "unused"))
    monkeypatch.delenv(ENV_REPLAY)
    result = json.loads(out.read_text())
    assert result["error"] is None, result["error"]
    return [[r["step"], k, v] for r in result["logs"] for k, v in r["values"].items()]


def _mid(run: Path) -> int:
    """A checkpoint inside an epoch, not its first batch (the hard case)."""
    recorded = open_run(run)
    per_epoch = recorded.manifest["loops"]["step"]["length"]
    inside = [c for c in recorded.checkpoints() if c % per_epoch not in (0,) and c > per_epoch]
    return (inside or [c for c in recorded.checkpoints() if c > 0])[0]


FAST = ["shuffle", "dropout", "augment0", "bf16", "steplr", "accumulate"]


@pytest.mark.parametrize("name", FAST + ["augment2"])
def test_a_recorded_script_logs_what_the_bare_script_logs(name, tmp_path):
    bare = train(name)
    logged, _ = _record(name, tmp_path / "runs")
    assert logged == bare  # bit for bit: the floats compare exactly


def test_the_twin_an_unseeded_script_differs_from_itself_bare(tmp_path):
    """The equality above can fail: a script drawing from an unseeded ``random`` logs other
    values on each run, bare as recorded."""
    assert train("unseeded") != train("unseeded")


@pytest.mark.parametrize("name", FAST + ["epochs", "unseeded"])
def test_a_replay_from_a_mid_epoch_checkpoint_reproduces_the_recording(name, tmp_path, monkeypatch):
    logged, run = _record(name, tmp_path / "runs")
    start = _mid(run)
    end = min(start + 5, max(s for s, _, _ in logged))
    replayed = _replay_in_process(name, run, start, end, tmp_path, monkeypatch)
    window = [r for r in logged if start <= r[0] <= end]
    assert replayed == window and len(window) >= 4


@pytest.mark.parametrize("planted", [False, True])
def test_each_worker_starts_a_replay_from_its_recorded_state(planted, tmp_path, monkeypatch):
    """Two workers, a checkpoint after 5 batches of the second epoch: batches 4..5 are skipped
    unloaded, batch 4 is fetched and dropped (so batch 5 goes to worker 1 as recorded), and
    each worker's first batch starts from its recorded states. The planted twin drops those
    states: its workers load from their fresh seeds and the replay differs."""
    from labcoat.replay import workers

    logged, run = _record("epochs", tmp_path / "runs", every=13)
    assert open_run(run).checkpoints()[1] == 13  # batch 5 of epoch 1 (8 batches an epoch)
    if planted:
        real = workers.replay_plan
        monkeypatch.setattr(workers, "replay_plan", lambda *a: {**real(*a), "start": {}})
    replayed = _replay_in_process("epochs", run, 13, 15, tmp_path, monkeypatch)
    window = [r for r in logged if 13 <= r[0] <= 15]
    assert (replayed != window) if planted else (replayed == window)


@pytest.mark.parametrize("checkpoint", [8, 12, 13])
def test_persistent_workers_replay_from_a_later_epoch(checkpoint, tmp_path, monkeypatch):
    """Persistent workers keep their RNGs across epochs and draw no new base_seed: a replay
    from the end of the first epoch (8), the second's middle (12) or an odd batch (13) starts
    each new worker from the state it had then, and draws the order as the reset iterator did."""
    logged, run = _record("persistent", tmp_path / "runs", every=1)
    assert logged == train("persistent")
    replayed = _replay_in_process(
        "persistent", run, checkpoint, checkpoint + 3, tmp_path, monkeypatch
    )
    assert replayed == [r for r in logged if checkpoint <= r[0] <= checkpoint + 3]


def test_the_twin_a_persistent_replay_that_draws_a_new_base_seed_differs(tmp_path, monkeypatch):
    """Planted: the replay's new iterator draws base_seed and the order from where that left
    the generator (no re-entry), as a reset iterator never did: the order differs."""
    from labcoat.replay import workers

    logged, run = _record("persistent", tmp_path / "runs", every=12)
    real = workers.replay_plan
    monkeypatch.setattr(workers, "replay_plan", lambda *a: {**real(*a), "reenter": None})
    replayed = _replay_in_process("persistent", run, 12, 15, tmp_path, monkeypatch)
    assert replayed != [r for r in logged if 12 <= r[0] <= 15]


def test_a_persistent_replay_leaves_no_workers_running(tmp_path, monkeypatch):
    """A replay whose new iterator re-entered the loop's RNGs (a persistent loader's later
    epoch) frees its loader as the bare script does, when the script returns: its workers have
    exited without a garbage collection. Kept in a reference cycle instead, the loader waits
    for the collector, whose shutdown of its workers waits out a 5 s join for each."""
    import gc
    import multiprocessing

    _, run = _record("persistent", tmp_path / "runs", every=12)
    before = {p.pid for p in multiprocessing.active_children()}
    gc.disable()
    try:
        _replay_in_process("persistent", run, 12, 15, tmp_path, monkeypatch)
        left = [p for p in multiprocessing.active_children() if p.pid not in before]
    finally:
        gc.enable()
    assert left == []


def test_worker_states_travel_with_the_batches_and_a_checkpoint_holds_them(tmp_path):
    """With two workers each checkpoint inside an epoch holds both workers' RNG states after
    their last batches; the batches are plain again when the training gets them."""
    from labcoat.replay.checkpoint import Store

    logged, run = _record("epochs", tmp_path / "runs")
    state = Store(run).load(_mid(run))
    workers = state["positions"][1]["workers"]
    assert workers["n"] == 2 and sorted(workers["slots"]) == [0, 1]
    assert all(last is not None for _, last in workers["slots"].values())
    assert all(isinstance(v, float) for _, _, v in logged)


def test_an_iterable_drawing_from_the_main_process_rngs_is_named_once(tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bare_equal = train("iterable0", _recorder(tmp_path / "runs")) == train("iterable0")
    notes = [str(w.message) for w in caught if "draws from the global random" in str(w.message)]
    assert bare_equal  # recording it changes nothing
    assert len(notes) == 1 and "IterableDataset Stream" in notes[0] and "'step'" in notes[0]


def test_the_twin_a_dataset_loaded_by_its_sampler_draws_no_note(tmp_path):
    """A map-style dataset augmenting in the main process, and a generator drawing its
    batches from torch's RNG, replay exactly (skipped items are not loaded, or hold no
    state): no note."""
    import torch

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train("augment0", _recorder(tmp_path / "runs"))
        model = torch.nn.Linear(2, 1)
        with labcoat.replayable(model=model, every=2, dir=tmp_path / "runs", ledger=False) as rec:
            for x in rec.loop("step", (torch.randn(3, 2) for _ in range(4))):
                rec.log(y=model(x).sum())
    assert not [w for w in caught if "draws from the global random" in str(w.message)]


def _script_run(name: str, out: Path, tmp: Path, *flags: str) -> list:
    proc = subprocess.run(
        [sys.executable, "-m", "tests.replay.eight", name, str(out), *flags],
        cwd=ROOT,
        env={**env(tmp), "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(out.read_text())


@pytest.mark.slow
def test_the_eight_scripts_bare_and_recorded_in_subprocesses(tmp_path):
    """The check of issue 33: each of the eight scripts run bare and recorded as users run
    them; recorded = bare bit for bit, and ``labcoat replay`` from a mid-run checkpoint exact."""
    table = []
    for name in EIGHT:
        bare = _script_run(name, tmp_path / f"{name}.bare.json", tmp_path)
        logged = _script_run(name, tmp_path / f"{name}.rec.json", tmp_path, "--record")
        runs = sorted((tmp_path / "runs").iterdir(), key=lambda p: p.name)
        run = [p for p in runs if p.is_dir()][-1]
        start = _mid(run)
        code, out, err = cli(tmp_path, "replay", str(run), "--from", str(start), "--json")
        assert code == 0, err
        table.append((name, logged == bare, out["first_mismatch"] is None, len(out["steps"])))
    print("\nscript      recorded=bare  replay exact  steps replayed")
    for row in table:
        print(f"{row[0]:<11} {row[1]!s:<14} {row[2]!s:<13} {row[3]}")
    assert all(eq and exact for _, eq, exact, _ in table), table
    assert set(SCRIPTS) > set(EIGHT)
