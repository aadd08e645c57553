"""The doctor on one thread, the caller's setting given back, and copies in worker processes
that give exactly what sequential copies give."""

from __future__ import annotations

import os
import time

import pytest
import torch
from torch import nn

from labcoat.doctor import cpu
from labcoat.doctor.checks import shuffle
from labcoat.errors import InputError
from tests.doctor_controls import setups as s

two_cores = pytest.mark.skipif(
    cpu.usable_cores() < 2 or cpu.why_sequential(2, 1.0) is not None,
    reason="needs fork and 2 cores",
)


class Stop(Exception):
    pass


def test_diagnose_trains_on_one_thread_and_gives_the_callers_setting_back():
    torch.set_num_threads(3)  # the autouse fixture restores its own setting afterwards
    seen: list[int] = []
    report = s.diagnose(
        s.mlp(),
        s.digits(200),
        nn.CrossEntropyLoss(),
        layers=("model",),
        on_finding=lambda f: seen.append(torch.get_num_threads()),
    )
    assert report.findings and set(seen) == {1}
    assert torch.get_num_threads() == 3


def test_the_callers_thread_setting_comes_back_when_diagnose_raises():
    torch.set_num_threads(3)

    def stop(_finding):
        raise Stop

    with pytest.raises(Stop):
        s.diagnose(
            s.mlp(), s.digits(200), nn.CrossEntropyLoss(), layers=("model",), on_finding=stop
        )
    assert torch.get_num_threads() == 3
    X, y = s.digits(200)
    with pytest.raises(InputError):
        s.diagnose(s.mlp(), (X, y[:10]), nn.CrossEntropyLoss())
    assert torch.get_num_threads() == 3


def slow_copy(i: int, advance) -> tuple[int, int]:
    time.sleep(0.02)
    advance(2)
    return i * i, os.getpid()


@two_cores
def test_copies_run_in_workers_and_come_back_in_order(monkeypatch):
    advanced: list[int] = []
    results = cpu.map_copies(
        slow_copy, 12, copy_s=1.0, advance=lambda n=1: advanced.append(n), units=2
    )
    assert [r for r, _ in results] == [i * i for i in range(12)]
    assert {pid for _, pid in results} - {os.getpid()}, "no copy ran in a worker"
    assert sum(advanced) == 24  # every copy's units, wherever it ran


def test_copies_cheaper_than_starting_a_worker_run_here():
    results = cpu.map_copies(
        slow_copy, 4, copy_s=cpu.MIN_COPY_S / 10, advance=lambda n=1: None, units=2
    )
    assert {pid for _, pid in results} == {os.getpid()}


@two_cores
def test_a_copy_that_fails_in_a_worker_raises_here_as_it_would_sequentially():
    here = os.getpid()

    def failing(i: int, advance) -> int:
        time.sleep(0.01)
        if os.getpid() != here or i == 7:  # every worker's copy fails; copy 7 fails everywhere
            if i == 7:
                raise ValueError("copy 7 diverged")
            raise RuntimeError("only in a worker")
        return i

    with pytest.raises(ValueError, match="copy 7"):
        cpu.map_copies(failing, 10, copy_s=1.0, advance=lambda n=1: None, units=1)
    results = cpu.map_copies(
        lambda i, advance: failing(i, advance) if i != 7 else -1,
        10,
        copy_s=1.0,
        advance=lambda n=1: None,
        units=1,
    )
    assert results == [
        i if i != 7 else -1 for i in range(10)
    ]  # worker failures were trained again here


@two_cores
def test_copies_of_a_worker_that_hangs_or_dies_are_made_here(monkeypatch):
    monkeypatch.setattr(cpu, "PATIENCE_COPIES", 0)
    monkeypatch.setattr(cpu, "PATIENCE_S", 0.5)
    here = os.getpid()

    def hangs(i: int, advance) -> int:
        if os.getpid() != here:
            time.sleep(60)
        return i

    def dies(i: int, advance) -> int:
        if os.getpid() != here:
            os._exit(1)
        time.sleep(0.01)
        return i

    start = time.perf_counter()
    assert cpu.map_copies(hangs, 5, copy_s=1.0, advance=lambda n=1: None, units=1) == list(range(5))
    assert time.perf_counter() - start < 20
    assert cpu.map_copies(dies, 5, copy_s=1.0, advance=lambda n=1: None, units=1) == list(range(5))


@two_cores
def test_results_that_cannot_be_sent_back_are_made_here():
    results = cpu.map_copies(
        lambda i, advance: (time.sleep(0.01), lambda: i)[1],
        6,
        copy_s=1.0,
        advance=lambda n=1: None,
        units=1,
    )
    assert [f() for f in results] == list(range(6))


@two_cores
def test_shuffled_copies_in_workers_score_exactly_as_sequential_ones(monkeypatch):
    """A loss and a step defined as closures, as in scripts: nothing needs pickling."""
    monkeypatch.setitem(shuffle.PERMUTATIONS, "fast", 4)
    loss_fn = lambda out, y: nn.functional.cross_entropy(out, y)

    def step(model, batch, optimizer, loss):
        optimizer.zero_grad()
        value = loss(model(batch[0]), batch[1])
        value.backward()
        optimizer.step()
        return value

    def scores(min_copy_s: float) -> list[float]:
        monkeypatch.setattr(cpu, "MIN_COPY_S", min_copy_s)
        report = s.diagnose(s.mlp(), s.digits(), loss_fn, step=step, layers=("shuffle",))
        return report["shuffle.labels"].evidence["shuffled_scores"]

    assert scores(0.0) == scores(float("inf"))


def uneven_copy(i: int, advance) -> tuple[int, int]:
    time.sleep(0.005 * (i % 3))  # copies finish out of order in workers
    return i, os.getpid()


@pytest.mark.parametrize("copy_s", [1.0, cpu.MIN_COPY_S / 10], ids=["workers", "sequential"])
@pytest.mark.parametrize(
    "copies, settle_at, looks, ran, looked",
    [
        (19, 6, (4, 6, 8), 6, [4, 6]),  # settled at the second look: the first 6 come back
        (10, None, (4, 8, 12), 10, [4, 8]),  # never settled: every copy runs
    ],
    ids=["settled", "never-settled"],
)
def test_looks_see_the_first_k_copies_and_stop_at_the_same_count_wherever_they_ran(
    copy_s, copies, settle_at, looks, ran, looked
):
    seen: list[list[int]] = []

    def settled(first):
        seen.append([i for i, _ in first])
        return settle_at is not None and len(first) >= settle_at

    results = cpu.map_copies(
        uneven_copy,
        copies,
        copy_s=copy_s,
        advance=lambda n=1: None,
        units=1,
        looks=looks,
        settled=settled,
    )
    assert [i for i, _ in results] == list(range(ran))
    assert seen == [list(range(k)) for k in looked]  # each look sees the first k, in order
