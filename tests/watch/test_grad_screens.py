"""grad_explode and grad_vanish screen most samples with running bounds before their robust
statistics; the screens must change no verdict. Each case replays the same gradient norms
(noise, explosions, collapses, gradients that go missing, zeros, NaN) through the screened
invariants and through twins whose screens always pass, with rows as Python lists (a few
parameters) and as numpy arrays (many), and across a checkpoint."""

from __future__ import annotations

import math

import numpy as np
import pytest

from labcoat.watch import Sample, WatchContext
from labcoat.watch.invariants import _grad_history
from labcoat.watch.invariants._grad_history import GradHistory
from labcoat.watch.invariants.grad_explode import GradExplode
from labcoat.watch.invariants.grad_vanish import GradVanish

NAMES = tuple(f"layer{i}.weight" for i in range(6))


def norm_stream(seed: int, steps: int = 400) -> list[dict[str, float]]:
    """Per-step gradient norms of a run with every kind of event the screens must not hide."""
    rng = np.random.default_rng(seed)
    scale = 10 ** rng.uniform(-3, 1, len(NAMES))
    out = []
    rise = 0.0  # an explosion lasts two steps: one step's burst is no alert (see grad_explode)
    for step in range(steps):
        drift = 10 ** (1.5 * math.sin(step / 30))  # norms rise and fall by decades
        norms = drift * scale * np.exp(rng.normal(0, 0.3, len(NAMES)))
        event = rng.random()
        if rise or step % 60 == 20:
            event = 0.5  # an explosion's two steps carry no other event
        if rise:
            norms, rise = norms * rise, 0.0
        elif step % 60 == 20:
            # every gradient explodes, often just about as far as the threshold (once a window:
            # one that recurs within it has a precedent, see grad_explode)
            rise = 10 ** rng.uniform(1.4, 2.8)
            norms = norms * rise
        elif event < 0.04:  # one collapses, likewise
            norms[rng.integers(len(NAMES))] *= 10 ** -rng.uniform(2.7, 3.8)
        elif event < 0.05:
            norms[rng.integers(len(NAMES))] = 0.0
        grads = dict(zip(NAMES, norms.tolist()))
        if event > 0.97:
            del grads[NAMES[rng.integers(len(NAMES))]]  # a gradient goes missing
        if step > steps // 2:
            grads.pop(NAMES[-1], None)  # one parameter loses its gradient for good
        if 0.95 < event <= 0.96:
            grads[NAMES[0]] = math.nan
        if 0.94 < event <= 0.945:
            grads = {}
        out.append(grads)
    return out


def verdicts(inv, stream, checkpoint_at=None):
    context = WatchContext(param_names=NAMES, frozen={}, group_params=(NAMES,), frozen_baseline={})
    inv.setup(context)
    found = []
    for step, grads in enumerate(stream):
        if step == checkpoint_at:
            state = inv.state_dict()
            inv = type(inv)(window=inv.window, min_history=inv.min_history)
            inv.setup(context)
            inv.load_state_dict(state)
        inv.update(Sample(step=step, time=0.0, grad_norms=dict(grads)))
        found.append(inv.compute())
    return found


@pytest.mark.parametrize("small", [True, False], ids=["python-rows", "numpy-rows"])
@pytest.mark.parametrize("kind", [GradExplode, GradVanish])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_screens_change_no_verdict(monkeypatch, kind, seed, small):
    monkeypatch.setattr(_grad_history, "SMALL", len(NAMES) if small else 0)
    stream = norm_stream(seed)
    screened = verdicts(kind(window=20, min_history=5), stream, checkpoint_at=150)
    monkeypatch.setattr(GradHistory, "may_explode", lambda self, total, rise: True)
    monkeypatch.setattr(GradHistory, "may_vanish", lambda self, row, drop: True)
    unscreened = verdicts(kind(window=20, min_history=5), stream)
    assert screened == unscreened
    assert sum(bool(v) for v in screened) >= 3  # the stream does raise this alert


