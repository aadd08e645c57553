"""What perfect and input-blind predictions look like, in the model's own output layout.

The controls judge a trained copy against two references, computed with the user's own loss
and metric rather than with formulas that assume one: the best output a model could give on a
batch (the *floor*) and the best output that ignores the inputs (*chance*: the majority class,
the marginal distribution, the mean). Both come from counting targets per *context*, i.e. what
a model may look at when it predicts a target: the whole input for a classifier, the prefix up
to position t for a causal sequence model. Identical contexts with different targets cannot
all be fitted, and the counts say exactly how well they can be.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch
from torch.nn import functional as F

from labcoat.doctor.case import ProbeFailed
from labcoat.doctor.features import row_hashes
from labcoat.doctor.losses import skipped_labels, takes_probabilities

#: probabilities below this become this in log space, so no output is infinite
_EPS = 1e-9


@dataclass(frozen=True)
class Layout:
    """How a model's output relates to its targets."""

    task: str  # "classification" | "regression" | "sequence"
    n_outputs: int | None  # classes or vocabulary size; None for regression
    takes_probabilities: bool = False  # a single-logit model feeding nn.BCELoss
    # sequences: output t is scored against target t + shift (1: the loss shifts labels itself)
    shift: int = 0
    # labels the model can output that the loss gives no gradient (its ignore_index, when that
    # is a pad id inside the vocabulary): targets carrying them are not scored
    skipped: tuple[int, ...] = ()

    @property
    def categorical(self) -> bool:
        return self.task != "regression"

    @property
    def n_classes(self) -> int:
        """Distinct target values: a single logit scores two."""
        return 2 if self.n_outputs == 1 else int(self.n_outputs or 0)


def layout_of(case: Any) -> Layout:
    """The layout of a doctor case; for sequences, the shift is read off the user's loss; the
    labels the loss skips are read off what it does."""
    layout = Layout(case.inferred_task, case.n_outputs, takes_probabilities(case.loss_fn))
    if layout.categorical:
        layout = dataclasses.replace(layout, skipped=tuple(labels_the_loss_skips(case)))
    if layout.task != "sequence":
        return layout
    shift = case.probe_once(
        "loss shift", lambda: loss_shift(case.loss_fn, case.probe_batch.y, case.output, layout)
    )
    return dataclasses.replace(layout, shift=shift)


#: labels tried for being skipped by the loss: the most frequent ones (padding is frequent)
SKIP_PROBE_LABELS = 64


def labels_the_loss_skips(case: Any) -> list[int]:
    """Of the most frequent training labels the model can output, those the loss gives no
    gradient (read off what it does, so a plain function passing ``ignore_index`` counts); none
    when it skips every one (nothing then tells them apart) or cannot be asked."""
    probe = skip_probe(case)
    if isinstance(probe, str):
        return []
    tried, found = probe
    return [] if len(found) == len(tried) else found


def skip_probe(case: Any) -> tuple[list[int], list[int]] | str:
    """The labels tried and those the loss skips, or why they cannot be tried (run once)."""
    return case.probe_once("labels the loss skips", lambda: _skip_probe(case))


def _skip_probe(case: Any) -> tuple[list[int], list[int]] | str:
    y = case.train.y
    if torch.is_floating_point(y):
        return "float targets: there is no label for the loss to skip"
    try:
        n_out, out = case.n_outputs, case.output
    except ProbeFailed as exc:
        return f"needs the model's output, but {exc}; see the model layer"
    limit = 2 if n_out == 1 else int(n_out or 0)
    values, counts = torch.unique(y, return_counts=True)
    inside = (values >= 0) & (values < limit)
    values, counts = values[inside], counts[inside]
    if len(values) < 2:
        return "fewer than two labels the model can output"
    tried = values[counts.argsort(descending=True)][:SKIP_PROBE_LABELS].tolist()
    # a confident model saturates: a class it is sure of gets no gradient from its own output
    uniform = torch.full_like(out, -float(np.log(max(limit, 2))))
    try:
        found = skipped_labels(
            case.loss_fn, [out, uniform], case.probe_batch.y.to(out.device), tried
        )
    except Exception as exc:  # noqa: BLE001 - the model layer reports a loss that raises
        return f"the loss raised {type(exc).__name__} (see model.loss.scalar)"
    return tried, found


def aligned(y: torch.Tensor, layout: Layout) -> torch.Tensor:
    """Targets moved to the output position they are scored at; positions scored against nothing
    get a label no output can have, so they count as padding."""
    if not layout.shift:
        return y
    out = torch.full_like(y, -1)
    out[:, : -layout.shift] = y[:, layout.shift :]
    return out


