"""Checks of a resumed run against the checkpoint it resumes (``labcoat.check_resume``): every
parameter and buffer, the optimizer's state and the scheduler's position came from it.

A resume that restores half of a run trains on silently: ``load_state_dict(strict=False)`` with
keys saved under ``module.`` (DataParallel, DDP) or ``_orig_mod.`` (``torch.compile``) matches
nothing and keeps the fresh weights; a new Adam restarts its moments and bias correction; a new
scheduler warms up again. Each check compares the objects as the user's resume code left them
with what the checkpoint holds, so it needs no reference run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import torch
from torch import nn

from labcoat.doctor.checks import update as _update  # noqa: F401  (its checks come first)
from labcoat.doctor.registry import check
from labcoat.findings import Outcome, failed, passed, skipped, warned

MODEL_KEYS = ("model", "model_state_dict", "state_dict", "model_state", "net")
OPTIMIZER_KEYS = ("optimizer", "optimizer_state_dict", "optim", "opt", "optimizer_state")
SCHEDULER_KEYS = ("scheduler", "lr_scheduler", "scheduler_state_dict", "sched")
LOSS_KEYS = ("loss", "train_loss", "last_loss")
#: prefixes a state dict's keys carry when saved from a wrapper (DataParallel/DDP, torch.compile)
WRAPPER_PREFIXES = ("module.", "_orig_mod.")


@dataclass
class ResumeState:
    """The objects after the user's resume code ran, and the checkpoint it read."""

    model: nn.Module
    optimizer: torch.optim.Optimizer | None
    scheduler: Any
    checkpoint: Mapping[str, Any]
    #: (inputs, targets) batches of the resumed run's data, and its loss (update.resume.loss)
    batches: list[tuple[Any, Any]] | None = None
    loss_fn: Any = None


