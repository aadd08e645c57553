"""A watch that resumes from a checkpoint keeps its windows, and the watch records its sampled
series (loss, gradient norm, update/weight ratio) in the events file and the ledger."""

from __future__ import annotations

import io
import json

import pytest
import torch
import torch.nn.functional as F

import labcoat
from labcoat.errors import InputError
from labcoat.watch.events import read_series
from tests.watch._training import MLP, digits

STEPS, CUT = 130, 70
OPTIONS = {"no_trend": {"window": 30}}


def fresh():
    torch.manual_seed(0)
    model = MLP()
    return model, torch.optim.Adam(model.parameters(), lr=3e-3)


def run(model, opt, gen, steps, w):
    """Steps of a digits loop with two bugs: one unscaled batch at 80 (spike, judged against
    recent history), labels turned to noise from 90 (no_trend, against the first window)."""
    x_all, y_all = digits()
    for step in steps:
        idx = torch.randint(0, len(x_all), (32,), generator=gen)
        x, y = x_all[idx], y_all[idx]
        if step == 80:
            x = x * 16  # pixels left in 0-16 instead of 0-1
        if step >= 90:
            y = torch.randint(0, 10, y.shape, generator=gen)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        w.observe(step=step, loss=loss)


def summary(alerts):
    return [(a.check, a.step, a.subject, a.message) for a in alerts]


def test_a_resumed_watch_raises_the_same_alerts_as_an_uninterrupted_one():
    model, opt = fresh()
    gen = torch.Generator().manual_seed(1)
    with labcoat.watch(model, opt, every=3, options=OPTIONS) as w:
        run(model, opt, gen, range(STEPS), w)
    whole = summary(w.alerts)
    assert {k for k, *_ in whole} == {"no_trend", "spike"}
    assert all(step > CUT for _, step, *_ in whole)

    model, opt = fresh()
    gen = torch.Generator().manual_seed(1)
    with labcoat.watch(model, opt, every=3, options=OPTIONS) as first:
        run(model, opt, gen, range(CUT), first)
        buffer = io.BytesIO()  # a checkpoint as a training script writes one
        torch.save(
            {
                "model": model.state_dict(),
                "opt": opt.state_dict(),
                "gen": gen.get_state(),
                "watch": first.state_dict(),
            },
            buffer,
        )
    buffer.seek(0)
    ckpt = torch.load(buffer)  # weights_only: the watch's state is plain data
    model, opt = fresh()
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["opt"])
    gen = torch.Generator()
    gen.set_state(ckpt["gen"])
    resumed = labcoat.watch(model, opt, every=3, options=OPTIONS)
    resumed.load_state_dict(ckpt["watch"])
    with resumed:
        run(model, opt, gen, range(CUT, STEPS), resumed)
    assert summary(resumed.alerts) == whole
    assert resumed.observed == STEPS

    model, opt = fresh()  # without the state, the windows start empty and the run differs
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["opt"])
    gen.set_state(ckpt["gen"])
    with labcoat.watch(model, opt, every=3, options=OPTIONS) as cold:
        run(model, opt, gen, range(CUT, STEPS), cold)
    assert summary(cold.alerts) != [a for a in whole if a[1] >= CUT]


def test_state_from_another_setup_is_refused():
    model, opt = fresh()
    with labcoat.watch(model, opt, every=3) as w:
        state = w.state_dict()
    with pytest.raises(InputError, match="another setup"):
        with labcoat.watch(model, opt, every=5) as other:
            other.load_state_dict(state)
    with pytest.raises(InputError, match="same `invariants`"):
        with labcoat.watch(model, opt, every=3, invariants=["spike"]) as other:
            other.load_state_dict(state)
    with pytest.raises(InputError, match="expects what Watcher.state_dict"):
        labcoat.watch(model, opt).load_state_dict({"every": 3})


class Sink:
    """A ledger double with the two methods the watch calls."""

    def __init__(self):
        self.batches, self.findings = [], []

    def record_events(self, events, source):
        self.batches.append((list(events), source))

    def record_findings(self, findings, source):
        self.findings.extend(findings)


def test_the_series_goes_to_the_events_file_and_the_ledger_in_batches(tmp_path):
    model, opt = fresh()
    sink = Sink()
    x_all, y_all = digits()
    path = tmp_path / "events.jsonl"
    with labcoat.watch(model, opt, every=2, events=path, ledger=sink) as w:
        for step in range(40):
            rows = slice(step * 8, step * 8 + 32)
            loss = F.cross_entropy(model(x_all[rows]), y_all[rows])
            opt.zero_grad()
            loss.backward()
            opt.step()
            w.observe(step=step, loss=loss)
    series = read_series([path])
    assert [r["step"] for r in series] == list(range(0, 40, 2))
    first = series[0]
    assert first["losses"] == 1 and series[1]["losses"] == 2  # every loss is summarised
    assert first["loss_min"] <= first["loss_mean"] <= first["loss_max"]
    assert all(r["grad_norm"] > 0 and r["rank"] is None for r in series)
    # Adam's first steps move each weight by about lr: the ratio is lr x sqrt(n) / ||W||
    norm = torch.sqrt(sum((p.detach() ** 2).sum() for p in model.parameters())).item()
    numel = sum(p.numel() for p in model.parameters())
    assert series[0]["update_ratio"] == pytest.approx(3e-3 * numel**0.5 / norm, rel=0.3)
    assert series[-1]["update_ratio"] < series[0]["update_ratio"]
    ((events, source),) = sink.batches  # one transaction at the end, not one per step
    assert source == "watch" and [e["kind"] for e in events] == ["series"] * 20
    assert w.events == []  # the series is not kept in memory


def test_the_real_ledger_stores_the_series_with_the_run(tmp_path):
    ledger = labcoat.Ledger(tmp_path / "notebook.db")
    model, opt = fresh()
    x, y = digits()
    with ledger.run(config={"lr": 3e-3}) as run_:
        with labcoat.watch(model, opt, every=1, ledger=ledger) as w:
            for step in range(6):
                loss = F.cross_entropy(model(x[:32]), y[:32])
                opt.zero_grad()
                loss.backward()
                opt.step()
                w.observe(step=step, loss=loss)
    rows = ledger.events(run=run_, kind="series")
    assert [r.step for r in rows] == list(range(6)) and rows[0].source == "watch"
    assert rows[0].data["grad_norm"] > 0 and rows[-1].value < rows[0].value


def test_watch_report_reads_files_with_the_series(cli, tmp_path):
    model, opt = fresh()
    x, y = digits()
    path = tmp_path / "events.jsonl"
    with labcoat.watch(model, opt, every=1, events=path) as w:
        for step in range(5):
            loss = F.cross_entropy(model(x[:32]), y[:32])
            if step == 3:
                loss = loss * float("nan")
            opt.zero_grad()
            loss.backward()
            opt.step()
            w.observe(step=step, loss=loss)
    res = cli("watch", "report", path)
    assert res.code == 1, res.err  # the NaN is a failed alert
    assert "nonfinite" in res.out and "series: 5 sampled steps (0-4)" in res.out
    data = json.loads(cli("watch", "report", "--json", path).out)
    assert data["series"]["records"] == 5 and data["other_events"] == []
    assert [a["kind"] for a in data["alerts"]] == ["nonfinite"]
