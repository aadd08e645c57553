"""Two ranks of a toy job, started as a launcher starts them (RANK, LOCAL_RANK, WORLD_SIZE in
each one's environment), for trying ``labcoat logs``:

    labcoat run -- python examples/logs_ranks.py            # healthy
    labcoat run -- python examples/logs_ranks.py --fail 6   # rank 1 raises at step 6
    labcoat logs last --why

Each rank logs through ``logging``, prints its loss every step and tells labcoat the step with
``labcoat.logs.step`` (``labcoat.watch`` does that by itself).
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import time

STEPS = 12


def rank_main(fail: int | None) -> None:
    import labcoat.logs

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train")
    rank = int(os.environ["RANK"])
    log.info("rank %d of %s starting", rank, os.environ["WORLD_SIZE"])
    for step in range(STEPS):
        labcoat.logs.step(step)
        if fail is not None and rank == 1 and step == fail:
            raise RuntimeError(f"loss exploded at step {step}")
        print(f"step {step} loss {1 / (step + 1):.4f}", flush=True)
        time.sleep(0.01)
    log.info("done")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fail", type=int, default=None, help="rank 1 raises at this step")
    parser.add_argument("--rank", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rank:
        rank_main(args.fail)
        return 0
    extra = [] if args.fail is None else ["--fail", str(args.fail)]
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "--rank", *extra],
            env={**os.environ, "RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": "2"},
        )
        for r in range(2)
    ]
    codes = [p.wait() for p in procs]
    if any(codes):
        print(f"launcher: a rank failed, exit codes {codes}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
