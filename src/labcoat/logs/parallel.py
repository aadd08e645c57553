"""``engine="ray"``: mine a run's per-rank files in parallel, one Ray task per file (the audit's
Ray engine), then join
their templates into the run's (each shard's templates go through one more drain3 tree) while
the lines are merged in time order as :func:`labcoat.logs.sources.lines` does.

The tasks read the files by path, so the folder must be readable where the tasks run (one
machine, or a file system the nodes share, as a cluster's log folder usually is).
"""

from __future__ import annotations

from typing import Any

from labcoat.logs.sources import Source, reader


def _mine(source: Source) -> tuple[dict[int, str], dict[int, int]]:
    """One file's templates and, per line number, its template id."""
    from labcoat.logs.sources import TEXT, N
    from labcoat.logs.templates import Miner

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
    return dict(enumerate(results))


__all__ = ["mine_shards"]