def loss_shift(loss_fn: Callable, y: torch.Tensor, like: torch.Tensor, layout: Layout) -> int:
    """1 when the loss scores output t against target t + 1 (it shifts the labels itself, as in
    Hugging Face's causal LMs, whose labels are the inputs), else 0: whichever alignment of
    outputs that are certain of each target the loss scores lower."""
    n = layout.n_classes
    losses = []
    for shift in (0, 1):
        candidate = dataclasses.replace(layout, shift=shift)
        targets = aligned(y, candidate)
        probs = F.one_hot(targets.long().clamp(0, n - 1), n).double()
        probs[~valid_targets(targets, candidate)] = 1.0 / n
        try:
            with torch.no_grad():
                losses.append(
                    float(
                        loss_fn(
                            to_output(probs.clamp_min(_EPS).log(), like, candidate),
                            y.to(like.device),
                        )
                    )
                )
        except Exception:  # noqa: BLE001 - a loss that cannot take one alignment does not use it
            losses.append(math.inf)
    return 1 if losses[1] < losses[0] else 0


def incomparable(case: Any) -> str | None:
    """Why the controls cannot pair the model's outputs with its targets, or None when they can.

    Regression outputs are compared with targets through the user's loss. An output holding
    another number of values than the targets is fine where the loss takes it and is not a
    broadcast (quantile heads, K-1 ordinal logits for integer ranks); otherwise (an (N, 1) head
    for (N, 2) targets) it is model.forward's finding, and the references cannot be built.
    """
    if case.inferred_task != "regression":
        return None
    out, y = case.output, case.probe_batch.y
    if out.numel() == y.numel() or _loss_relates(case.loss_fn, out, y):
        return None
    return (
        f"the output {tuple(out.shape)} holds {out.numel()} values for {y.numel()} targets "
        f"{tuple(y.shape)}; the controls compare them one to one (see model.forward)"
    )


def _loss_relates(loss_fn: Callable, out: torch.Tensor, y: torch.Tensor) -> bool:
    """Whether the loss reads several output values per target: k values for each example's
    target (quantile heads, K-1 ordinal logits), and a finite loss on the batch. Fewer values
    than targets (an (N, 1) head for (N, 2) targets) is a broadcast, model.forward's finding."""
    if out.ndim < 2 or len(out) != len(y) or out[:1].numel() <= y[:1].numel():
        return False
    try:
        with torch.no_grad():
            loss = loss_fn(out, y.to(out.device))
    except Exception:  # noqa: BLE001 - a loss that raises on the pair does not relate them
        return False
    return isinstance(loss, torch.Tensor) and loss.numel() == 1 and bool(torch.isfinite(loss))


def valid_targets(y: torch.Tensor, layout: Layout) -> torch.Tensor:
    """Targets a classifier can be scored on (padding such as ``ignore_index=-100`` is not, nor
    a pad id inside the vocabulary that the loss skips)."""
    if not layout.categorical:
        return torch.ones_like(y, dtype=torch.bool)
    labels = y.long()
    valid = (labels >= 0) & (labels < layout.n_classes) & (labels == y)
    if layout.skipped:
        valid &= ~torch.isin(labels, torch.tensor(layout.skipped, device=labels.device))
    return valid


def contexts(x: torch.Tensor, y: torch.Tensor, layout: Layout) -> torch.Tensor:
    """An id per target element for what the model may look at when predicting it."""
    if layout.task == "sequence" and x.ndim >= 2 and y.ndim >= 2 and x.shape[:2] == y.shape[:2]:
        return _prefix_ids(x, y)
    rows = _ids(row_hashes(x))
    per_row = y[0].numel() if y.ndim > 1 else 1
    position = (
        torch.arange(per_row).reshape(y.shape[1:])
        if y.ndim > 1
        else torch.zeros((), dtype=torch.long)
    )
    return rows.reshape((-1,) + (1,) * (y.ndim - 1)) * per_row + position


def _ids(keys: list) -> torch.Tensor:
    seen: dict = {}
    return torch.tensor([seen.setdefault(k, len(seen)) for k in keys], dtype=torch.long)


