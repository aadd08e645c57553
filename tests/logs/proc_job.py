"""A small multi-process job without torch, for the fast tests of ``labcoat logs``.

``python proc_job.py SCENARIO [WORLD]`` starts WORLD worker processes (default 2) as a launcher
does: each gets ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE`` in its environment. Workers log through
``logging``, print a loss each step and meet at a barrier every step (files in a shared folder,
with a timeout, as a collective has one). The last rank carries the planted fault at step K:

- ``healthy``: nothing (a banner, a library-style warning, INFO lines);
- ``raise``: it raises a RuntimeError;
- ``hang``: it stops, the others time out at the barrier (``TimeoutError: Timed out …``);
- ``nan``: its loss is NaN from step K;
- ``oom``: it raises a MemoryError-like allocator error (``RuntimeError: … out of memory``);
- ``slow``: from step K it takes 0.15 s longer before printing each step's loss;
- ``newwarn``: healthy, plus a warning no earlier run wrote.

The launcher exits with the first failed worker's code and says which rank failed.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile
import time
import warnings

K = 8
STEPS = 16
BARRIER_TIMEOUT_S = float(os.environ.get("PROC_JOB_TIMEOUT", "4"))


def barrier(folder: str, rank: int, world: int, step: int) -> None:
    open(os.path.join(folder, f"{step}.{rank}"), "w").close()
    deadline = time.monotonic() + BARRIER_TIMEOUT_S
    while True:
        missing = [
            r for r in range(world) if not os.path.exists(os.path.join(folder, f"{step}.{r}"))
        ]
        if not missing:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"Timed out waiting {BARRIER_TIMEOUT_S * 1000:.0f}ms for ranks {missing} at the "
                f"barrier of step {step}"
            )
        time.sleep(0.002)


def worker(scenario: str, folder: str) -> None:
    import labcoat.logs

    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    log = logging.getLogger("train")
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    faulty = world - 1
    print(f"=== toy trainer v0.1 on rank {rank} of {world} ===", flush=True)
    log.info("loading dataset shard %d of %d", rank, world)
    warnings.warn("this toy trainer ignores --compile", UserWarning)
    loss = 2.0
    for step in range(STEPS):
        labcoat.logs.step(step)
        if step % 10 == 0:
            log.info("epoch 0: %d batches done", step)
        if rank == faulty and step >= K and scenario == "slow":
            time.sleep(0.15)
        if rank == faulty and step == K:
            if scenario == "raise":
                raise RuntimeError(f"planted failure in the loss at step {step}")
            if scenario == "hang":
                time.sleep(60)
            if scenario == "oom":
                raise RuntimeError(
                    "DefaultCPUAllocator: can't allocate memory: you tried to allocate "
                    "281474976710656 bytes. Error code 12 (Cannot allocate memory)"
                )
            if scenario == "newwarn":
                log.warning("gradient accumulation buffer resized to %d", 4096)
        if rank == faulty and step >= K and scenario == "nan":
            loss = float("nan")
        loss = loss * 0.9
        print(f"step {step} loss {loss:.4f}", flush=True)
        barrier(folder, rank, world, step)
        time.sleep(0.01)
    log.info("training done: final loss %.4f", loss)


def launch(scenario: str, world: int) -> int:
    folder = tempfile.mkdtemp(prefix="proc-job-")
    procs = []
    for rank in range(world):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world))
        procs.append(
            subprocess.Popen([sys.executable, __file__, "--worker", scenario, folder], env=env)
        )
    failed = None
    while failed is None and any(p.poll() is None for p in procs):
        for rank, p in enumerate(procs):
            if p.poll() not in (None, 0):
                failed = rank
                break
        time.sleep(0.01)
    for p in procs:
        if failed is not None and p.poll() is None:
            p.terminate()
        p.wait()
    codes = [p.returncode for p in procs]
    if failed is None:
        failed = next((r for r, c in enumerate(codes) if c), None)
    if failed is not None:
        print(
            f"launcher: ERROR: worker rank {failed} failed (exit code {codes[failed]})",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3])
    else:
        sys.exit(launch(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2))
