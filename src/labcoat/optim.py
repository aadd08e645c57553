"""Reading an optimizer's settings one way, for the doctor and the watch alike."""

from __future__ import annotations

import math
from typing import Any

import torch


def lr_value(lr: Any) -> float | None:
    """A param group's learning rate as a float: a tensor learning rate (capturable optimizers)
    read as a number, and None where there is none or it is not finite."""
    if type(lr) is float:  # the usual case first
        return lr if math.isfinite(lr) else None
    if lr is None:
        return None
    try:
        value = float(lr.detach().reshape(()).cpu()) if isinstance(lr, torch.Tensor) else float(lr)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None
