"""The parts of record/replay that run in-process: the store, retention, RNG capture, the
DataLoader's batch skipping, the recorder's files, and the watch's link to a recording."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

import labcoat
from labcoat.errors import InputError
from labcoat.replay import rng
from labcoat.replay.checkpoint import Store, nice_every, retained, snapshot
from labcoat.replay.replay import first_difference, same, segments
from labcoat.replay.runs import RecordedRun, read_log
from labcoat.replay.workers import install

torch.set_num_threads(1)


def _commit(store: Store, step: int, state) -> dict:
    skeleton, refs = snapshot(state)
    return store.commit(step, skeleton, refs, {})


def test_store_round_trip_and_a_frozen_tensor_stored_once(tmp_path):
    store = Store(tmp_path)
    store.create()
    frozen = torch.randn(256, 64)
    first = _commit(store, 0, {"w": frozen, "b": torch.zeros(3), "lr": 0.1})
    second = _commit(store, 5, {"w": frozen, "b": torch.ones(3), "lr": 0.05})
    back = store.load(5)
    assert torch.equal(back["w"], frozen) and torch.equal(back["b"], torch.ones(3))
    assert back["lr"] == 0.05
    # the frozen tensor's 64 KiB are written once: the second checkpoint writes only what changed
    assert first["bytes_written"] > frozen.numel() * 4
    assert second["bytes_written"] < 4096
    assert store.steps() == [0, 5]


def test_a_changed_object_fails_its_hash(tmp_path):
    store = Store(tmp_path)
    store.create()
    manifest = _commit(store, 0, {"w": torch.arange(10.0)})
    store.load(0)  # healthy twin
    path = store.object_path(manifest["objects"][0])
    raw = bytearray(path.read_bytes())
    raw[0] ^= 1
    path.write_bytes(bytes(raw))
    with pytest.raises(InputError, match="fails its hash"):
        store.load(0)


def test_bf16_and_bool_and_empty_tensors_round_trip(tmp_path):
    store = Store(tmp_path)
    store.create()
    state = {
        "h": torch.randn(4, 3).to(torch.bfloat16),
        "m": torch.tensor([True, False]),
        "e": torch.empty(0),
        "s": torch.tensor(3.5),
    }
    _commit(store, 0, state)
    back = store.load(0)
    for k, v in state.items():
        assert back[k].dtype == v.dtype and torch.equal(back[k], v)


def test_retention_keeps_the_last_k_and_a_log_spaced_history():
    steps = list(range(0, 101, 5))
    kept = retained(steps, 3)
    assert {90, 95, 100} <= kept
    assert {0, 5, 10, 20, 35, 65} <= kept  # the first in each [2^j, 2^(j+1))
    assert 45 not in kept and 85 not in kept
    assert retained(steps, None) == set(steps)


def test_nice_every():
    assert [nice_every(x) for x in (0.3, 1, 1.2, 3, 7, 11, 49, 51)] == [1, 1, 2, 5, 10, 20, 50, 100]


def test_rng_capture_restores_every_generator():
    gens = {"np": np.random.default_rng(3), "t": torch.Generator().manual_seed(4)}
    saved = rng.capture(gens)

    def draw():
        return (
            random.random(),
            float(np.random.rand()),
            float(torch.rand(1)),
            float(gens["np"].random()),
            float(torch.rand(1, generator=gens["t"])),
        )

    first = draw()
    assert draw() != first  # the generators moved on
    rng.restore(saved, gens)
    assert draw() == first


class Counting(Dataset):
    def __init__(self):
        self.loaded = []

    def __len__(self):
        return 40

    def __getitem__(self, i):
        self.loaded.append(i)
        return torch.tensor([float(i)]) + torch.rand(1)  # augmentation from torch's RNG


def _batches(loader, skip: int):
    sampler = install(loader)
    torch.manual_seed(7)
    sampler.plan = {"skip": skip}
    it = iter(loader)
    sampler.plan = {}
    return [b for b in it]


def test_the_sampler_skips_batches_without_loading_them():
    full_data, skip_data = Counting(), Counting()
    full = _batches(DataLoader(full_data, batch_size=4, shuffle=True), 0)
    torch.manual_seed(7)
    bare = list(DataLoader(Counting(), batch_size=4, shuffle=True))
    assert all(torch.equal(a, b) for a, b in zip(full, bare))  # the bare loader's batches
    skipped = _batches(DataLoader(skip_data, batch_size=4, shuffle=True), 6)
    assert len(skipped) == 4
    assert len(skip_data.loaded) == 16  # the six skipped batches were never loaded
    order = [int(b[0, 0]) for b in full[6:]]  # the same indices as the full epoch's
    assert [int(b[0, 0]) for b in skipped] == order
    # the twin: advancing the iterator loads every skipped batch
    twin = Counting()
    loader = DataLoader(twin, batch_size=4, shuffle=True)
    install(loader)
    torch.manual_seed(7)
    it = iter(loader)
    for _ in range(6):
        next(it)
    assert len(twin.loaded) == 24


def test_the_recorded_loader_draws_what_the_bare_loader_draws():
    """The wrapped sampler draws nothing of its own: the default generator is where the bare
    loader leaves it after the same batches (base_seed at iter(), the order at the first
    batch, the augmentation per item)."""
    states = []
    for wrap in (False, True):
        data = Counting()
        loader = DataLoader(data, batch_size=4, shuffle=True)
        if wrap:
            install(loader)
            assert loader.dataset is data  # the user's dataset, not a wrapper
        torch.manual_seed(0)
        it = iter(loader)
        next(it)
        states.append(torch.get_rng_state())
    assert torch.equal(*states)


def _train(tmp_path, every=None, steps=12):
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with labcoat.replayable(
        model=model, optimizer=opt, every=every, dir=tmp_path, ledger=False
    ) as rec:
        for _ in rec.loop("step", range(steps)):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            rec.log(loss=loss)
    return rec


def test_the_recorder_writes_its_run(tmp_path):
    rec = _train(tmp_path, every=4)
    run = json.loads((rec.dir / "run.json").read_text())
    assert run["status"] == "finished" and run["steps"] == 12
    assert run["loops"] == {"step": {"depth": 0, "length": 12}}
    assert Store(rec.dir).steps() == [0, 4, 8, 12]
    logs = read_log(rec.dir / "log.jsonl")
    assert [r["step"] for r in logs] == list(range(12))
    assert run["costs"]["bytes_per_checkpoint"] > 0


def test_every_is_chosen_from_the_measured_cost(tmp_path):
    rec = _train(tmp_path, every=None, steps=30)
    run = json.loads((rec.dir / "run.json").read_text())
    costs = run["costs"]
    need = (costs["checkpoint_s"] + costs["background_s"]) / (0.02 * costs["step_s"])
    assert run["every"] is None
    assert run["every_chosen"] >= min(need, 30) * 0.5  # chosen from the budget, not left at 1


def test_a_cut_last_log_line_is_dropped(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text('{"seq": 0, "step": 0, "values": {"loss": 1.0}}\n{"seq": 1, "st')
    assert len(read_log(path)) == 1


def test_values_compare_exactly_unless_a_tolerance_is_given():
    assert same(float("nan"), float("nan"), 0, 0)
    assert not same(1.0, 1.0 + 1e-12, 0, 0)
    assert same(1.0, 1.0 + 1e-12, 1e-9, 0)
    assert not same(True, 1, 0, 0)
    a = {0: {"loss": [1.0]}, 1: {"loss": [2.0], "lr": [0.1]}}
    b = {0: {"loss": [1.0]}, 1: {"loss": [2.5], "lr": [0.1], "new": [3]}}
    assert first_difference(a, b, [0, 1], 0, 0) == {"step": 1, "name": "loss", "a": 2.0, "b": 2.5}
    assert first_difference(a, a, [0, 1], 0, 0) is None


def test_segments_split_at_checkpoints(tmp_path):
    store = Store(tmp_path)
    store.create()
    for s in (0, 10, 20, 30):
        _commit(store, s, {"x": torch.zeros(1)})
    run = RecordedRun(tmp_path, {"run_id": "r", "steps": 40, "status": "finished"})
    assert segments(run, 5, 39, 1) == [(0, 5, 39)]
    assert segments(run, 5, 39, 3) == [(0, 5, 9), (10, 10, 19), (20, 20, 39)]


def test_bad_arguments_are_refused(tmp_path):
    model = nn.Linear(2, 1)
    with pytest.raises(InputError, match="every"):
        labcoat.replayable(model=model, every=0)
    with pytest.raises(InputError, match="generators"):
        labcoat.replayable(model=model, generators={"g": object()})
    with pytest.raises(InputError, match="state_dict"):
        labcoat.replayable(model=object())
    with pytest.raises(InputError, match="no recorded run"):
        labcoat.replay.replay(tmp_path / "nope")
    from labcoat.replay.probes import check_probes

    with pytest.raises(InputError, match="`--probe` must be one of 'activations'"):
        check_probes(["activation"])
    assert check_probes(["grads", "activations", "grads"]) == ["grads", "activations"]


def test_a_watch_alert_names_the_checkpoint_that_replays_it(tmp_path):
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with labcoat.replayable(model=model, optimizer=opt, every=5, dir=tmp_path, ledger=False) as rec:
        with labcoat.watch(model, opt, ledger=False, every=1, record=rec) as w:
            for step in rec.loop("step", range(12)):
                loss = model(torch.randn(8, 4)).pow(2).mean()
                if step == 8:
                    loss = loss * float("nan")
                opt.zero_grad()
                loss.backward()
                opt.step()
                w.observe(rec.step, loss=loss)
    alert = next(a for a in w.alerts if a.step == 8)
    assert alert.evidence["checkpoint"] == 5
    assert (
        alert.evidence["replay"] == f"labcoat replay {rec.dir} --from 5 --to 8 --probe activations"
    )
    # the twin: a watch without the recording adds nothing
    assert "replay" not in _plain_alert_evidence()


def _plain_alert_evidence():
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with labcoat.watch(model, opt, ledger=False, every=1) as w:
        for step in range(3):
            loss = model(torch.randn(8, 4)).pow(2).mean() * float("nan")
            opt.zero_grad()
            loss.backward()
            opt.step()
            w.observe(step, loss=loss)
    return w.alerts[0].evidence


def test_a_ledger_run_holds_the_recordings_provenance(tmp_path):
    ledger = labcoat.Ledger(tmp_path / "ledger.db")
    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    config = {"lr": 0.1}
    with labcoat.replayable(
        model=model, optimizer=opt, every=2, dir=tmp_path / "runs", ledger=ledger, config=config
    ) as rec:
        for _ in rec.loop("step", range(3)):
            rec.log(loss=model(torch.ones(1, 3)).detach())
    (run,) = ledger.runs()
    assert run.status == "ok" and run.config == config
    (event,) = ledger.events(run=run.id, kind="record")
    assert event.data["run_id"] == rec.run_id
    manifest = json.loads((rec.dir / "run.json").read_text())
    assert manifest["ledger_run"] == run.id and manifest["provenance"]["config"] == config
    ledger.close()


def test_results_render_and_judge():
    from rich.console import Console

    from labcoat.replay.results import DiffResult, ReplayResult

    row = {"step": 0, "recorded": {"loss": 1.0}, "replayed": {"loss": 1.5}}
    bad = ReplayResult(
        "r",
        0,
        0,
        0,
        [row],
        {"step": 0, "name": "loss", "recorded": 1.0, "replayed": 1.5},
        {"g": [[0, 2.0]]},
        {},
    )
    good = ReplayResult("r", 0, 0, 0, [{**row, "replayed": {"loss": 1.0}}], None, {}, {})
    assert not bad.ok and good.ok
    assert "≠" in bad.to_html() and "hindsight: g" in bad.to_html()
    Console(file=None, width=100, record=True).print(bad)
    same = DiffResult("a", "b", [], {"step": 3, "name": "loss", "a": 1.0, "b": 2.0})
    changed = DiffResult(
        "a",
        "b",
        [{"section": "config", "key": "lr", "a": 1, "b": 2}],
        {"step": 3, "name": "loss", "a": 1.0, "b": 2.0},
    )
    assert same.findings[0].status == "fail"  # same provenance, different values
    assert changed.findings[0].status == "warn"
    assert DiffResult("a", "b", [], None).ok
    assert "config" in changed.to_html()


def test_a_replay_result_is_recorded_where_asked(tmp_path):
    from labcoat.replay.results import ReplayResult

    ledger = labcoat.Ledger(tmp_path / "l.db")
    result = ReplayResult(
        "r", 0, 0, 0, [], {"step": 0, "name": "x", "recorded": 1, "replayed": 2}, {}, {}
    )
    assert result.record(False) is None
    (row,) = result.record(ledger)
    (found,) = ledger.findings(source="replay")
    assert found.check == "replay.exact" and found.status == "fail"
    ledger.close()


def _status(result, check: str) -> str:
    return next(f.status for f in result.findings if f.check == check)


@pytest.mark.check("replay.exact", planted=True)
@pytest.mark.check("replay.exact", healthy=True)
@pytest.mark.check("replay.finite", planted=True)
@pytest.mark.check("replay.finite", healthy=True)
@pytest.mark.check("replay.diverge", planted=True)
@pytest.mark.check("replay.diverge", healthy=True)
def test_each_replay_check_fails_its_planted_result_and_passes_its_twin():
    """The checks judge what a replay or a diff measured (the end-to-end runs behind those
    measurements are the slow tests of test_replay.py): a value that came back different, a
    module whose output went non-finite, and two runs of one provenance that part ways."""
    from labcoat.replay.results import DiffResult, ReplayResult

    row = {"step": 4, "recorded": {"loss": 1.0}, "replayed": {"loss": 1.0}}
    mismatch = {"step": 4, "name": "loss", "recorded": 1.0, "replayed": 1.0000001}
    nan = {"activations": {"first_nonfinite": {"step": 5, "module": "0.3"}}}
    finite = {"activations": {"first_nonfinite": None}}
    exact = ReplayResult("r", 4, 5, 0, [row], None, {}, finite)
    drifted = ReplayResult("r", 4, 5, 0, [row], mismatch, {}, nan)
    assert _status(drifted, "replay.exact") == "fail" and _status(exact, "replay.exact") == "pass"
    assert _status(drifted, "replay.finite") == "fail" and _status(exact, "replay.finite") == "pass"
    assert "module '0.3'" in next(f.message for f in drifted.findings if f.check == "replay.finite")
    parted = DiffResult("a", "b", [], {"step": 3, "name": "loss", "a": 1.0, "b": 2.0})
    rerun = DiffResult("a", "b", [], None, steps_compared=40)
    assert _status(parted, "replay.diverge") == "fail"
    assert _status(rerun, "replay.diverge") == "pass"
