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


def check_resume(
    model: Any,
    optimizer: Any = None,
    scheduler: Any = None,
    checkpoint: Any = None,
    *,
    ledger: Any = None,
) -> Any:
    """Check that ``model`` (and ``optimizer``, ``scheduler``) as your resume code left them
    hold what ``checkpoint`` (a dict or a path) holds: every parameter and buffer, the
    optimizer's moments and step counts, the scheduler's position. Returns a doctor Diagnosis whose
    findings are ``update.resume.model``, ``.optimizer`` and ``.scheduler``; ``ledger`` as in
    :func:`labcoat.diagnose` (``False``: record nowhere)."""
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
    state = ResumeState(model, optimizer, scheduler, load_checkpoint(checkpoint))
    target = _Resumed(state)
    findings = [run_check(c, target) for c in REGISTRY if c.id.startswith("update.resume.")]
    report = Diagnosis(findings, ["update"])
    report.record(ledger)
    return report