@pytest.mark.parametrize("small", [True, False], ids=["python-rows", "numpy-rows"])
def test_a_healthy_run_passes_the_screens(monkeypatch, small):
    # the point of the screens: a healthy sample never reaches the robust statistics
    monkeypatch.setattr(_grad_history, "SMALL", len(NAMES) if small else 0)
    rng = np.random.default_rng(3)
    scale = 10 ** rng.uniform(-3, 1, len(NAMES))
    history = GradHistory(NAMES, 20)
    for _ in range(200):
        grads = dict(zip(NAMES, (scale * np.exp(rng.normal(0, 0.3, len(NAMES)))).tolist()))
        row, total = history.row(grads)
        assert not history.may_explode(total, math.log10(10.0))
        assert not history.may_vanish(row, math.log10(1000.0))
        history.push(row, total)


@pytest.mark.parametrize("small", [True, False], ids=["python-rows", "numpy-rows"])
def test_what_the_screens_read_matches_the_window_after_every_sample(monkeypatch, small):
    # what makes the screens safe: with a few parameters, each column's sorted finite values
    # (the exact medians); with many, a floor never above the window's smallest total and
    # ceilings never below each column's largest value; either way the gap record exact
    monkeypatch.setattr(_grad_history, "SMALL", len(NAMES) if small else 0)
    history = GradHistory(NAMES, 20)
    for i, grads in enumerate(norm_stream(4)):
        if i == 150:
            restored = GradHistory(NAMES, 20)
            restored.load_state_dict(history.state_dict())
            history = restored
        history.push(*history.row(grads))
        totals, past = history.past_total(), history.past_logs()
        assert past.shape == (history.filled, len(NAMES)) and totals.shape == (history.filled,)
        if small:
            assert history._sorted_totals == sorted(totals[np.isfinite(totals)].tolist())
        elif np.isfinite(totals).any():
            assert history._floor <= np.nanmin(totals)
        for j in range(len(NAMES)):
            column = past[:, j]
            if small:
                assert history._columns[j] == sorted(column[np.isfinite(column)].tolist())
            elif np.isfinite(column).any():
                assert history._ceiling[j] >= np.nanmax(column)
            # a gap is a sample that has norms, but none for this parameter
            informative = np.isfinite(past).any(axis=1)
            always = bool(np.isfinite(column[informative]).all())
            assert (history._last_gap[j] < history.count - history.filled) == always


@pytest.mark.parametrize("small", [True, False], ids=["python-rows", "numpy-rows"])
@pytest.mark.parametrize("kind", [GradExplode, GradVanish])
def test_screens_agree_at_the_threshold(monkeypatch, kind, small):
    # a steady history, then one sample just short of, at, or just past the alert's factor
    monkeypatch.setattr(_grad_history, "SMALL", len(NAMES) if small else 0)
    steady = dict.fromkeys(NAMES, 0.5)
    factor = 10.0 if kind is GradExplode else 1000.0
    for offset in (-1e-3, -1e-12, 0.0, 1e-12, 1e-3, 0.02, 0.04):
        scaled = dict(steady)
        change = 10 ** (math.log10(factor) + offset)
        if kind is GradExplode:
            scaled = {n: v * change for n, v in steady.items()}
        else:
            scaled[NAMES[2]] = steady[NAMES[2]] / change
        # a rise of the factor, or a small gradient, is reported once it lasts two samples
        stream = [steady] * 25 + [scaled] * 2
        screened = verdicts(kind(window=20, min_history=5), stream)
        with monkeypatch.context() as m:
            m.setattr(GradHistory, "may_explode", lambda self, total, rise: True)
            m.setattr(GradHistory, "may_vanish", lambda self, row, drop: True)
            unscreened = verdicts(kind(window=20, min_history=5), stream)
        assert screened == unscreened, offset
        assert bool(screened[-1]) == (offset > 0) or abs(offset) < 1e-9
