"""Accelerate-style loops: ``accelerator.prepare``d model, optimizer and loader in a hand loop.

The prepared objects are the user's own (``AcceleratedOptimizer.state_dict`` is the wrapped
optimizer's; a ``DataLoaderShard`` is a DataLoader, so ``rec.loop`` skips its batches as any
other's, and fetches the one it loaded ahead from its recorded RNG states). What the hand loop
does not see is the ``Accelerator``'s own count of
``accumulate()`` calls, which decides on which batches gradients sync and the optimizer steps:
a replay that started it at 0 from a checkpoint inside an accumulation would step on the
wrong batches. So every ``Accelerator`` alive when the block begins (or made inside it) has
its ``step`` and its GradScaler checkpointed and restored with the rest.
"""

from __future__ import annotations

import gc
import sys
import weakref
from typing import TYPE_CHECKING, Any

from labcoat.replay.integrations.hooks import Patch

if TYPE_CHECKING:
    from labcoat.replay.record import Recorder


def attach(rec: "Recorder") -> list[Patch]:
    module = sys.modules.get("accelerate.accelerator")
    if module is None:
        return []
    cls = module.Accelerator
    # type(), not isinstance: some objects warn when their __class__ is read (torch's
    # deprecated reduce_op)
    extra = Accelerators([o for o in gc.get_objects() if issubclass(type(o), cls)])
    rec.extras["accelerate"] = extra

    def make(init: Any) -> Any:
        def recorded_init(self: Any, *args: Any, **kwargs: Any) -> None:
            init(self, *args, **kwargs)
            extra.add(self)

        return recorded_init

    return [Patch(cls, "__init__", make)]


class Accelerators:
    """The Accelerators' state beyond the prepared objects (``Recorder.extras``)."""

    def __init__(self, found: list[Any]):
        self.refs: list[Any] = []
        for acc in found:
            self.add(acc)

    def add(self, acc: Any) -> None:
        if all(r() is not acc for r in self.refs):
            self.refs.append(weakref.ref(acc))

    def alive(self) -> list[Any]:
        return [a for a in (r() for r in self.refs) if a is not None]

    def state_dict(self) -> list[dict[str, Any]]:
        out = []
        for acc in self.alive():
            scaler = getattr(acc, "scaler", None)
            out.append(
                {
                    "step": int(getattr(acc, "step", 0)),
                    "scaler": None if scaler is None else scaler.state_dict(),
                }
            )
        return out

    def load_state_dict(self, state: list[dict[str, Any]]) -> None:
        alive = self.alive()
        if len(alive) != len(state):
            import warnings

            warnings.warn(
                f"labcoat replay: the recording checkpointed {len(state)} accelerate."
                f"Accelerator(s), the script now has {len(alive)}: their step counters are "
                "restored in the order they were made, which may pair them wrongly",
                RuntimeWarning,
                stacklevel=2,
            )
        for acc, saved in zip(alive, state):
            acc.step = saved["step"]
            if saved["scaler"] is not None and getattr(acc, "scaler", None) is not None:
                acc.scaler.load_state_dict(saved["scaler"])
