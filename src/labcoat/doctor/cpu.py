"""How the doctor's training copies share the CPU.

The copies are small models trained for a few hundred steps. torch's intra-op threads buy them
little and cost a lot once other processes share the cores (each op waits for its slowest
thread), so the doctor runs on one thread and gives the caller's setting back afterwards.
Independent copies (the shuffle control's) run side by side instead, in forked processes, one
per usable core: forking needs nothing pickled, so models, losses and steps defined in scripts
or as lambdas work as they are. Where forking is unsafe or does not pay, copies run one after
another in this process, with the same results.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import pickle
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from multiprocessing.connection import Connection, wait
from typing import TypeVar

import torch

T = TypeVar("T")
Advance = Callable[..., None]

#: a copy must take at least this long for a worker process to pay off. bench/doctor.py: forking
#: one (torch loaded) and getting a result back took 0.02 s on 2 cores at load 6, 0.11 s with three
#: more busy processes; one digits-MLP copy takes about 0.1 s of CPU, and in workers the shuffle
#: layer took 2.1 s instead of 3.0 s
MIN_COPY_S = 0.05
#: workers that send nothing for this many copies' time (plus PATIENCE_S) are taken for hung:
#: they are stopped and their copies trained here
PATIENCE_COPIES = 20
PATIENCE_S = 10.0


@contextmanager
def one_thread() -> Iterator[None]:
    """torch on one intra-op thread inside the block; the caller's setting is restored after it,
    also when the block raises."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity, which containers and taskset narrow)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def why_sequential(copies: int, copy_s: float) -> str | None:
    """Why copies cannot or should not run in worker processes here; None when they can."""
    if copies < 2 or usable_cores() < 2:
        return "one copy or one core"
    if copy_s < MIN_COPY_S:
        return f"one copy takes {copy_s:.3f} s, less than starting a worker"
    if sys.platform != "linux" or "fork" not in multiprocessing.get_all_start_methods():
        return "forking is unavailable or unsafe on this platform"
    if multiprocessing.current_process().daemon:
        return "daemonic processes cannot start workers"
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        return "CUDA is initialised, and a forked process cannot use it"
    return None


def map_copies(
    train: Callable[[int, Advance], T],
    copies: int,
    *,
    copy_s: float,
    advance: Advance,
    units: int,
    looks: Sequence[int] = (),
    settled: Callable[[list[T]], bool] | None = None,
) -> list[T]:
    """``[train(i, advance) for i in range(copies)]``, spread over forked workers when that is
    faster (one copy takes ``copy_s`` seconds or more), and cut short once ``settled``.

    ``train(i, advance)`` must seed itself, so that a copy's result does not depend on where it
    ran; it calls ``advance`` as it goes (workers get a no-op, and this process advances by
    ``units`` for each copy a worker returns). This process trains copies too. A copy that
    raises or cannot be sent back is trained again here, so its error surfaces as it would
    sequentially; so are the copies of a worker that dies or hangs.

    At each ``looks`` count k, once copies 0 to k-1 are all back, ``settled(first k results)``
    may end the run: those k results are returned and copies still training are dropped. The
    looks fall at fixed counts and see the first k copies whatever order they finished in, so
    where the run stops does not depend on the machine.
    """
    workers = min(copies, usable_cores())
    pending = sorted(k for k in set(looks) if 0 < k < copies)
    if why_sequential(copies, copy_s) is not None:
        done: list[T] = []
        for i in range(copies):
            done.append(train(i, advance))
            if pending and len(done) == pending[0]:
                pending.pop(0)
                if settled is not None and settled(done):
                    break
        return done
    context = multiprocessing.get_context("fork")
    queue = context.Value("i", 0)  # the next copy to take; its lock makes taking one atomic
    pipes: list[Connection] = []
    processes = []
    with warnings.catch_warnings():  # Python 3.12+ warns on forking a threaded process; the
        warnings.simplefilter("ignore", DeprecationWarning)  # workers only train and send back
        for _ in range(workers - 1):
            receive, send = context.Pipe(duplex=False)
            process = context.Process(target=_work, args=(train, copies, queue, send), daemon=True)
            try:
                process.start()
            except OSError:  # out of processes or memory: the workers started so far will do
                receive.close()
                send.close()
                break
            send.close()
            pipes.append(receive)
            processes.append(process)
    results: dict[int, T] = {}
    failed: list[int] = []
    stop: int | None = None

    def look() -> bool:
        """Take every look whose copies are all back; True once one finds the run settled."""
        nonlocal stop
        while pending and all(i in results for i in range(pending[0])):
            k = pending.pop(0)
            if settled is not None and settled([results[i] for i in range(k)]):
                stop = k
                _stop(queue, copies)
                return True
        return False

    try:
        while not failed and (i := _take(queue, copies)) is not None:
            results[i] = train(i, advance)
            _collect(pipes, results, failed, advance, units, patience=0)
            if look():
                break
        if failed:
            _stop(queue, copies)
        patience = PATIENCE_COPIES * copy_s + PATIENCE_S
        while stop is None and pipes:  # the workers' last copies, with a look after each
            if not _collect(
                pipes,
                results,
                failed,
                advance,
                units,
                patience=patience if math.isfinite(patience) else None,
                first=True,
            ):
                break
            look()
    finally:
        _stop(queue, copies)
        for process in processes:
            if process.is_alive():
                process.kill()
            process.join()
    if stop is not None:
        return [results[i] for i in range(stop)]
    for i in range(copies):  # a copy that failed in a worker, or a worker that died
        if i not in results:
            results[i] = train(i, advance)
            if look():
                return [results[i] for i in range(stop or copies)]
    return [results[i] for i in range(copies)]


def _take(queue, copies: int) -> int | None:
    with queue.get_lock():
        i = queue.value
        if i >= copies:
            return None
        queue.value = i + 1
        return i


def _stop(queue, copies: int) -> None:
    with queue.get_lock():
        queue.value = copies


def _work(train: Callable[[int, Advance], object], copies: int, queue, send: Connection) -> None:
    """A worker: take copies until none are left; send each result, or the copy that failed.

    It ends with ``os._exit``: flushing standard streams whose lock another thread of the parent
    held at the fork would never return."""
    try:
        while (i := _take(queue, copies)) is not None:
            try:
                payload = pickle.dumps(
                    (i, True, train(i, _nothing)), protocol=pickle.HIGHEST_PROTOCOL
                )
            except BaseException:  # noqa: BLE001 - this process trains it again and reports it
                send.send_bytes(pickle.dumps((i, False, None)))
                return
            send.send_bytes(payload)
    finally:
        send.close()
        os._exit(0)


def _collect(
    pipes: list[Connection],
    results: dict,
    failed: list[int],
    advance: Advance,
    units: int,
    *,
    patience: float | None,
    first: bool = False,
) -> bool:
    """Read what the workers sent until every worker has closed its pipe, or until none has sent
    anything for ``patience`` seconds (0: only what is there now; None: no limit); with
    ``first``, return after the first batch of messages. False when the wait timed out."""
    while pipes:
        ready = wait(pipes, timeout=patience)
        if not ready:
            return False
        for pipe in ready:
            try:
                message = pipe.recv_bytes()
            except (EOFError, OSError):  # the worker is done (or died: its copies run here)
                pipes.remove(pipe)
                pipe.close()
                continue
            try:
                i, ok, result = pickle.loads(message)
            except Exception:  # noqa: BLE001, S112 - a result that does not load: trained here
                continue
            if ok:
                results[i] = result
                advance(units)
            else:
                failed.append(i)
        if first:
            return True
    return True


def _nothing(n: int = 1) -> None:
    return None
