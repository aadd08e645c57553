"""The overfit layer (positive control): a working setup memorises a tiny fixed batch.

Networks fit even random labels easily and early (Zhang et al. 2017; Arpit et al. 2017), so a
setup that cannot memorise a handful of verified examples with its own optimizer and train step
is broken in its graph, targets or data path, not short of capacity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from labcoat.doctor.case import Case
from labcoat.doctor.features import row_hashes
from labcoat.doctor.inputs import Examples
from labcoat.doctor.registry import check
from labcoat.doctor.targets import (
    Layout,
    References,
    aligned,
    fitted_targets,
    incomparable,
    layout_of,
    references,
    valid_targets,
)
from labcoat.doctor.training import Curve, fit_batch, predict
from labcoat.findings import Outcome, failed, passed, skipped, warned

#: examples in the fixed batch (classification takes two per class, up to MAX_EXAMPLES)
BATCH_EXAMPLES = {"fast": 16, "full": 32}
MAX_EXAMPLES = 32
#: a hard cap; runs stop much earlier once memorised or plateaued
MAX_STEPS = {"fast": 1000, "full": 3000}
#: the loss above the batch's floor must shrink to this fraction of chance's (a 4x drop) ...
LARGE_DROP = 0.25
#: ... and every example is fitted; sequences need this share of their tokens fitted, since one
#: rare continuation among hundreds should not fail a run that learned the rest
TOKENS_FITTED = 0.95
#: regression has nothing to count as fitted: its loss must come this close to the floor (100x)
NEAR_FLOOR = 0.01
#: a run has plateaued when its second half lowered the loss above the floor by less than this
#: fraction of the first half's best; judged from MIN_STEPS on, every CHECK_EVERY steps
PLATEAU = 0.01
MIN_STEPS = 200
CHECK_EVERY = 10
#: a plateau this close to chance means nothing was learned beyond the label frequencies;
#: a loss this many times chance's distance from the floor has not even reached chance
AT_CHANCE = 0.9
FAR_ABOVE_CHANCE = 2.0
#: a regression run still falling at its budget is tried once more at this many times its
#: learning rate; the two stopping within this fraction of each other's loss is a floor
PROBE_LR = 10.0
SAME_FLOOR = 0.1
RANDOM_LABEL_EXAMPLES = 64
RANDOM_LABEL_STEPS = 3000


def tiny_batch(case: Case, size: int) -> Examples:
    """Distinct training inputs, classes taken in turn so each is represented where possible."""
    train = case.train
    order = np.random.default_rng(case.seed).permutation(len(train))
    hashes = row_hashes(train.x)
    first_of: dict[bytes, int] = {}
    for r in order.tolist():
        first_of.setdefault(hashes[r], r)
    distinct = list(first_of.values())
    if case.inferred_task == "classification" and train.y[0].numel() == 1:
        labels = train.y.reshape(len(train)).tolist()
        queues: dict[object, list[int]] = {}
        for r in distinct:
            queues.setdefault(labels[r], []).append(r)
        picks: list[int] = []
        while len(picks) < size and any(queues.values()):
            for queue in queues.values():
                if queue and len(picks) < size:
                    picks.append(queue.pop(0))
        return train.take(picks)
    return train.take(distinct[:size])


def batch_size(case: Case) -> int:
    size = BATCH_EXAMPLES[case.effort]
    if case.inferred_task == "classification":
        size = max(size, min(MAX_EXAMPLES, 2 * (case.n_outputs or 1)))
    return min(size, len(case.train))


@dataclass
class Memorisation:
    """A fixed batch trained to its floor, and how the curve ended."""

    batch: Examples
    layout: Layout
    refs: References
    curve: Curve
    max_steps: int
    units: int  # what "fitted" counts: examples, or target tokens for sequences

    @property
    def last_excess(self) -> float:
        return self.refs.excess(self.curve.losses[-1])

    @property
    def unit(self) -> str:
        return "tokens" if self.layout.task == "sequence" else "examples"

    @property
    def succeeded(self) -> bool:
        fitted_now = self.curve.fitted[-1] if self.curve.fitted else None
        return math.isfinite(self.curve.losses[-1]) and memorised(
            self.layout, self.last_excess, fitted_now, self.units
        )

    def plateaued(self) -> bool:
        return plateaued([self.refs.excess(l) for l in self.curve.losses])

    @property
    def still_falling(self) -> bool:
        """A regression run that ended at its step budget still falling, clearly below chance
        and below where it started: it has not shown that it cannot memorise.

        Regression has no examples to count as fitted, so its bar is 100x toward the floor; a
        small MLP on a few input features can need several thousand steps to fit noisy targets
        that far, and within the budget its curve looks like that of a bottleneck or a learning
        rate too small (measured in docs/validation.md), so neither pass nor fail is earned.
        """
        first, last = self.refs.excess(self.curve.losses[0]), self.last_excess
        return (
            self.refs.log_probs is None
            and not distributions(self.batch.y)
            and self.curve.steps >= self.max_steps
            and math.isfinite(last)
            and last < min(AT_CHANCE, first)
            and not self.plateaued()
        )

    def evidence(self) -> dict:
        """The loss curve's summary first (the rich view shows the first keys), then the batch."""
        curve = self.curve.summary()
        ev = {key: curve[key] for key in ("steps", "first_loss", "last_loss", "min_loss")}
        if self.curve.fitted:
            ev["fitted"] = self.curve.fitted[-1]
            ev["fitted_of"] = f"{self.units} {self.unit}"
        ev.update(
            loss_floor=self.refs.floor,
            chance_loss=self.refs.chance,
            excess_vs_chance=self.last_excess,
        )
        ev.update(
            curve,
            max_steps=self.max_steps,
            examples=len(self.batch),
            indices=self.batch.index.tolist(),
        )
        if self.curve.fitted and self.batch.y[0].numel() == 1:
            ev["classes"] = int(torch.unique(self.batch.y).numel())
        return ev


