"""``engine="ray"``: mine a run's per-rank files in parallel, one Ray task per file (the audit's
Ray engine), then join
their templates into the run's (each shard's templates go through one more drain3 tree) while
the lines are merged in time order as :func:`labcoat.logs.sources.lines` does.

The tasks read the files by path, so the folder must be readable where the tasks run (one
machine, or a file system the nodes share, as a cluster's log folder usually is); a task on a
node that cannot read its file says so, and the ingest stops with that node's name. On one
machine it is no faster than the local ingest (which mines a repeat with a dictionary look-up:
the join, not the mining, is the cost); it is for folders too large for one core's patience.
"""

from __future__ import annotations

from typing import Any

from labcoat.errors import InputError
from labcoat.logs.sources import Source, reader


def _mine(source: Source) -> tuple[dict[int, str], dict[int, int]] | str:
    """One file's templates and, per line number, its template id; or, where the task runs on
    a node that cannot read the file, the node's name."""
    import os
    import socket

    from labcoat.logs.sources import TEXT, N
    from labcoat.logs.templates import Miner

    if not os.access(source.path, os.R_OK):
        return socket.gethostname()
    miner = Miner()
    ids = {row[N]: miner.add(row[TEXT]) for chunk in reader(source, 0) for row in chunk}
    return miner.templates(), ids


def mine_shards(
    sources: list[Source], *, engine: Any = "ray", address: str | None = None
) -> dict[int, Any]:
    """source index -> (its templates, each line's template id), mined by the audit's engines
    (:func:`labcoat.audit.engine.make_engine`: one Ray task per file, or joblib workers)."""
    from labcoat.audit.engine import make_engine

    results = make_engine(engine, address=address).map(_mine, [(s,) for s in sources])
    for s, found in zip(sources, results):
        if isinstance(found, str):
            raise InputError(
                f"logs: --engine ray: a Ray task on node {found} cannot read {s.path}; the "
                "folder must be on a file system every Ray node shares (or use --engine local "
                "where the files are)"
            )
    return dict(enumerate(results))


__all__ = ["mine_shards"]
