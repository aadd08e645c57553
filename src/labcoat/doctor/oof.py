"""Out-of-fold class probabilities for a PyTorch setup, so confident learning gets
out-of-sample predictions without the user writing a cross-validation loop.

Each of K copies of the user's model (fresh from the doctor's :class:`Blueprint`, trained with
the user's loss, optimizer settings and step) sees K-1 folds, stops when its loss on a held-out
tenth of them stops improving, keeps its best weights and predicts the fold it never saw.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from labcoat._validation import check_int
from labcoat.errors import InputError

BATCH_SIZE = 32
MAX_EPOCHS = 100
#: epochs without a better held-out loss before a copy stops
PATIENCE = 3
#: share of the training folds held out to decide when to stop
STOP_FRACTION = 0.1


@dataclass
class OutOfFold:
    """Probabilities for every row of the setup's data, each from a copy that did not train on "
    "it."""

    probs: np.ndarray
    labels: np.ndarray
    rows: np.ndarray  # the row of the user's data each entry belongs to (ascending)
    epochs: list[int] = field(default_factory=list)  # epochs each copy trained (best epoch)
    held_out_loss: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {
            "folds": len(self.epochs),
            "best_epoch": self.epochs,
            "held_out_loss": self.held_out_loss,
        }


def out_of_fold(
    experiment: Any,
    *,
    folds: int = 5,
    seed: int = 0,
    progress: bool | None = None,
    max_epochs: int = MAX_EPOCHS,
    patience: int = PATIENCE,
    batch_size: int = BATCH_SIZE,
) -> OutOfFold:
    """Train ``folds`` copies of ``experiment``'s setup and collect their held-out probabilities."""
    import torch
    from sklearn.model_selection import StratifiedKFold

    from labcoat.doctor.case import Case
    from labcoat.doctor.copies import Blueprint
    from labcoat.doctor.inputs import split_off, to_examples
    from labcoat.doctor.progress import ControlProgress

    if not all(hasattr(experiment, a) for a in ("model", "data", "loss_fn", "optimizer")):
        raise InputError(
            f"setup: expected labcoat.Experiment(...); got {type(experiment).__name__}"
        )
    check_int(folds, "folds", minimum=2)
    examples = to_examples(experiment.data, name="data", limit=sys.maxsize)
    y = examples.y
    if y.ndim != 1 or torch.is_floating_point(y):
        raise InputError(
            f"data: auditing labels needs one integer class per example; got {y.dtype} targets of "
            f"shape {tuple(y.shape)}"
        )
    counts = np.bincount(y.numpy())
    present = counts[counts > 0]
    if present.size < 2 or present.min() < folds:
        raise InputError(
            f"folds: every class needs at least {folds} examples for {folds}-fold training; the "
            f"rarest has {int(present.min())}; lower --folds"
        )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        case = Case(
            blueprint=Blueprint(experiment.model, experiment.optimizer),
            train=examples,
            val=examples,
            loss_fn=experiment.loss_fn,
            step=experiment.step,
            seed=seed,
            progress=ControlProgress.resolve(progress),
        )
        probs: np.ndarray | None = None
        epochs, losses = [], []
        splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
        for k, (fit_rows, test_rows) in enumerate(splitter.split(np.zeros(len(y)), y.numpy())):
            fit, stop = split_off(examples.take(fit_rows), STOP_FRACTION, seed + k)
            model, best_epoch, best_loss = _train_until_stale(
                case,
                fit,
                stop,
                seed=seed + k,
                fold=k,
                folds=folds,
                max_epochs=max_epochs,
                patience=patience,
                batch_size=batch_size,
            )
            fold_probs = _probabilities(case, model, examples.take(test_rows).x, experiment.loss_fn)
            if probs is None:
                probs = np.zeros((len(y), fold_probs.shape[1]))
            if fold_probs.shape[1] != probs.shape[1]:
                raise InputError("model: its number of outputs changed between folds")
            probs[test_rows] = fold_probs
            epochs.append(best_epoch)
            losses.append(best_loss)
    assert probs is not None
    order = np.argsort(examples.index.numpy(), kind="stable")  # rows of a shuffling loader
    return OutOfFold(probs[order], y.numpy()[order], examples.index.numpy()[order], epochs, losses)


def _train_until_stale(case, fit, stop, *, seed, fold, folds, max_epochs, patience, batch_size):
    """Train one fresh copy epoch by epoch; keep the weights of its best held-out loss."""
    import copy

    import torch

    from labcoat.doctor.training import batch_order, predict, scalar_loss

    torch.manual_seed(seed)
    setup = case.blueprint.fresh()
    step = case.fresh_step(setup)
    per_epoch = max(1, len(fit) // min(batch_size, len(fit)))
    order = batch_order(len(fit), per_epoch * max_epochs, batch_size, seed)
    best_loss, best_epoch, best_state, stale = (
        math.inf,
        0,
        copy.deepcopy(setup.model.state_dict()),
        0,
    )
    with case.progress.task(f"audit: fold {fold + 1}/{folds}", total=len(order)) as advance:
        for epoch in range(1, max_epochs + 1):
            for rows in order[(epoch - 1) * per_epoch : epoch * per_epoch]:
                setup.model.train()
                x, y = case.on_device((fit.x[rows], fit.y[rows]))
                loss = scalar_loss(step(setup.model, (x, y), setup.optimizer, case.loss_fn))
                advance()
                if loss is not None and not math.isfinite(loss):
                    raise InputError(
                        f"setup: training diverged in fold {fold + 1} (loss {loss}); lower the "
                        "learning rate"
                    )
            with torch.no_grad():
                out = predict(case, setup.model, stop.x)
                held_out = float(case.loss_fn(out, stop.y.to(out.device)))
            if held_out < best_loss and (
                math.isinf(best_loss) or held_out < best_loss - 1e-6 * abs(best_loss)
            ):
                best_loss, best_epoch, stale = held_out, epoch, 0
                best_state = copy.deepcopy(setup.model.state_dict())
            else:
                stale += 1
                if stale >= patience:
                    advance(len(order) - epoch * per_epoch)
                    break
    setup.model.load_state_dict(best_state)
    return setup.model, best_epoch, best_loss


def _probabilities(case, model, x, loss_fn) -> np.ndarray:
    """Class probabilities from the model's outputs: softmax of logits, exp of log-probabilities
    under NLLLoss, a sigmoid for one logit under BCEWithLogitsLoss."""
    import torch
    from torch import nn

    from labcoat.doctor.training import predict

    out = predict(case, model, x).double()
    if out.ndim == 2 and out.shape[1] == 1 or out.ndim == 1:
        p = torch.sigmoid(out.reshape(-1))
        return torch.stack([1 - p, p], dim=1).numpy()
    if out.ndim != 2:
        raise InputError(
            "model: expected (N, classes) outputs to turn into probabilities; got shape "
            f"{tuple(out.shape)}"
        )
    if isinstance(loss_fn, nn.NLLLoss):
        return torch.exp(out).numpy()
    return torch.softmax(out, dim=1).numpy()
