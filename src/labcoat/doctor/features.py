"""Views of the inputs that the data layer's statistics need."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

from labcoat.doctor.inputs import row_hashes

if TYPE_CHECKING:
    from labcoat.doctor.case import Case

__all__ = ["flat", "inputs_are_ids", "not_features", "row_hashes"]


def inputs_are_ids(case: "Case") -> bool:
    """Integer inputs feeding an embedding are token ids, not numeric features."""
    if torch.is_floating_point(case.train.x):
        return False
    if case.inferred_task == "sequence":
        return True
    return any(
        isinstance(m, nn.Embedding | nn.EmbeddingBag) for m in case.blueprint.model.modules()
    )


def not_features(case: "Case") -> str | None:
    """Reason to skip a feature statistic, or None when the inputs are numeric features."""
    if inputs_are_ids(case):
        return "inputs are token ids, not numeric features"
    return None


def flat(x: torch.Tensor) -> np.ndarray:
    """One row of float64 features per example."""
    return x.reshape(len(x), -1).double().numpy()
