"""``labcoat.check_resume``: does a resumed run continue the run it resumes?

Call it after your resume code ran (``model.load_state_dict(...)``, ``optimizer.load_state_dict
(...)``, ...), with the checkpoint it read. It runs the doctor's ``update.resume.*`` checks and
returns a doctor :class:`~labcoat.doctor.result.Diagnosis`; nothing is changed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping

from labcoat.errors import InputError


@dataclass
class _Resumed:
    """What the resume checks read: the objects after the resume and the checkpoint."""

    resume: Any


def load_checkpoint(checkpoint: Any) -> Mapping[str, Any]:
    """A checkpoint dict, or the one a path holds (read on the CPU, tensors only)."""
    import torch

    if isinstance(checkpoint, (str, os.PathLike)):
        try:
            checkpoint = torch.load(checkpoint, map_location="cpu", weights_only=True)
        except FileNotFoundError:
            raise InputError(f"checkpoint: no file {os.fspath(checkpoint)!r}") from None
        except Exception as exc:  # noqa: BLE001 - a pickle beyond tensors and plain values
            raise InputError(
                f"checkpoint: {os.fspath(checkpoint)!r} could not be read with weights_only=True "
                f"({type(exc).__name__}); load it yourself and pass the dict"
            ) from None
    if not isinstance(checkpoint, Mapping):
        raise InputError(
            f"checkpoint: expected a dict (as torch.save wrote it) or a path; got "
            f"{type(checkpoint).__name__}"
        )
    return checkpoint


#: batches of ``data`` the loss check reads
RESUME_BATCHES = 8


def _batches(data: Any) -> list[tuple[Any, Any]] | None:
    """Up to :data:`RESUME_BATCHES` ``(inputs, targets)`` tensor pairs from ``data``."""
    import itertools

    import torch

    if data is None:
        return None

    def pair(batch: Any) -> tuple[Any, Any] | None:
        if isinstance(batch, (tuple, list)) and len(batch) == 2:
            if all(isinstance(t, torch.Tensor) for t in batch) and len(batch[0]) == len(batch[1]):
                return batch[0], batch[1]
        return None

    one = pair(data)
    if one is not None:
        return [one]
    try:
        taken = list(itertools.islice(iter(data), RESUME_BATCHES))
    except TypeError:
        taken = []
    batches = [pair(b) for b in taken]
    if not batches or any(b is None for b in batches):
        raise InputError(
            "data: expected an (inputs, targets) pair of tensors or an iterable of them (a "
            f"DataLoader); got {type(data).__name__}"
        )
    return batches  # type: ignore[return-value]


def check_resume(
    model: Any,
    optimizer: Any = None,
    scheduler: Any = None,
    checkpoint: Any = None,
    *,
    data: Any = None,
    loss_fn: Any = None,
    ledger: Any = None,
) -> Any:
    """Check that ``model`` (and ``optimizer``, ``scheduler``) as your resume code left them
    hold what ``checkpoint`` (a dict or a path) holds: every parameter and buffer, the
    optimizer's moments and step counts, the scheduler's position; with ``data`` (an
    ``(inputs, targets)`` batch or an iterable of them, as the resumed run reads them) and
    ``loss_fn``, that the model's loss there continues the loss the checkpoint recorded (under
    ``loss``). Returns a doctor Diagnosis whose findings are ``update.resume.model``,
    ``.optimizer``, ``.scheduler`` and ``.loss``; ``ledger`` as in :func:`labcoat.diagnose`
    (``False``: record nowhere)."""
    import torch
    from torch import nn

    from labcoat.doctor.checks import REGISTRY
    from labcoat.doctor.checks.resume import ResumeState
    from labcoat.doctor.result import Diagnosis
    from labcoat.findings import run_check

    if not isinstance(model, nn.Module):
        raise InputError(f"model: expected a torch.nn.Module; got {type(model).__name__}")
    if optimizer is not None and not isinstance(optimizer, torch.optim.Optimizer):
        raise InputError(f"optimizer: expected a torch optimizer; got {type(optimizer).__name__}")
    if scheduler is not None and not callable(getattr(scheduler, "state_dict", None)):
        raise InputError(f"scheduler: expected an LR scheduler; got {type(scheduler).__name__}")
    if checkpoint is None:
        raise InputError("checkpoint: pass the checkpoint (a dict or a path) the resume read")
    if (data is None) != (loss_fn is None):
        raise InputError("data and loss_fn: pass both (the loss check needs the two) or neither")
    if loss_fn is not None and not callable(loss_fn):
        raise InputError(f"loss_fn: expected a callable; got {type(loss_fn).__name__}")
    state = ResumeState(
        model, optimizer, scheduler, load_checkpoint(checkpoint), _batches(data), loss_fn
    )
    target = _Resumed(state)
    findings = [run_check(c, target) for c in REGISTRY if c.id.startswith("update.resume.")]
    report = Diagnosis(findings, ["update"])
    report.record(ledger)
    return report
