"""labcoat's training watch: invariants checked while a run trains, on one process or many.

``labcoat.watch(model, optimizer)`` (also ``labcoat.watch.watch``) returns a
:class:`Watcher`; see :mod:`labcoat.watch.watcher`. Alerts are :class:`Alert` objects, each
invariant lives in :mod:`labcoat.watch.invariants`, events are JSON lines
(:mod:`labcoat.watch.events`) and ranks are compared in :mod:`labcoat.watch.distributed`.

Names load on first use, so ``labcoat watch report`` and ``labcoat --help`` do not import torch.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from labcoat._lazy import lazy

#: public name -> "module:attribute", imported on first access
_LAZY: dict[str, str] = {
    "Alert": "labcoat.watch.alerts:Alert",
    "merge_alerts": "labcoat.watch.alerts:merge_alerts",
    "EventLog": "labcoat.watch.events:EventLog",
    "read_alerts": "labcoat.watch.events:read_alerts",
    "read_events": "labcoat.watch.events:read_events",
    "read_series": "labcoat.watch.events:read_series",
    "INVARIANTS": "labcoat.watch.invariants:INVARIANTS",
    "Invariant": "labcoat.watch.invariants:Invariant",
    "Violation": "labcoat.watch.invariants:Violation",
    "CrossRank": "labcoat.watch.sample:CrossRank",
    "Sample": "labcoat.watch.sample:Sample",
    "WatchContext": "labcoat.watch.sample:WatchContext",
    "Evaluation": "labcoat.watch.evaluation:Evaluation",
    "EvalResult": "labcoat.watch.evaluation:EvalResult",
    "EvalSummary": "labcoat.watch.evaluation:EvalSummary",
    "Estimator": "labcoat.watch.evaluation:Estimator",
    "AnytimeMean": "labcoat.watch.evaluation:AnytimeMean",
    "ITEM_KIND": "labcoat.watch.events:ITEM_KIND",
    "DEFAULT_EVERY": "labcoat.watch.watcher:DEFAULT_EVERY",
    "DEFAULT_SYNC_EVERY": "labcoat.watch.watcher:DEFAULT_SYNC_EVERY",
    "Watcher": "labcoat.watch.watcher:Watcher",
    "WatchReport": "labcoat.watch.result:WatchReport",
    "watch": "labcoat.watch.watcher:watch",
}

__all__ = sorted(_LAZY)


__getattr__, __dir__ = lazy("labcoat.watch", _LAZY)


class _CallableModule(types.ModuleType):
    """``labcoat.watch`` is both this package and the function that starts a watch.

    Importing any submodule (``from labcoat.watch import Alert``) makes the package the value
    of ``labcoat.watch``, which would shadow the function; making the package callable keeps
    ``labcoat.watch(model, optimizer)`` working either way.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return __getattr__("watch")(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