def _prefix_ids(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Position t of row i gets the id of the prefix x[i, :t+1] (a causal model's whole view)."""
    seen: dict = {}
    out = torch.empty(y.shape[:2], dtype=torch.long)
    steps = x.reshape(x.shape[0], x.shape[1], -1).cpu().numpy()
    for i in range(x.shape[0]):
        prefix = -1
        for t in range(x.shape[1]):
            prefix = seen.setdefault((prefix, steps[i, t].tobytes()), len(seen))
            out[i, t] = prefix
    return out.reshape(out.shape + (1,) * (y.ndim - 2)).expand(y.shape)


def conditional_log_probs(ctx: torch.Tensor, y: torch.Tensor, layout: Layout) -> torch.Tensor:
    """log p(target | context) as counted in this batch; shape ``y.shape + (classes,)``.

    Predicting these is the best any model can do on the batch: a perfect fit where contexts
    are distinct, the empirical mix where identical contexts have different targets.
    """
    n = layout.n_classes
    valid = valid_targets(y, layout)
    labels = y.long()
    uniq, inverse = torch.unique(ctx[valid], return_inverse=True)
    counts = torch.zeros(len(uniq), n, dtype=torch.float64)
    counts.index_put_(
        (inverse, labels[valid]), torch.ones(len(inverse), dtype=torch.float64), accumulate=True
    )
    probs = torch.full(y.shape + (n,), 1.0 / n, dtype=torch.float64)
    probs[valid] = counts[inverse] / counts[inverse].sum(-1, keepdim=True)
    return probs.clamp_min(_EPS).log()


def marginal_log_probs(y: torch.Tensor, layout: Layout, shape: torch.Size | tuple) -> torch.Tensor:
    """log of the class frequencies in ``y``, repeated for targets of ``shape``. A classifier with
    several targets per example (multi-label, per-pixel) gets the frequencies at each target
    position, which an input-blind model can learn too; a sequence gets its token frequencies."""
    n = layout.n_classes
    valid = valid_targets(y, layout)
    if layout.task == "classification" and y.ndim > 1:
        counts = (F.one_hot(y.long().clamp(0, n - 1), n).double() * valid.unsqueeze(-1)).sum(dim=0)
        probs = counts / counts.sum(dim=-1, keepdim=True).clamp_min(1.0)
    else:
        counts = torch.bincount(y.long()[valid].reshape(-1), minlength=n)[:n].double()
        probs = counts / max(1.0, float(counts.sum()))
    return probs.clamp_min(_EPS).log().expand(tuple(shape) + (n,))


def to_output(
    log_probs: torch.Tensor, like: torch.Tensor, layout: Layout, temperature: float = 1.0
) -> torch.Tensor:
    """Class log-probabilities (``target shape + (classes,)``) as the model would output them.

    ``temperature`` < 1 flattens them; a loss with label smoothing is lowest somewhere below 1.
    """
    scaled = F.log_softmax(temperature * log_probs, dim=-1)
    if layout.n_outputs == 1:
        logit = (scaled[..., 1] - scaled[..., 0]).reshape(like.shape)
        out = torch.sigmoid(logit) if layout.takes_probabilities else logit
    elif layout.task == "sequence":
        out = scaled
    else:  # cross-entropy layout: classes on dim 1
        out = scaled.movedim(-1, 1) if scaled.ndim > 2 else scaled
    return out.to(dtype=like.dtype, device=like.device)


def regression_output(values: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``values`` as an output shaped like ``like``; zeros where it holds another number of
    values (quantile heads, K-1 ordinal logits: the loss alone relates them to the targets)."""
    if values.numel() != like.numel():
        return torch.zeros_like(like)
    return values.reshape(like.shape).to(dtype=like.dtype, device=like.device)


#: L-BFGS iterations when descending on an output to find the lowest value of a loss
DESCENT_STEPS = 50


def descend(
    loss_fn: Callable,
    start: torch.Tensor,
    target: torch.Tensor,
    output: Callable[[torch.Tensor], torch.Tensor] = lambda t: t,
) -> torch.Tensor:
    """``output(start)``, with ``start`` moved downhill on the user's loss by L-BFGS.

    Regression references assume nothing about the loss this way: output = target is already
    the lowest point of MSE, L1 and Huber losses (so nothing moves), but not of a loss on
    logits or log-probabilities given float targets, whose lowest point lies elsewhere.
    """
    param = start.detach().clone().requires_grad_(True)
    opt = torch.optim.LBFGS([param], max_iter=DESCENT_STEPS, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = loss_fn(output(param), target)
        loss.backward()
        return loss

    try:
        with torch.enable_grad():
            opt.step(closure)
        with torch.no_grad():
            better = bool(loss_fn(output(param), target) <= loss_fn(output(start), target))
    except Exception:  # noqa: BLE001 - a loss that cannot be differentiated in its output keeps the start
        better = False
    return output(param.detach() if better else start.detach()).detach()


def best_output(loss_fn: Callable, target: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """The output, shaped like ``like``, with the lowest loss on ``target`` (starting from the
    target itself)."""
    return descend(loss_fn, regression_output(target, like), target)


def best_blind_output(loss_fn: Callable, target: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """The output, shaped like ``like``, that is the same for every example and has the lowest
    loss on ``target`` (which may hold other examples), starting from the mean target."""
    rows = (len(target),) + tuple(like.shape[1:])
    if target[:1].numel() == like[:1].numel():
        mean = target.double().mean(dim=0, keepdim=True).expand(target.shape)
        start = mean.reshape(rows).to(dtype=like.dtype, device=like.device)[:1]
    else:  # an output the loss alone relates to the targets: start from zeros
        start = torch.zeros((1,) + tuple(like.shape[1:]), dtype=like.dtype, device=like.device)
    return descend(loss_fn, start, target, lambda row: row.expand(rows))[:1].expand(like.shape)


def lowest_loss(
    loss_fn: Callable, log_probs: torch.Tensor, y: torch.Tensor, like: torch.Tensor, layout: Layout
) -> float:
    """The user's loss for outputs built from ``log_probs``, at the best temperature in [0, 1]."""
    from scipy.optimize import minimize_scalar  # lazy: scipy.optimize takes ~0.3 s to import

    target = y.to(like.device)

    def loss_at(t: float) -> float:
        with torch.no_grad():
            return float(loss_fn(to_output(log_probs, like, layout, t), target))

    best = minimize_scalar(loss_at, bounds=(0.0, 1.0), method="bounded", options={"xatol": 1e-3})
    candidates = [loss_at(1.0), loss_at(0.0)] + (
        [float(best.fun)] if math.isfinite(best.fun) else []
    )
    return min(candidates)


@dataclass(frozen=True)
class References:
    """The user's loss at the batch's floor and at chance (input-blind prediction)."""

    floor: float
    chance: float
    log_probs: torch.Tensor | None  # conditional log p(target | context); None for regression

    def excess(self, loss: float) -> float:
        """How far ``loss`` is from the floor, as a fraction of chance's distance (1 = chance, 0 =
        floor)."""
        span = self.chance - self.floor
        return (loss - self.floor) / span if span > 0 else float("nan")


def references(
    loss_fn: Callable, x: torch.Tensor, y: torch.Tensor, like: torch.Tensor, layout: Layout
) -> References:
    """Floor and chance of the user's loss on one batch."""
    if not layout.categorical:
        target = y.to(like.device)
        with torch.no_grad():
            floor = float(loss_fn(best_output(loss_fn, target, like), target))
            chance = float(loss_fn(best_blind_output(loss_fn, target, like), target))
        return References(min(floor, chance), chance, None)
    scored = aligned(y, layout)
    cond = conditional_log_probs(contexts(x, scored, layout), scored, layout)
    floor = lowest_loss(loss_fn, cond, y, like, layout)
    chance = lowest_loss(loss_fn, marginal_log_probs(y, layout, y.shape), y, like, layout)
    return References(min(floor, chance), chance, cond)


def predicted(out: torch.Tensor, layout: Layout) -> torch.Tensor:
    """Predicted class per target element."""
    if layout.n_outputs == 1:
        threshold = 0.5 if layout.takes_probabilities else 0.0
        return (out > threshold).long()
    return out.argmax(dim=-1 if layout.task == "sequence" or out.ndim == 2 else 1)


def correct(out: torch.Tensor, y: torch.Tensor, layout: Layout) -> torch.Tensor:
    """Per target element: predicted class equals the target (invalid targets count as correct)."""
    pred = predicted(out.detach().cpu(), layout).reshape(y.shape)
    return (pred == y.long()) | ~valid_targets(y, layout)


def fitted_targets(
    out: torch.Tensor, y: torch.Tensor, log_probs: torch.Tensor, layout: Layout
) -> torch.Tensor:
    """Per target element: predicted exactly, or as one of the most frequent targets of its
    context where identical contexts have different targets (invalid targets count as fitted)."""
    pred = predicted(out.detach().cpu(), layout).reshape(y.shape)
    chosen = log_probs.gather(-1, pred.unsqueeze(-1).clamp(0, layout.n_classes - 1)).squeeze(-1)
    best = log_probs.max(dim=-1).values
    return (pred == y.long()) | (chosen >= best - 1e-9) | ~valid_targets(y, layout)
