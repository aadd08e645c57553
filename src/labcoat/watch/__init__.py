"""labcoat's training watch: invariants checked while a run trains, on one process or many.

``labcoat.watch(model, optimizer)`` (also ``labcoat.watch.watch``) returns a
:class:`Watcher`; see :mod:`labcoat.watch.watcher`. Alerts are :class:`Alert` objects, each
invariant lives in :mod:`labcoat.watch.invariants`, events are JSON lines
(:mod:`labcoat.watch.events`) and ranks are compared in :mod:`labcoat.watch.distributed`.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from labcoat.watch.alerts import Alert, merge_alerts
from labcoat.watch.events import EventLog, read_alerts, read_events
from labcoat.watch.invariants import INVARIANTS, Invariant, Violation
from labcoat.watch.sample import CrossRank, Sample, WatchContext
from labcoat.watch.watcher import DEFAULT_EVERY, DEFAULT_SYNC_EVERY, Watcher, watch

__all__ = [
    "Alert",
    "CrossRank",
    "DEFAULT_EVERY",
    "DEFAULT_SYNC_EVERY",
    "EventLog",
    "INVARIANTS",
    "Invariant",
    "Sample",
    "Violation",
    "WatchContext",
    "Watcher",
    "merge_alerts",
    "read_alerts",
    "read_events",
    "watch",
]


class _CallableModule(types.ModuleType):
    """``labcoat.watch`` is both this package and the function that starts a watch.

    Importing any submodule (``from labcoat.watch import Alert``) makes the package the value
    of ``labcoat.watch``, which would shadow the function; making the package callable keeps
    ``labcoat.watch(model, optimizer)`` working either way.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Watcher:
        return watch(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
