"""Recording the stacks people train with: the Lightning Trainer, the Hugging Face Trainer and
Accelerate-prepared loops.

``with labcoat.replayable(...) as rec:`` hooks, for the length of the block, every framework whose
module is already imported: ``Trainer.fit`` (Lightning) and ``Trainer.train`` (Hugging Face)
add a callback of labcoat's for that call (the watch's way: :mod:`labcoat.watch.integrations`),
and every ``accelerate.Accelerator`` alive has its step counter and scaler checkpointed. A
trainer's training batches (Lightning) or optimizer steps (Hugging Face) are the recorder's steps
(:class:`~labcoat.replay.integrations.driver.StepDriver`); a replay lets the trainer resume
its own counters at the checkpoint, and restores everything else (weights, optimizer,
scheduler, scaler, every RNG, the data's position) itself, at the same hook it was taken at.

Where nothing was recorded (no ``rec.loop`` entered, no trainer hook fired), the end of the
block says so (:func:`warn_unrecorded`).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from labcoat.replay.integrations.hooks import NothingRecorded, NotHooked, Patch, not_hooked

__all__ = [
    "NotHooked",
    "NothingRecorded",
    "Patch",
    "attach",
    "detach",
    "not_hooked",
    "warn_unrecorded",
]

if TYPE_CHECKING:
    from labcoat.replay.record import Recorder


def attach(rec: "Recorder") -> list[Any]:
    """Hook the imported frameworks for ``rec``'s block; returns what :func:`detach` undoes."""
    from labcoat.replay.integrations import accelerate, huggingface, lightning

    out: list[Any] = []
    for module in (lightning, huggingface, accelerate):
        out += module.attach(rec)
    return out


def detach(attached: list[Any] | None) -> None:
    for patch in reversed(attached or []):
        patch.undo()


def warn_unrecorded(rec: "Recorder") -> None:
    """Warn at the end of a block where no loop was entered and no trainer hook fired."""
    if rec._loops or rec.hooked:
        return
    warnings.warn(
        f"labcoat.replayable: run {rec.run_id} recorded 0 steps and no checkpoint: no rec.loop was "
        "entered and no trainer hook fired, so there is nothing to replay. Iterate the "
        'training loop with `for batch in rec.loop("step", loader):`; a Lightning '
        "Trainer.fit or a Hugging Face Trainer.train is recorded when it runs inside the block "
        "and its package (lightning, transformers) was imported before the block began",
        NothingRecorded,
        stacklevel=3,
    )
