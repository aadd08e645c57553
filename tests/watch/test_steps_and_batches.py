"""no_step and repeat_batch in real loops: an optimizer step that stops being applied while
the loop goes on, and DataLoader workers that yield the same batches; each against the
healthy setups that look like them (gradient accumulation, a GradScaler skipping steps,
properly seeded or sharded workers, epochs and single batches that legitimately come back)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, IterableDataset, TensorDataset, get_worker_info

import labcoat
from tests.watch._training import digits


def linear_sgd(seed=0):
    torch.manual_seed(seed)
    model = torch.nn.Linear(64, 10)
    return model, torch.optim.SGD(model.parameters(), lr=0.05)


# -- no_step ------------------------------------------------------------------------------
def loop(steps, *, apply_step, accumulate=1, scaler=None, overflow=lambda step: False, **kw):
    """A plain loop with gradient accumulation; ``apply_step(step)`` decides whether the code
    around optimizer.step() lets it run, ``overflow(step)`` makes gradients inf (as fp16 ones
    do) so a GradScaler skips the step."""
    model, opt = linear_sgd()
    x_all, y_all = digits()
    gen = torch.Generator().manual_seed(0)
    state = {"step": 0}
    model.weight.register_hook(lambda g: g * float("inf") if overflow(state["step"]) else g)
    with labcoat.watch(model, opt, every=1, invariants=["no_step", "stale"], **kw) as w:
        for step in range(steps):
            state["step"] = step
            idx = torch.randint(0, len(x_all), (16,), generator=gen)
            loss = F.cross_entropy(model(x_all[idx]), y_all[idx]) / accumulate
            (loss if scaler is None else scaler.scale(loss)).backward()
            if (step + 1) % accumulate == 0 and apply_step(step):
                if scaler is None:
                    opt.step()
                else:
                    scaler.step(opt)
                    scaler.update()
                opt.zero_grad()
            w.observe(step=step, loss=loss)
    return w


@pytest.mark.check("watch.no_step", planted=True)
def test_no_step_when_a_condition_around_the_step_stops_holding():
    total = 30  # e.g. `if step < scheduler_total_steps: optimizer.step()` with the wrong total
    w = loop(120, apply_step=lambda step: step < total)
    (alert,) = w.alerts
    assert alert.check == "no_step" and alert.step == total - 1 + 50
    assert alert.evidence["observes_without_step"] == 50
    assert alert.evidence["applied_steps"] == total


def test_no_step_when_a_grad_scaler_skips_every_step():
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16)
    w = loop(100, apply_step=lambda step: True, scaler=scaler, overflow=lambda step: step >= 20)
    (alert,) = w.alerts
    assert alert.check == "no_step" and alert.step == 20 + 49
    assert "GradScaler" in alert.message


def test_gradient_accumulation_is_not_a_missing_step():
    for k in (4, 16):
        assert loop(20 * k, apply_step=lambda step: True, accumulate=k).alerts == []


def test_a_grad_scaler_skipping_steps_now_and_then_is_not_a_missing_step():
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16, growth_interval=5)
    # a burst while the scale calibrates, then a skip now and then
    skips = set(range(10, 25)) | set(range(40, 200, 9))
    w = loop(200, apply_step=lambda step: True, scaler=scaler, overflow=lambda step: step in skips)
    assert w.alerts == []


# -- repeat_batch -------------------------------------------------------------------------
class RandomCrops(IterableDataset):
    """Random windows of the digits, drawn from a generator made in __init__: forked workers
    all start from its state unless a worker_init_fn reseeds it."""

    def __init__(self, n=64):
        self.n = n
        self.rng = np.random.default_rng(0)

    def __iter__(self):
        x, y = digits()
        info = get_worker_info()
        for _ in range(self.n // (info.num_workers if info else 1)):
            i = int(self.rng.integers(len(x)))
            yield x[i], y[i]


def reseed(worker_id):
    info = get_worker_info()
    info.dataset.rng = np.random.default_rng(info.seed % 2**32)


class DigitsStream(IterableDataset):
    """The digits in order; ``shard`` splits them across workers, as the docs show."""

    def __init__(self, shard: bool, n=256):
        self.shard, self.n = shard, n

    def __iter__(self):
        x, y = digits()
        info = get_worker_info()
        start, step = (info.id, info.num_workers) if (self.shard and info) else (0, 1)
        for i in range(start, self.n, step):
            yield x[i], y[i]


def train_on(loader, epochs=1, **kw):
    model, opt = linear_sgd()
    with labcoat.watch(model, opt, every=1, invariants=["repeat_batch"], **kw) as w:
        step = 0
        for _ in range(epochs):
            for x, y in loader:
                loss = F.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                w.observe(step=step, loss=loss, batch=(x, y))
                step += 1
    return w


def test_repeat_batch_when_workers_share_a_random_generator():
    w = train_on(DataLoader(RandomCrops(), batch_size=8, num_workers=2))
    (alert,) = w.alerts
    assert alert.check == "repeat_batch" and alert.step <= 4
    assert "get_worker_info" in alert.message and alert.evidence["repeats"][0][1] < alert.step


def test_reseeded_workers_do_not_repeat():
    w = train_on(DataLoader(RandomCrops(), batch_size=8, num_workers=2, worker_init_fn=reseed))
    assert w.alerts == [] and w.observed == 8


@pytest.mark.check("watch.repeat_batch", planted=True)
def test_repeat_batch_when_every_worker_yields_the_whole_stream():
    w = train_on(DataLoader(DigitsStream(shard=False), batch_size=16, num_workers=2))
    (alert,) = w.alerts
    assert alert.check == "repeat_batch" and w.observed == 32  # every batch came twice


def test_sharded_stream_and_epochs_that_come_back_do_not_repeat():
    assert train_on(DataLoader(DigitsStream(shard=True), batch_size=16, num_workers=2)).alerts == []
    x, y = digits()
    data = TensorDataset(x[:160], y[:160])
    # shuffled epochs with workers; unshuffled epochs of 10 batches, inside the window
    shuffled = DataLoader(data, batch_size=16, shuffle=True, num_workers=2)
    assert train_on(shuffled, epochs=3).alerts == []
    assert train_on(DataLoader(data, batch_size=16, shuffle=False), epochs=4).alerts == []


@pytest.mark.check("watch.repeat_batch", healthy=True)
def test_one_batch_on_purpose_is_not_a_repeat():
    x, y = digits()
    single = [(x[:16], y[:16])] * 40  # overfitting one batch, or full-batch training
    w = train_on(single)
    assert w.alerts == []
    assert {f.check: f.status for f in w.findings}["repeat_batch"] == "pass"


def test_fingerprints_see_every_row_and_tell_dtypes_and_shapes_apart():
    from labcoat.watch.batches import fingerprint

    def key(batch):
        return fingerprint(batch).key([])

    x = torch.arange(100_000, dtype=torch.float32).reshape(1000, 100)
    changed = x.clone()
    changed[:, ::7] += 1  # every row differs (strided sampling reaches each row)
    assert key(x) == key(x.clone()) and key(x) != key(changed)
    assert key(x) != key(x.double()) and key(x) != key(x.reshape(100, 1000))
    assert key({"input_ids": x[:2].long(), "labels": x[0]}) != key({"input_ids": x[:2].long()})


def test_device_fingerprints_are_exact_for_equal_batches_and_differ_otherwise():
    """The path accelerator tensors take (two float64 sums reduced on the device), run on CPU."""
    from labcoat.watch.batches import Fingerprint, _add_tensor
    from labcoat.watch.probes import to_host

    def key(t):
        fp = Fingerprint()
        _add_tensor(t, fp, on_host=False)
        return fp.key(to_host([torch.cat(fp.device)])[0])

    ids = torch.randint(0, 50_000, (8, 512))
    other = ids.clone()
    other[3, 100] += 1  # one token in one row (sampled: 4096 elements, stride 2)
    assert key(ids) == key(ids.clone()) and key(ids) != key(other)
    assert key(ids.float()) != key(ids.double())