def distributions(y: torch.Tensor) -> bool:
    """Float targets whose rows are probability distributions: soft or one-hot class labels,
    classes to tell apart rather than noisy real values to hit, judged as before."""
    if not y.is_floating_point() or y.ndim < 2 or y.shape[-1] < 2:
        return False
    rows = y.reshape(-1, y.shape[-1]).double()
    return bool(
        (rows >= 0).all()
        and torch.allclose(rows.sum(-1), torch.ones(len(rows)).double(), atol=1e-4)
    )


def memorised(layout: Layout, excess: float, n_fitted: int | None, n: int) -> bool:
    """A 4x drop toward the floor with every example (95% of tokens) fitted; regression: 100x."""
    if layout.task == "classification":
        return n_fitted == n and excess <= LARGE_DROP
    if layout.task == "sequence":
        return n_fitted is not None and n_fitted >= TOKENS_FITTED * n and excess <= LARGE_DROP
    return excess <= NEAR_FLOOR


def plateaued(excess: list[float]) -> bool:
    """True when the second half of a run barely lowered the loss above its floor."""
    if len(excess) <= MIN_STEPS:
        return False
    half = len(excess) // 2
    before, after = min(excess[:half]), min(excess[half:])
    return before - after < PLATEAU * max(before, 1e-12)


def memorise(
    case: Case, batch: Examples, *, max_steps: int, label: str, lr_scale: float = 1.0
) -> Memorisation:
    """Train a fresh copy on ``batch`` until it is memorised, with early stopping; ``lr_scale``
    multiplies the copy's learning rate."""
    layout = layout_of(case)
    x, y = batch.batch()
    like = predict(case, case.eval_model, x).to(
        case.device
    )  # the loss may hold tensors on the device
    refs = references(case.loss_fn, x, y, like, layout)
    by_token = layout.task == "sequence"
    scored = aligned(y, layout)  # the target each output position is scored against
    n = int(valid_targets(scored, layout).sum()) if by_token else len(batch)

    def evaluate(out: torch.Tensor) -> tuple[float, int | None]:
        with torch.no_grad():
            loss = float(case.loss_fn(out.to(case.device), y.to(case.device)))
        if refs.log_probs is None:
            return loss, None
        ok = fitted_targets(out, scored, refs.log_probs, layout)
        n_fitted = (
            (ok & valid_targets(scored, layout)).sum()
            if by_token
            else ok.reshape(len(y), -1).all(dim=1).sum()
        )
        return loss, int(n_fitted)

    excess: list[float] = []

    def done(curve: Curve) -> bool:
        excess.append(refs.excess(curve.losses[-1]))
        fitted_now = curve.fitted[-1] if curve.fitted else None
        return memorised(layout, excess[-1], fitted_now, n) or (
            curve.steps % CHECK_EVERY == 0 and plateaued(excess)
        )

    with case.progress.task(f"overfit: {label}", total=max_steps) as advance:
        curve = fit_batch(
            case,
            batch,
            max_steps=max_steps,
            evaluate=evaluate,
            done=done,
            advance=advance,
            lr_scale=lr_scale,
        )
    return Memorisation(batch, layout, refs, curve, max_steps, n)


def _describe(m: Memorisation) -> str:
    s = m.curve.summary()
    text = f"loss {s['first_loss']:.3g} → {s['last_loss']:.3g} in {m.curve.steps} steps"
    if m.curve.fitted:
        text += f", {m.curve.fitted[-1]}/{m.units} {m.unit} fitted"
    return text