def part(checkpoint: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[str | None, Any]:
    """The entry of ``checkpoint`` under the first of ``keys`` it has."""
    for key in keys:
        if key in checkpoint:
            return key, checkpoint[key]
    return None, None


def model_state(checkpoint: Mapping[str, Any]) -> tuple[str | None, Mapping[str, Any] | None]:
    """The model's state dict in a checkpoint: under a usual key, or the checkpoint itself when
    it holds tensors only (``torch.save(model.state_dict(), path)``)."""
    key, found = part(checkpoint, MODEL_KEYS)
    if isinstance(found, Mapping):
        return key, found
    if checkpoint and all(isinstance(v, torch.Tensor) for v in checkpoint.values()):
        return None, checkpoint
    return key, None


def strip_wrappers(
    saved: Mapping[str, Any], own: Mapping[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """``saved`` with the wrapper prefixes the model's own keys lack taken off, and which."""
    keys, stripped = dict(saved), []
    changed = True
    while changed:
        changed = False
        for prefix in WRAPPER_PREFIXES:
            if (
                keys
                and all(k.startswith(prefix) for k in keys)
                and not any(k.startswith(prefix) for k in own)
            ):
                keys = {k[len(prefix) :]: v for k, v in keys.items()}
                stripped.append(prefix)
                changed = True
    return keys, stripped


def _resumed(case: Any) -> str | None:
    if getattr(case, "resume", None) is None:
        return "no checkpoint given (labcoat.check_resume runs this check)"
    return None


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and torch.equal(a.detach().cpu(), b.detach().cpu())
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        t, other = (a, b) if isinstance(a, torch.Tensor) else (b, a)
        return t.numel() == 1 and float(t) == other
    return a == b


@check(
    "update.resume.model",
    layer="update",
    falsifies="a resumed model did not take every parameter and buffer from its checkpoint "
    "(load_state_dict(strict=False) with keys under module. or _orig_mod., a layer left out)",
    predicts="after the resume, every entry of model.state_dict() equals the checkpoint's",
    applies=_resumed,
)
def resume_model(case: Any) -> Outcome:
    state: ResumeState = case.resume
    key, saved = model_state(state.checkpoint)
    if saved is None:
        return failed(
            "the checkpoint holds no model state dict (looked under "
            f"{', '.join(MODEL_KEYS)}, and for a dict of tensors)"
        )
    own = state.model.state_dict()
    keys, stripped = strip_wrappers(saved, own)
    missing = [n for n in own if n not in keys]
    differ = [n for n in own if n in keys and not _same(own[n], keys[n])]
    unused = [n for n in keys if n not in own]
    evidence = {
        "checkpoint_key": key,
        "entries": len(own),
        "missing_from_checkpoint": missing[:20],
        "not_restored": differ[:20],
        "unused_in_checkpoint": unused[:20],
        "wrapper_prefixes": stripped,
    }
    if differ or missing:
        names = ", ".join((differ + missing)[:5])
        why = ""
        if stripped and differ:
            why = (
                f": the checkpoint's keys carry {' and '.join(repr(p) for p in stripped)} (saved "
                "from DataParallel/DDP or torch.compile), so load_state_dict(strict=False) "
                "matched none of them and kept the fresh weights; strip the prefix, or load "
                "into the wrapped model"
            )
        elif missing:
            why = ": the checkpoint does not hold them, so they keep their fresh values"
        return failed(
            f"{len(differ) + len(missing)} of {len(own)} parameters and buffers do not equal the "
            f"checkpoint's ({names}){why}",
            **evidence,
        )
    note = f" (its keys carry {', '.join(stripped)}, stripped)" if stripped else ""
    return passed(f"all {len(own)} parameters and buffers equal the checkpoint's{note}", **evidence)


def _differences(own: Mapping, saved: Mapping) -> list[str]:
    """Where two optimizer state dicts differ: per parameter index and state entry."""
    out = []
    for index, entries in saved.get("state", {}).items():
        mine = own.get("state", {}).get(index)
        if mine is None:
            out.append(f"param {index}: no state")
            continue
        out += [f"param {index}.{k}" for k, v in entries.items() if not _same(mine.get(k), v)]
    return out


@check(
    "update.resume.optimizer",
    layer="update",
    falsifies="a resumed optimizer did not take its state from the checkpoint (a fresh Adam "
    "restarts its moments and bias correction, SGD its momentum)",
    predicts="after the resume, the optimizer's per-parameter state (moments, step counts) and "
    "its hyperparameters equal the checkpoint's",
    applies=lambda case: (
        _resumed(case) or (None if case.resume.optimizer is not None else "no optimizer given")
    ),
)
def resume_optimizer(case: Any) -> Outcome:
    state: ResumeState = case.resume
    key, saved = part(state.checkpoint, OPTIMIZER_KEYS)
    if not isinstance(saved, Mapping):
        return warned(
            "the checkpoint holds no optimizer state (looked under "
            f"{', '.join(OPTIMIZER_KEYS)}): a resumed Adam or SGD with momentum restarts "
            "its state; save optimizer.state_dict() with the model"
        )
    own = state.optimizer.state_dict()
    differ = _differences(own, saved)
    saved_groups, own_groups = saved.get("param_groups", []), own.get("param_groups", [])
    hyper = [
        f"group {i}.{k}"
        for i, (a, b) in enumerate(zip(own_groups, saved_groups))
        for k in b
        if k not in ("params", "lr", "initial_lr") and k in a and not _same(a[k], b[k])
    ]
    evidence = {
        "checkpoint_key": key,
        "parameters_with_state": len(saved.get("state", {})),
        "not_restored": differ[:20],
        "hyperparameters_differ": hyper[:20],
    }
    if saved.get("state") and not own.get("state"):
        return failed(
            f"the optimizer holds no state, the checkpoint's holds it for {len(saved['state'])} "
            "parameters: the moments and step counts start from zero (call "
            "optimizer.load_state_dict(checkpoint[...]) after building it on the restored model)",
            **evidence,
        )
    if differ:
        return failed(
            f"{len(differ)} optimizer state entries differ from the checkpoint's "
            f"({', '.join(differ[:5])})",
            **evidence,
        )
    if hyper:
        return warned(
            f"optimizer hyperparameters differ from the checkpoint's ({', '.join(hyper[:5])})",
            **evidence,
        )
    return passed(
        f"the optimizer's state for {len(saved.get('state', {}))} parameters equals the "
        "checkpoint's",
        **evidence,
    )


@check(
    "update.resume.scheduler",
    layer="update",
    falsifies="a resumed learning-rate scheduler starts its schedule again (warm-up repeated, "
    "the rate back at its start)",
    predicts="after the resume, the scheduler's step count and last rates equal the checkpoint's",
    applies=lambda case: (
        _resumed(case) or (None if case.resume.scheduler is not None else "no scheduler given")
    ),
)
def resume_scheduler(case: Any) -> Outcome:
    state: ResumeState = case.resume
    key, saved = part(state.checkpoint, SCHEDULER_KEYS)
    if not isinstance(saved, Mapping):
        return warned(
            "the checkpoint holds no scheduler state (looked under "
            f"{', '.join(SCHEDULER_KEYS)}): the schedule restarts on resume; save "
            "scheduler.state_dict() with the model"
        )
    own = state.scheduler.state_dict()
    fields = [k for k in ("last_epoch", "_step_count", "_last_lr") if k in saved]
    differ = {k: (own.get(k), saved[k]) for k in fields if not _same(own.get(k), saved[k])}
    evidence = {
        "checkpoint_key": key,
        "compared": fields,
        "differ": {k: {"resumed": a, "checkpoint": b} for k, (a, b) in differ.items()},
    }
    if differ:
        said = "; ".join(f"{k} {a} (checkpoint: {b})" for k, (a, b) in differ.items())
        return failed(
            f"the scheduler is not where the checkpoint left it: {said}; call "
            "scheduler.load_state_dict(checkpoint[...]) too",
            **evidence,
        )
    step = saved.get("last_epoch")
    return passed(f"the scheduler resumes at step {step}, as the checkpoint left it", **evidence)


#: the resumed loss may exceed the checkpoint's by this many of its batch-to-batch standard
#: deviations, and by this share of it, before the resume counts as not continuing the run
#: (one-sided: a loss saved as an epoch's running mean sits above the model's loss at its end)
LOSS_Z = 5.0
LOSS_REL = 0.1
#: batches the resumed loss is measured on; one batch is cut in this many parts for the noise
LOSS_BATCHES = 8


def _saved_loss(checkpoint: Mapping[str, Any]) -> tuple[str | None, float | None]:
    key, value = part(checkpoint, LOSS_KEYS)
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = float(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return key, float(value)
    return key, None


def _loss_applies(case: Any) -> str | None:
    reason = _resumed(case)
    if reason:
        return reason
    state: ResumeState = case.resume
    if state.batches is None or state.loss_fn is None:
        return "no data and loss_fn given to check_resume"
    if _saved_loss(state.checkpoint)[1] is None:
        return f"the checkpoint records no loss (looked under {', '.join(LOSS_KEYS)})"
    return None


def _batch_losses(state: ResumeState) -> tuple[list[float], int]:
    """The resumed model's loss on each batch (in eval mode, with no gradient, so the model is
    left as it was), and the rows per batch; a single batch is cut in parts, which show the
    noise between batches."""
    model = state.model
    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    batches = state.batches or []
    if len(batches) == 1:
        x, y = batches[0]
        parts = min(LOSS_BATCHES, len(y))
        batches = list(zip(torch.tensor_split(x, parts), torch.tensor_split(y, parts)))
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            losses = [float(state.loss_fn(model(x.to(device)), y.to(device))) for x, y in batches]
    finally:
        model.train(was_training)
    return losses, len(state.batches[0][1])  # type: ignore[index]


@check(
    "update.resume.loss",
    layer="update",
    falsifies="a resumed run does not continue the run it resumes, though its state dicts match "
    "(a checkpoint written from the wrong object, inputs prepared differently on resume)",
    predicts="the resumed model's loss on the run's data is no further above the checkpoint's "
    "recorded loss than batch-to-batch noise",
    applies=_loss_applies,
)
def resume_loss(case: Any) -> Outcome:
    state: ResumeState = case.resume
    key, saved = _saved_loss(state.checkpoint)
    assert saved is not None
    try:
        losses, rows = _batch_losses(state)
    except Exception as exc:  # noqa: BLE001 - the user's model or loss raised on the batches
        return skipped(f"the model or loss raised {type(exc).__name__} on the data: {exc}")
    finite = [v for v in losses if math.isfinite(v)]
    if not finite:
        return failed(f"the resumed model's loss is not finite on any of {len(losses)} batches")
    mean = sum(finite) / len(finite)
    parts = len(state.batches or []) == 1
    spread = (
        math.sqrt(sum((v - mean) ** 2 for v in finite) / (len(finite) - 1))
        if len(finite) > 1
        else 0.0
    )
    # the noise of one batch's loss: parts of one batch vary sqrt(parts) times more than it
    noise = spread / math.sqrt(len(finite)) if parts else spread
    # the saved loss's noise and the mean's (one batch cut in parts is one batch's loss)
    sigma = noise * math.sqrt(2 if parts else 1 + 1 / len(finite))
    excess = mean - saved
    evidence = {
        "checkpoint_key": key,
        "checkpoint_loss": saved,
        "resumed_loss": mean,
        "batch_losses": [round(v, 6) for v in losses[:20]],
        "noise": sigma,
        "rows_per_batch": rows,
        "z": excess / sigma if sigma > 0 else None,
    }
    if excess > LOSS_Z * sigma and excess > LOSS_REL * abs(saved):
        return failed(
            f"the resumed model's loss is {mean:.4g}, the checkpoint recorded {saved:.4g} "
            f"({excess / max(sigma, 1e-300):.0f} batch-to-batch standard deviations above): the "
            "run does not continue where it stopped; was the checkpoint written from another "
            "object than the trained model, or are the inputs prepared differently now?",
            **evidence,
        )
    return passed(
        f"the resumed model's loss {mean:.4g} continues the checkpoint's {saved:.4g} (noise "
        f"{sigma:.2g})",
        **evidence,
    )
