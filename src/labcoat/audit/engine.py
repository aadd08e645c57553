"""Where the audit's independent tasks run: this machine (both cores) or a Ray cluster.

The pipelines (shard, signatures, buckets, components, report) are written as stages whose
tasks read their inputs from files and write their outputs to files in a work directory, so an
engine only has to run a module-level function on each argument tuple and hand back the small
return values. Nothing else differs between engines.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from labcoat._validation import OneOf, renamed

ENGINES = ("local", "ray")


class LocalEngine:
    """Runs tasks in worker processes on this machine (joblib), or inline when there is one."""

    name = "local"

    def __init__(self, n_jobs: int | None = None):
        self.n_jobs = (os.cpu_count() or 1) if n_jobs in (None, -1) else n_jobs

    def map(
        self, fn: Callable[..., Any], tasks: Sequence[tuple], *, small: bool = False
    ) -> list[Any]:
        """``small``: the work is less than starting worker processes costs; run it inline."""
        if small or self.n_jobs == 1 or len(tasks) <= 1:
            return [fn(*t) for t in tasks]
        from joblib import Parallel, delayed

        return Parallel(n_jobs=min(self.n_jobs, len(tasks)))(delayed(fn)(*t) for t in tasks)


class RayEngine:
    """Runs each task as a Ray task; joins a running Ray (``ray.init`` done by the caller) or
    starts one at ``address`` (None: a local Ray with ``n_jobs`` CPUs)."""

    name = "ray"

    def __init__(self, address: str | None = None, n_jobs: int | None = None):
        from labcoat.extras import import_module

        ray = import_module("ray", "ray", "engine='ray'")
        self._ray = ray
        if not ray.is_initialized():
            src = str(Path(__file__).resolve().parents[2])  # so workers import this labcoat
            path = os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH", "")) if p)
            ray.init(
                address=address,
                num_cpus=None if address or n_jobs == -1 else n_jobs,
                include_dashboard=False,
                log_to_driver=False,
                runtime_env={"env_vars": {"PYTHONPATH": path}},
            )
        self.n_jobs = int(ray.cluster_resources().get("CPU", 1)) if n_jobs in (None, -1) else n_jobs

    def map(
        self, fn: Callable[..., Any], tasks: Sequence[tuple], *, small: bool = False
    ) -> list[Any]:
        remote = self._ray.remote(num_cpus=1)(fn)
        return self._ray.get([remote.remote(*t) for t in tasks])


@renamed(workers="n_jobs")
def make_engine(engine: Any = "local", *, n_jobs: int | None = None, address: str | None = None):
    """An engine from its name (``"local"`` or ``"ray"``), or an engine object as it is."""
    if hasattr(engine, "map"):
        return engine
    OneOf(ENGINES).check(engine, "engine")
    return LocalEngine(n_jobs) if engine == "local" else RayEngine(address, n_jobs)


@contextmanager
def workdir(path: str | os.PathLike[str] | None = None) -> Iterator[Path]:
    """The directory stages exchange files through: ``path`` (kept) or a temporary one.

    On a multi-machine Ray cluster pass a directory every node can read and write.
    """
    if path is not None:
        Path(path).mkdir(parents=True, exist_ok=True)
        yield Path(path)
        return
    with tempfile.TemporaryDirectory(prefix="labcoat-audit-") as tmp:
        yield Path(tmp)