def _why_loss(m: Memorisation) -> str:
    if not math.isfinite(m.curve.losses[-1]):
        return f"the loss became non-finite after {m.curve.steps} steps"
    if m.refs.chance - m.refs.floor <= 0:
        return "the loss gives no lower value to a perfect prediction than to chance"
    where = (
        f"{m.last_excess:.0%} of the way from its floor ({m.refs.floor:.3g}) to chance ("
        f"{m.refs.chance:.3g})"
    )
    if m.last_excess > FAR_ABOVE_CHANCE:
        return (
            f"the loss stayed far above chance ({m.refs.chance:.3g}, what an input-blind "
            "prediction scores): outputs on another scale than the targets (normalise the targets "
            "or scale the output), or updates far too small to reach even that"
        )
    if m.plateaued() and m.last_excess >= AT_CHANCE:
        return (
            f"the loss stayed near chance ({m.refs.chance:.3g}): nothing beyond the label "
            "frequencies was learned, so updates are far too small (learning rate?) or the inputs "
            "are cut off (bottleneck, detached path)"
        )
    if m.plateaued():
        return (
            f"the loss stopped falling at {where}: a bottleneck, or targets the model cannot "
            "express"
        )
    return (
        f"the loss is still {where} after {m.curve.steps} steps, where a healthy setup memorises "
        "in a few hundred: a learning rate far too small, a bottleneck, or a model that cannot "
        "express the targets"
    )


@check(
    "overfit.batch",
    layer="overfit",
    falsifies="the setup cannot memorise a handful of examples (broken graph, targets or data "
    "path)",
    predicts="with its own optimizer and step, a copy fits a tiny fixed batch: the loss falls 4x "
    "toward its floor and every example (95% of tokens) is fitted; regression: within 1% of the "
    "floor, or not judged while still falling when the budget runs out",
    applies=incomparable,
)
def overfit_batch(case: Case) -> Outcome:
    size = batch_size(case)
    batch = tiny_batch(case, size)
    m = case.probe_once(
        "overfit training",
        lambda: memorise(
            case, batch, max_steps=MAX_STEPS[case.effort], label=f"memorising {len(batch)} examples"
        ),
    )
    evidence = m.evidence()
    if m.succeeded:
        return passed(f"memorised {len(batch)} examples: {_describe(m)}", **evidence)
    if case.targets_ignored:
        return skipped(f"{UNUSED_TARGETS} ({_describe(m)})", **evidence)
    if m.still_falling and not m.curve.lr_collapsed:
        return _judged_at_larger_lr(case, batch, m, evidence)
    return failed(
        f"could not memorise {len(batch)} examples ({_describe(m)}): {_why(m)}", **evidence
    )


def at_larger_lr(case: Case, batch: Examples, m: Memorisation, what: str) -> Memorisation:
    """The run again at PROBE_LR x the learning rate, for a regression run still falling at its
    budget: one that memorises there shows graph, targets and data path can; two runs a decade
    of learning rate apart that stop at the same loss show a floor of the model's own."""
    return case.probe_once(
        f"overfit training on {what} at {PROBE_LR:g}x the learning rate",
        lambda: memorise(
            case,
            batch,
            max_steps=m.max_steps,
            label=f"memorising {len(batch)} {what} at {PROBE_LR:g}x the learning rate",
            lr_scale=PROBE_LR,
        ),
    )


def same_floor(m: Memorisation, faster: Memorisation) -> bool:
    """The faster run plateaued within SAME_FLOOR of where the first one ended."""
    return (
        math.isfinite(faster.last_excess)
        and faster.plateaued()
        and abs(faster.last_excess - m.last_excess) <= SAME_FLOOR * m.last_excess
    )


def _retried(
    case: Case, batch: Examples, m: Memorisation, evidence: dict, what: str
) -> tuple[Outcome | None, Memorisation, dict]:
    """The run again at the larger rate (:func:`at_larger_lr`): a pass when it memorises, an
    inconclusive skip unless both stop at the same floor (then None: the caller judges the
    floor), with the retry's curve in the evidence."""
    faster = at_larger_lr(case, batch, m, what)
    evidence = {**evidence, "larger_lr": {"lr_scale": PROBE_LR, **faster.evidence()}}
    if faster.succeeded:
        return (
            passed(
                f"memorised {len(batch)} {what} at {PROBE_LR:g}x your learning rate "
                f"({_describe(faster)}); at yours the loss was still falling when the "
                f"{m.max_steps}-step budget ran out ({_describe(m)})",
                **evidence,
            ),
            faster,
            evidence,
        )
    if not same_floor(m, faster):
        inconclusive = _inconclusive(m, faster, case.effort)
        return skipped(inconclusive, **evidence, inconclusive=True), faster, evidence
    return None, faster, evidence


