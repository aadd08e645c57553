"""Training fresh copies of the user's setup for the controls.

Every run uses the user's model, optimizer settings, loss and train step on a fresh copy; only
the data differs (a tiny fixed batch, shuffled labels, random tokens). Runs are seeded, so a
doctor run is reproducible and copies that differ only in their labels see the same batches.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch import nn

from labcoat.doctor.copies import Setup
from labcoat.doctor.inputs import Examples
from labcoat.optim import lr_value

#: examples per forward pass when scoring held-out data
EVAL_CHUNK = 512


def predict(case: Any, model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """Eval-mode outputs for ``x``, in chunks, on the CPU."""
    model.eval()
    outs = [case.forward(model, x[i : i + EVAL_CHUNK]).cpu() for i in range(0, len(x), EVAL_CHUNK)]
    return torch.cat(outs)


def scalar_loss(loss: Any) -> float | None:
    """The float a train step returned, or None when it returned something else."""
    if isinstance(loss, torch.Tensor) and loss.numel() == 1:
        return float(loss.detach())
    if isinstance(loss, (int, float)):
        return float(loss)
    return None


@dataclass
class Curve:
    """Loss on a fixed batch before training (index 0) and after each step."""

    losses: list[float] = field(default_factory=list)
    fitted: list[int] = field(default_factory=list)  # examples fitted, same indexing
    #: the first param group's learning rate before training and after the last step: a
    #: scheduler the step drives can take it to zero long before the run ends
    lr: tuple[float, float] | None = None

    @property
    def steps(self) -> int:
        return max(0, len(self.losses) - 1)

    def summary(self) -> dict[str, Any]:
        finite = [l for l in self.losses if math.isfinite(l)]
        out: dict[str, Any] = {
            "steps": self.steps,
            "first_loss": self.losses[0] if self.losses else float("nan"),
            "last_loss": self.losses[-1] if self.losses else float("nan"),
            "min_loss": min(finite) if finite else float("nan"),
            "loss_curve": _thin(self.losses),
        }
        if self.fitted:
            out["fitted_curve"] = _thin(self.fitted)
        if self.lr is not None:
            out["lr_first"], out["lr_last"] = self.lr
        return out

    @property
    def lr_collapsed(self) -> bool:
        """True when the learning rate ended below 1% of where it started."""
        return self.lr is not None and self.lr[0] > 0 and self.lr[1] < 0.01 * self.lr[0]


def _thin(values: list, points: int = 12) -> list:
    """At most ``points`` values spread over the curve, first and last included."""
    if len(values) <= points:
        return list(values)
    picks = sorted({round(i * (len(values) - 1) / (points - 1)) for i in range(points)})
    return [values[i] for i in picks]


def fit_batch(
    case: Any,
    batch: Examples,
    *,
    max_steps: int,
    evaluate: Callable[[torch.Tensor], tuple[float, int | None]],
    done: Callable[[Curve], bool],
    advance: Callable[..., None],
    lr_scale: float = 1.0,
) -> Curve:
    """Call the user's step on one fixed batch until ``done`` says so or ``max_steps`` updates
    pass; ``lr_scale`` multiplies the copy's learning rates (the user's own stay as they are).

    ``evaluate`` turns eval-mode outputs on the batch into (loss, examples fitted); ``done`` reads
    the curve so far and says whether to stop. The curve gets a point after each call that
    updated the parameters, so a step accumulating gradients over k calls is called k times per
    point.
    """
    torch.manual_seed(case.seed)
    setup = case.blueprint.fresh()
    for group in setup.optimizer.param_groups:
        if lr_scale != 1.0 and "lr" in group:
            group["lr"] = group["lr"] * lr_scale
    step = case.fresh_step(setup)
    x, y = case.on_device(batch.batch())
    curve = Curve()
    updates = UpdateCounter(setup.optimizer)

    def record() -> bool:
        loss, n_fitted = evaluate(predict(case, setup.model, x))
        curve.losses.append(loss)
        if n_fitted is not None:
            curve.fitted.append(n_fitted)
        return not math.isfinite(loss) or done(curve)

    first_lr = lr_value(setup.optimizer.param_groups[0].get("lr"))
    if record():
        return curve
    with updates:
        for _ in range(max_steps * case.calls_per_update):
            setup.model.train()
            seen = updates.count
            step(setup.model, (x, y), setup.optimizer, case.loss_fn)
            if updates.count == seen:
                continue
            advance()
            if record() or curve.steps >= max_steps:
                break
    last_lr = lr_value(setup.optimizer.param_groups[0].get("lr"))
    if first_lr is not None and last_lr is not None:
        curve.lr = (first_lr, last_lr)
    return curve


class UpdateCounter:
    """Counts ``optimizer.step()`` calls inside a ``with`` block (an optimizer hook), so that a
    loop can tell the calls of a train step that updated from those that only accumulated."""

    def __init__(self, optimizer: torch.optim.Optimizer):
        self.optimizer = optimizer
        self.count = 0
        self._handle: Any = None

    def _seen(self, *_: Any) -> None:
        self.count += 1

    def __enter__(self) -> "UpdateCounter":
        self._handle = self.optimizer.register_step_post_hook(self._seen)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._handle.remove()


def batch_order(n: int, steps: int, batch_size: int, seed: int) -> list[torch.Tensor]:
    """Row indices of each minibatch: epochs of seeded permutations."""
    gen = torch.Generator().manual_seed(seed)
    size = min(batch_size, n)
    rows: list[torch.Tensor] = []
    while len(rows) < steps:
        perm = torch.randperm(n, generator=gen)
        rows.extend(perm[i : i + size] for i in range(0, n - size + 1, size))
    return rows[:steps]


@dataclass
class Run:
    """A copy trained by :func:`train_copy`."""

    setup: Setup
    losses: list[float | None]
    diverged: bool = False


def train_copy(
    case: Any,
    examples: Examples,
    *,
    order: list[torch.Tensor],
    seed: int,
    advance: Callable[..., None],
    step_for: Callable[[Setup], Callable] | None = None,
) -> Run:
    """Train a fresh copy with the user's step on ``examples``, one call of the step per entry of
    ``order`` (callers make ``order`` ``case.calls_per_update`` times their effort in updates).
    ``step_for(setup)``: the step to train with instead of ``case.fresh_step(setup)``."""
    torch.manual_seed(seed)
    setup = case.blueprint.fresh()
    step = (case.fresh_step if step_for is None else step_for)(setup)
    losses: list[float | None] = []
    for rows in order:
        setup.model.train()
        x, y = case.on_device((examples.x[rows], examples.y[rows]))
        loss = scalar_loss(step(setup.model, (x, y), setup.optimizer, case.loss_fn))
        losses.append(loss)
        advance()
        if loss is not None and not math.isfinite(loss):
            advance(len(order) - len(losses))
            return Run(setup, losses, diverged=True)
    return Run(setup, losses)
