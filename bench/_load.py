"""The CPU-bound load every bench runs its 'busy' measurement beside.

Pure-Python busy loops in other processes, started and stopped by the bench itself, so a busy
figure and its idle twin come from one run on one machine.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import time
from typing import Any, Iterator

#: how long a started loop may take to report that it runs (a spawned one imports the bench first)
START_TIMEOUT_S = 120.0


def _spin(started: Any) -> None:
    started.release()
    x = 0
    while True:
        x = (x * 31 + 7) % 1_000_003


@contextlib.contextmanager
def cpu_load(
    processes: int | None = None, *, method: str | None = None, settle_s: float = 0.5
) -> Iterator[int]:
    """``processes`` busy loops (default: one per core) for the duration of the block.

    ``method``: the multiprocessing start method ("spawn" once torch has started threads: a
    spawned loop re-imports the bench's main module, and the block waits until every loop
    runs); ``settle_s``: how long the loops run before the block starts. Yields the count.
    """
    count = processes or os.cpu_count() or 1
    context = multiprocessing.get_context(method)
    started = context.Semaphore(0)
    procs = [context.Process(target=_spin, args=(started,), daemon=True) for _ in range(count)]
    for proc in procs:
        proc.start()
    try:
        for _ in procs:
            if not started.acquire(timeout=START_TIMEOUT_S):
                raise RuntimeError(f"a busy loop did not start within {START_TIMEOUT_S:.0f} s")
        time.sleep(settle_s)
        yield count
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.join()
