"""Record a training script, replay it in a subprocess, and check what the issue promises.

Every test here records and replays real scripts (tests/replay/scripts.py) in subprocesses,
so each takes several seconds: all are marked slow.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

from tests.replay.scripts import HINDSIGHT, SCRIPT, cli, env, record, write_script

pytestmark = pytest.mark.slow


def _checkpoints(run):
    return sorted(int(p.stem) for p in (run / "checkpoints").glob("*.json"))


def test_a_mid_epoch_replay_is_bit_identical_with_workers_and_augmentation(tmp_path):
    """Workers + torch/NumPy/random augmentation, dropout, BatchNorm, accumulation, clipping,
    a scheduler, bf16 autocast and two optimizers: replayed from a checkpoint inside the second
    epoch (steps 7..11), alone and as two parallel segments, every value is identical."""
    run = record(tmp_path)
    assert _checkpoints(run) == [0, 3, 6, 9, 12]
    code, out, err = cli(tmp_path, "replay", str(run), "--from", "7", "--to", "11", "--json")
    assert code == 0, err
    assert set(out) >= {"run", "from", "to", "checkpoint", "steps", "first_mismatch", "new"}
    assert (out["from"], out["to"], out["checkpoint"]) == (7, 11, 6)
    assert out["first_mismatch"] is None and out["new"] == {}
    assert [s["step"] for s in out["steps"]] == [7, 8, 9, 10, 11]
    for row in out["steps"]:
        assert row["recorded"] == row["replayed"] and "loss" in row["recorded"]
    code, par, err = cli(tmp_path, "replay", str(run), "--jobs", "2", "--json")
    assert code == 0, err
    assert len(par["segments"]) == 2 and par["first_mismatch"] is None
    assert par["steps"][0]["recorded"] == par["steps"][0]["replayed"]  # n_params: not replayed
    assert par["steps"][-1]["replayed"] == {"lr": 0.005}  # the end of the last epoch, step 12
    assert (tmp_path / "after.txt").read_text() == "x"  # the replay ended with the block


@pytest.mark.ray
def test_segments_replay_as_ray_tasks_on_one_ray(tmp_path):
    """--engine ray runs the segments as tasks of one Ray it starts once (two segments asked
    for at once must not each start a Ray), with the same answer as the process engine."""
    pytest.importorskip("ray")
    run = record(tmp_path)
    code, out, err = cli(tmp_path, "replay", str(run), "--jobs", "2", "--engine", "ray", "--json")
    assert code == 0, err
    assert len(out["segments"]) == 2 and out["first_mismatch"] is None
    code, local, err = cli(tmp_path, "replay", str(run), "--jobs", "2", "--json")
    assert code == 0, err
    assert out["steps"] == local["steps"]


def test_an_iterable_dataset_replays_exactly(tmp_path):
    run = record(tmp_path, "--iterable")
    code, out, err = cli(tmp_path, "replay", str(run), "--from", "4", "--json")
    assert code == 0, err
    assert out["checkpoint"] == 3 and out["first_mismatch"] is None


def test_skipped_batches_are_not_loaded(tmp_path):
    count = tmp_path / "loaded.txt"
    run = record(tmp_path, "--workers", "0", "--count-file", str(count))
    assert int(count.read_text()) == 96  # two epochs of 48 items
    code, out, err = cli(tmp_path, "replay", str(run), "--from", "9", "--to", "10", "--json")
    assert code == 0 and out["first_mismatch"] is None, err
    assert int(count.read_text()) == 16  # batches 3 and 4 of epoch 1; the three before: skipped


def test_a_planted_nan_is_traced_to_its_module(tmp_path):
    run = record(tmp_path, "--nan-step", "5")
    probes = ["--probe", "activations", "--probe", "grads", "--probe", "watch"]
    code, out, err = cli(
        tmp_path, "replay", str(run), "--from", "3", "--to", "6", *probes, "--json"
    )
    assert code == 1, err  # replay.finite fails
    assert out["first_mismatch"] is None  # the NaN itself replays exactly
    assert out["probes"]["activations"]["first_nonfinite"] == {"step": 5, "module": "0.3"}
    assert out["probes"]["grads"]["first_nonfinite"]["step"] == 5
    alerts = out["probes"]["watch"]["alerts"]
    assert any(a["kind"] == "nonfinite" and a["step"] == 5 for a in alerts), alerts
    # the healthy twin: same window, no NaN
    healthy = record(tmp_path)
    window = ["--from", "3", "--to", "6", *probes[:4], "--json"]
    code, out, err = cli(tmp_path, "replay", str(healthy), *window)
    assert code == 0, err
    assert out["probes"]["activations"]["first_nonfinite"] is None
    assert out["probes"]["grads"]["first_nonfinite"] is None
    assert set(out["probes"]["grads"]["steps"]["5"]) >= {"0.0.weight", "1.weight"}
    stats = out["probes"]["activations"]["steps"]["5"]
    assert {"0.0", "0.3", "1"} <= set(stats) and stats["0.3"]["nonfinite"] == 0


def test_hindsight_values_come_back_for_every_replayed_step(tmp_path):
    script = write_script(tmp_path)
    run = record(tmp_path, script=script)
    script.write_text(SCRIPT.replace("# HINDSIGHT", HINDSIGHT))  # the edited script
    code, out, err = cli(tmp_path, "replay", str(run), "--from", "6", "--to", "9", "--json")
    assert code == 0, err
    assert out["first_mismatch"] is None  # adding a log changes nothing else
    steps = [s for s, _ in out["new"]["weight_norm"]]
    assert steps == [6, 7, 8, 9]
    assert all(v > 0 for _, v in out["new"]["weight_norm"])


def test_a_planted_nondeterminism_is_reported_at_its_first_step(tmp_path):
    run = record(tmp_path, "--nondet")
    code, out, err = cli(tmp_path, "replay", str(run), "--from", "6", "--to", "8", "--json")
    assert code == 1, err
    m = out["first_mismatch"]
    assert m["step"] == 6 and m["name"] == "loss" and m["recorded"] != m["replayed"]


def test_a_run_killed_with_sigkill_replays_from_its_last_checkpoint(tmp_path):
    script = write_script(tmp_path)
    proc = subprocess.run(
        [sys.executable, str(script), "--kill-at", "8"],
        cwd=tmp_path,
        env=env(tmp_path),
        capture_output=True,
        timeout=300,
    )
    assert proc.returncode == -signal.SIGKILL
    (run,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    assert json.loads((run / "run.json").read_text())["status"] == "running"  # as it was left
    assert _checkpoints(run) == [0, 3, 6]
    code, out, err = cli(tmp_path, "replay", str(run), "--from", "6", "--to", "7", "--json")
    assert code == 0, err
    assert out["checkpoint"] == 6 and out["first_mismatch"] is None
    assert [s["step"] for s in out["steps"]] == [6, 7]
    # the replay saw its process dead: the run is marked killed, not running forever
    assert json.loads((run / "run.json").read_text())["status"] == "killed"


def test_a_crashed_run_replays_up_to_its_crash(tmp_path):
    run = record(tmp_path, "--raise-at", "8", check=False)
    assert json.loads((run / "run.json").read_text())["status"] == "failed"
    code, out, err = cli(tmp_path, "replay", str(run), "--from", "6", "--json")
    assert code == 0, err
    assert out["raised"] == "FloatingPointError: planted crash (at step 8)"
    assert out["first_mismatch"] is None and [s["step"] for s in out["steps"]] == [6, 7]


def test_diff_finds_a_planted_divergence_and_its_module(tmp_path):
    a = record(tmp_path)
    b = record(tmp_path, "--diverge-at", "7")
    code, out, err = cli(tmp_path, "divergence", str(a), str(b), "--bisect", "--json")
    assert code == 0, err  # the provenance differs (the command), so it only warns
    assert set(out) >= {"provenance", "first_divergence", "bisect"}
    assert out["first_divergence"]["step"] == 7 and out["first_divergence"]["name"] == "loss"
    assert out["bisect"] == {"step": 7, "module": "0.0"}
    assert any(row["section"] == "command" for row in out["provenance"])
    # a run and its rerun: nothing differs
    rerun = record(tmp_path)
    code, out, err = cli(tmp_path, "divergence", str(a), str(rerun), "--json")
    assert code == 0, err
    assert out["first_divergence"] is None and out["provenance"] == []


def test_a_diverging_logged_hyperparameter_is_no_modules_fault(tmp_path):
    """Two runs whose first difference is the logged learning rate (step 0, before any update):
    the bisection replays step 0, finds every module's output the same, and says the value
    itself differs (the healthy twin above names the module a planted weight change hits)."""
    a = record(tmp_path)
    b = record(tmp_path, "--base-lr", "0.02")
    code, out, err = cli(tmp_path, "divergence", str(a), str(b), "--bisect", "--json")
    assert code == 0, err
    assert out["first_divergence"]["name"] == "base_lr" and out["first_divergence"]["step"] == 0
    assert out["bisect"]["module"] is None and out["bisect"]["value"] == "base_lr"
    assert "no module is at fault" in out["bisect"]["note"]


def test_bad_inputs_exit_2_with_one_line(tmp_path):
    script = write_script(tmp_path)
    run = record(tmp_path, "--epochs", "1", script=script)

    def one_line(*args):
        code, _, err = cli(tmp_path, *args)
        assert code == 2, err
        assert len(err.strip().splitlines()) == 1, err
        return err

    assert "no recorded run" in one_line("replay", "nope")
    assert "--to" in one_line("replay", str(run), "--from", "2", "--to", "99")
    assert "--from" in one_line("replay", str(run), "--from", "-1")
    # the script's loop renamed: the replay says what changed
    script.write_text(SCRIPT.replace('rec.enumerate("step"', 'rec.enumerate("batch"'))
    err = one_line("replay", str(run), "--from", "4")
    assert "'step'" in err and "'batch'" in err
    script.write_text(SCRIPT)

    # a checkpoint whose object was changed
    def objects(step):
        return set(json.loads((run / "checkpoints" / f"{step:08d}.json").read_text())["objects"])

    digest = sorted(objects(3) - objects(0))[0]
    obj = run / "objects" / digest[:2] / digest[2:]
    raw = bytearray(obj.read_bytes())
    raw[-1] ^= 0xFF
    obj.write_bytes(bytes(raw))
    assert "fails its hash" in one_line("replay", str(run), "--from", "4")
    code, out, _ = cli(tmp_path, "replay", str(run), "--from", "2", "--to", "2", "--json")
    assert code == 0 and out["first_mismatch"] is None  # checkpoint 0 is intact