def _judged_at_larger_lr(case: Case, batch: Examples, m: Memorisation, evidence: dict) -> Outcome:
    """Pass when memorised at the larger rate, fail at a shared floor, else inconclusive."""
    outcome, faster, evidence = _retried(case, batch, m, evidence, "examples")
    if outcome is None:
        return failed(
            f"could not memorise {len(batch)} examples: the loss stopped "
            f"{_share(faster.last_excess)} of the way from its floor to chance at {PROBE_LR:g}x "
            f"your learning rate ({_describe(faster)}), where yours was still falling at the same "
            f"level ({_describe(m)}): a floor of the model's own, a bottleneck or targets it "
            "cannot express (a linear model, an output activation that cannot reach them)",
            **evidence,
        )
    return outcome


def _share(excess: float) -> str:
    return f"{excess:.0%}" if excess >= 0.1 else f"{excess:.1%}"


def _inconclusive(m: Memorisation, faster: Memorisation, effort: str) -> str:
    longer = "; effort='full' trains 3x longer" if effort == "fast" else ""
    return (
        f"inconclusive, not judged: the loss was still falling when the {m.max_steps}-step budget "
        f"ran out ({_describe(m)}, {_share(m.last_excess)} of the way from its floor to chance, "
        f"and {_describe(faster)} at {PROBE_LR:g}x the learning rate); regression must come "
        "within 1% of its floor, which a small model on a few input features can need thousands "
        "of steps for, and so early that curve cannot be told from a bottleneck's or a too-small "
        f"learning rate's{longer}"
    )


#: why a control that fits the targets says nothing of a step that does not train on them; one
#: that ignores the targets it is given but still fits them (labels fetched another way) is
#: judged as usual, and the shuffle control then finds the other path
UNUSED_TARGETS = (
    "your train step does not use the targets it is given (see update.step.targets) and its "
    "copy did not come to fit them: a self-supervised objective has nothing here to memorise"
)


def _why(m: Memorisation) -> str:
    """Why the memorisation failed; a learning rate that collapsed during the run comes first."""
    if m.curve.lr_collapsed:
        first, last = m.curve.lr  # type: ignore[misc]
        return (
            f"the learning rate fell from {first:.3g} to {last:.3g} during the run: a scheduler "
            "in your step that decays far faster than intended (stepped on every batch, or sized "
            f"in epochs); then {_why_loss(m)}"
        )
    return _why_loss(m)


def random_labels(case: Case, batch: Examples, layout: Layout) -> Examples:
    """The batch with labels drawn at random (regression: targets permuted across examples)."""
    gen = torch.Generator().manual_seed(case.seed + 1)
    y = batch.y
    if not layout.categorical:
        return batch.with_targets(y[torch.randperm(len(y), generator=gen)])
    valid = valid_targets(y, layout)
    drawn = torch.randint(0, layout.n_classes, y.shape, generator=gen).to(y.dtype)
    return batch.with_targets(torch.where(valid, drawn, y))


@check(
    "overfit.random_labels",
    layer="overfit",
    falsifies="inputs reach the output without the information that tells examples apart",
    predicts="a copy memorises random labels on a small set (Zhang et al. 2017)",
    applies=lambda case: (
        incomparable(case) or (None if case.effort == "full" else "runs with effort='full'")
    ),
)
def overfit_random_labels(case: Case) -> Outcome:
    layout = layout_of(case)
    batch = random_labels(
        case, tiny_batch(case, min(RANDOM_LABEL_EXAMPLES, len(case.train))), layout
    )
    m = case.probe_once(
        "random-label training",
        lambda: memorise(
            case,
            batch,
            max_steps=RANDOM_LABEL_STEPS,
            label=f"memorising {len(batch)} random labels",
        ),
    )
    evidence = m.evidence()
    if m.succeeded:
        return passed(f"memorised {len(batch)} random labels: {_describe(m)}", **evidence)
    if case.targets_ignored:
        return skipped(f"{UNUSED_TARGETS} ({_describe(m)})", **evidence)
    if m.still_falling and not m.curve.lr_collapsed:
        outcome, _, evidence = _retried(case, batch, m, evidence, "random labels")
        if outcome is not None:
            return outcome
    if not math.isfinite(m.curve.losses[-1]) or m.last_excess > 0.9:
        return failed(
            f"learned nothing about {len(batch)} random labels ({_describe(m)}): {_why(m)}",
            **evidence,
        )
    return warned(
        f"memorised random labels only in part ({_describe(m)}): small capacity, or inputs that "
        "lose what tells examples apart",
        **evidence,
    )
