"""What the doctor can tell from the loss a user passes.

PyTorch's own losses declare things some checks need: whether they take probabilities or
logits, whether they score each target value as an independent yes/no, and which target value
they skip (``ignore_index``). A ``functools.partial`` of one is read through; any other callable
gets PyTorch's defaults, and the checks that need more fall back to what the data shows.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from torch import nn
from torch.nn import functional as F

#: the target value cross-entropy and NLL losses skip unless told otherwise (padding, unlabelled)
DEFAULT_IGNORE_INDEX = -100

_PROBABILITY_LOSSES = (nn.BCELoss, F.binary_cross_entropy)
_BINARY_LOSSES = (
    nn.BCELoss,
    nn.BCEWithLogitsLoss,
    F.binary_cross_entropy,
    F.binary_cross_entropy_with_logits,
)


def _unwrapped(loss_fn: Callable) -> Any:
    while isinstance(loss_fn, functools.partial):
        loss_fn = loss_fn.func
    return loss_fn


def _is_one_of(loss_fn: Callable, known: tuple) -> bool:
    fn = _unwrapped(loss_fn)
    classes = tuple(k for k in known if isinstance(k, type))
    return isinstance(fn, classes) or any(fn is k for k in known if not isinstance(k, type))


def takes_probabilities(loss_fn: Callable) -> bool:
    """True for ``nn.BCELoss`` and ``F.binary_cross_entropy``, the losses documented to take
    probabilities."""
    return _is_one_of(loss_fn, _PROBABILITY_LOSSES)


def scores_binary_targets(loss_fn: Callable) -> bool:
    """True for the binary cross-entropy losses: each target value is its own yes/no question."""
    return _is_one_of(loss_fn, _BINARY_LOSSES)


def ignore_index(loss_fn: Callable) -> int:
    """The class label the loss skips: its ``ignore_index`` (an attribute of ``nn.CrossEntropyLoss``
    and ``nn.NLLLoss``, or a keyword of a ``functools.partial``), else PyTorch's default of -100."""
    while isinstance(loss_fn, functools.partial):
        if "ignore_index" in loss_fn.keywords:
            return int(loss_fn.keywords["ignore_index"])
        loss_fn = loss_fn.func
    value = getattr(loss_fn, "ignore_index", None)
    return DEFAULT_IGNORE_INDEX if value is None else int(value)


def skipped_labels(loss_fn: Callable, outputs: list[Any], y: Any, labels: list[int]) -> list[int]:
    """Those of ``labels`` the loss gives no gradient: with every target set to the label, the
    gradient is zero or the loss is not finite (a mean over no scored target) at each of
    ``outputs`` (the model's own, whose confident classes saturate, and a neutral one). Read off
    what the loss does, so a plain function that passes ``ignore_index`` is read too."""
    import torch

    def skips(out: Any, label: int) -> bool:
        scored = out.detach().clone().requires_grad_(True)
        with torch.enable_grad():
            loss = loss_fn(scored, torch.full_like(y, label))
            if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
                return False
            if not bool(torch.isfinite(loss)):
                return True
            (grad,) = torch.autograd.grad(loss, scored, allow_unused=True)
        return grad is None or not bool(grad.any())

    return [label for label in labels if all(skips(out, label) for out in outputs)]


def takes_labels_past_outputs(loss_fn: Callable, out: Any, y: Any, labels: list[int]) -> bool:
    """Whether the loss gives a finite value, one the label changes, when targets carry
    ``labels``, which lie outside the ``out.shape`` classes. A loss that indexes the outputs by
    class (cross-entropy, NLL, a gather or a one-hot) raises on such a label, so one that takes
    it reads labels another way: ordinal ranks as CORAL-style losses read them, with one logit
    fewer than there are ranks. Tried on the CPU: on an accelerator, an index past the outputs
    is a device-side assert that no ``except`` catches and that breaks every later call (a
    loss holding accelerator tensors then raises, and the labels count as class indices)."""
    import torch

    out, y = out.detach().cpu(), y.cpu()

    def value(label: int) -> float | None:
        try:
            with torch.no_grad():
                loss = loss_fn(out, torch.full_like(y, label))
        except (IndexError, RuntimeError, ValueError):
            return None
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
            return None
        v = float(loss)
        return v if torch.isfinite(loss) else None

    inside = value(0)
    past = [value(label) for label in labels]
    return inside is not None and all(v is not None and v != inside for v in past)
