"""The update layer: one optimizer step moves what should move and nothing else."""

from __future__ import annotations

import math

import torch
from torch import nn

from labcoat.doctor.case import Case, run_steps
from labcoat.doctor.copies import (
    has_nonzero_grad,
    optimizer_tensors,
    requires_grad_set_by_train,
)
from labcoat.doctor.effect import without_effect
from labcoat.doctor.registry import check
from labcoat.findings import Outcome, failed, passed, skipped, warned
from labcoat.modes import mode_dependent

#: the usual range of |update| / |weight| for one step (around 1e-3 for a healthy run)
RATIO_TOO_LARGE = 0.1
RATIO_TOO_SMALL = 1e-7
#: Adam-type optimizers (Adam, AdamW, Adagrad, RMSprop, ...) start with a sign step: every weight
#: moves by the learning rate (RMSprop by ten times it) whatever its gradient, so the first
#: step's ratio is the learning rate against the weights' scale, an upper bound of the steps
#: that follow (once the second moment averages noise, |m|/sqrt(v) falls well below one). It is
#: judged against this many times RATIO_TOO_LARGE. Tuned on Adam at 1e-2 on 64- and 256-wide
#: layers (0.14-0.28, healthy) and Adagrad at its default (0.22), against Adam at 0.1 (1.4-2.8)
#: and RMSprop at its default, whose first step is ten times its rate (2.2)
SIGN_STEP_ALLOWANCE = 5.0
#: a step is a sign step when this share of a tensor's moved elements moved within 10 % of its
#: largest amount (decoupled weight decay, lr * wd * w, adds a few percent to Adam's lr * sign(g);
#: plain SGD's lr * g spreads over decades), in most tensors
SIGN_STEP_SHARE = 0.9


def _in_optimizer(case: Case) -> set[int]:
    return {id(p) for _, _, p in optimizer_tensors(case.blueprint.optimizer)}


@check(
    "update.optimizer.coverage",
    layer="update",
    falsifies="trainable parameters are missing from the optimizer",
    predicts="every trainable parameter not declared frozen is in some param group",
)
def optimizer_coverage(case: Case) -> Outcome:
    held = _in_optimizer(case)
    trainable = [
        (n, p)
        for n, p in case.blueprint.model.named_parameters()
        if p.requires_grad and not case.is_declared_frozen(n)
    ]
    missing = [n for n, p in trainable if id(p) not in held]
    evidence = {
        "trainable": len(trainable),
        "missing": missing[:50],
        "param_groups": len(case.blueprint.optimizer.param_groups),
    }
    if missing:
        return failed(
            f"{len(missing)} of {len(trainable)} trainable parameters are in no optimizer group: "
            f"{', '.join(missing[:5])}",
            **evidence,
        )
    return passed(f"all {len(trainable)} trainable parameters are in the optimizer", **evidence)


@check(
    "update.optimizer.foreign",
    layer="update",
    falsifies="the optimizer updates tensors the model does not own (built on another model "
    "instance)",
    predicts="every tensor in the optimizer is a parameter of the model",
)
def optimizer_foreign(case: Case) -> Outcome:
    owned = {id(p) for p in case.blueprint.model.parameters()}
    tensors = optimizer_tensors(case.blueprint.optimizer)
    foreign = [
        {"group": g, "position": i, "shape": list(p.shape)}
        for g, i, p in tensors
        if id(p) not in owned
    ]
    evidence = {"optimizer_tensors": len(tensors), "foreign": foreign[:20]}
    if foreign:
        where = "none" if len(foreign) == len(tensors) else f"{len(tensors) - len(foreign)}"
        return failed(
            f"{len(foreign)} optimizer tensors are not parameters of the model ({where} of "
            f"{len(tensors)} are): was it built on another instance?",
            **evidence,
        )
    return passed(f"all {len(tensors)} optimizer tensors belong to the model", **evidence)


@check(
    "update.lr",
    layer="update",
    falsifies="a learning rate of zero (or a non-finite one) stops learning",
    predicts="every param group has a finite, positive learning rate",
)
def learning_rate(case: Case) -> Outcome:
    lrs = [float(g["lr"]) for g in case.blueprint.optimizer.param_groups if "lr" in g]
    if not lrs:
        return skipped("the optimizer's param groups have no 'lr'")
    bad = [i for i, lr in enumerate(lrs) if not (math.isfinite(lr) and lr > 0)]
    if bad:
        return failed(f"param groups {bad} have learning rate {[lrs[i] for i in bad]}", lr=lrs)
    return passed(f"learning rates {sorted(set(lrs))}", lr=lrs)


@check(
    "update.step.runs",
    layer="update",
    falsifies="the train step never updates (optimizer.step() not called) or returns no usable "
    "loss",
    predicts="each call runs optimizer.step() once (or once every k calls, for a step that "
    "accumulates gradients) and returns a finite loss",
)
def step_runs(case: Case) -> Outcome:
    probe = case.stepped
    steps = probe.optimizer_steps
    loss = probe.losses[0]
    evidence = {"optimizer_steps_per_call": steps, "calls_per_update": probe.calls_per_update}
    if not any(steps):
        return failed(
            f"the train step never called optimizer.step() on the optimizer it was given, in "
            f"{probe.calls} calls",
            **evidence,
        )
    if isinstance(loss, torch.Tensor):
        loss = float(loss.detach().reshape(-1)[0]) if loss.numel() == 1 else None
    elif isinstance(loss, (int, float)):
        loss = float(loss)
    else:
        loss = None
    if loss is None:
        return warned(
            "the train step did not return the loss as a scalar; later layers read it to follow "
            "training",
            **evidence,
        )
    evidence["loss"] = loss
    if not math.isfinite(loss):
        return failed(f"the train step returned loss {loss}", **evidence)
    if probe.calls_per_update > 1:
        ran = (
            f"once every {probe.calls_per_update} calls (gradients accumulated over calls; the "
            "controls call it that many times per update)"
        )
    elif len(set(steps)) == 1:
        ran = f"{steps[0]}x per call"
    else:
        ran = f"{sum(steps)}x in {len(steps)} calls ({steps})"
    return passed(f"optimizer.step() ran {ran}; loss {loss:.4g}", **evidence)


@check(
    "update.step.targets",
    layer="update",
    falsifies="your train step ignores the targets it is given (it trains on the wrong thing)",
    predicts="moving every target to the next example changes the step's loss or its update",
    applies=lambda case: None if case.step is not None else "the standard step uses the targets",
)
def step_uses_targets(case: Case) -> Outcome:
    """A step that ignores the targets is either self-supervised by design (contrastive,
    masked or reconstruction objectives make their own targets) or a bug (a loss on the wrong
    tensor); the doctor cannot tell which, so it warns. A control that fits the targets then
    skips rather than fails when the copy does not come to fit them; one that still fits
    them (labels fetched by another path) is judged as usual."""
    if case.targets_ignored:
        return warned(
            "your train step computes the same loss and update when every target is moved to "
            "the next example: it does not use the targets. Fine for a self-supervised objective "
            "(the controls that fit the targets then skip); otherwise the loss reads the wrong "
            "tensor"
        )
    return passed("moving the targets changes the step's loss or update")


@check(
    "update.params.moved",
    layer="update",
    falsifies="parameters in the optimizer do not change when it steps",
    predicts="every trainable parameter in the optimizer moves within a few steps",
)
def params_moved(case: Case) -> Outcome:
    probe = case.stepped
    if not any(probe.optimizer_steps):
        return skipped("the step never called optimizer.step() (see update.step.runs)")
    held = {id(p) for _, _, p in optimizer_tensors(probe.setup.optimizer)}
    expected = [
        n
        for n, p in probe.setup.model.named_parameters()
        if p.requires_grad and id(p) in held and not case.is_declared_frozen(n)
    ]
    moved_first = probe.moved(0)
    moved_any = {n: any(probe.moved(c)[n] for c in range(len(probe.after))) for n in expected}
    still = [n for n in expected if not moved_any[n]]
    late = [n for n in expected if moved_any[n] and not moved_first[n]]
    evidence = {
        "expected_to_move": len(expected),
        "did_not_move": still[:50],
        "moved_only_after_first_step": late[:50],
    }
    if not expected:
        return skipped(
            "no trainable parameters are in the optimizer (see update.optimizer.coverage)"
        )
    # parameters that had no gradient (None, or all zeros) at every optimizer.step()
    empty = [
        n
        for n in still
        if all(g.get(n) is None or not bool(g[n].any()) for g in probe.grads_at_step)
    ]
    zero_grads = [n for n in empty if all(g.get(n) is not None for g in probe.grads_at_step)]
    inert = without_effect(case, zero_grads)
    # conditional computation: other batches reach them (see Case.reached_elsewhere)
    elsewhere = [n for n in empty if n not in inert and n in case.reached_elsewhere]
    evidence["without_effect"] = inert
    evidence["reached_by_other_batches"] = elsewhere[:50]
    still = [n for n in still if n not in inert and n not in elsewhere]
    empty = [n for n in empty if n not in inert and n not in elsewhere]
    if still:
        # with no gradient at optimizer.step() there is nothing to apply: the gradients were
        # cleared after backward() (zero_grad() between backward() and step())
        why = ""
        if empty == still == expected:
            why = (
                ": no parameter had a gradient when optimizer.step() ran; is zero_grad() called "
                "between backward() and step()?"
            )
        elif empty == still:
            why = ": they had no gradient when optimizer.step() ran"
        return failed(
            f"{len(still)} of {len(expected)} parameters did not move in {len(probe.after)} steps: "
            f"{', '.join(still[:5])}{why}",
            no_gradient_at_step=empty[:50],
            **evidence,
        )
    if inert:  # harmless: a fact for the evidence, nothing to act on
        evidence["note"] = (
            f"{len(inert)} parameters never move because the output does not depend on them: "
            f"{', '.join(inert[:5])} (changing them leaves the output as it was; a bias whose "
            "shift cancels, as before a difference of two embeddings): they could be removed"
        )
        return passed(
            f"{len(expected) - len(inert)} of {len(expected)} parameters moved; the other "
            f"{len(inert)} do not affect the output ({', '.join(inert[:3])})",
            **evidence,
        )
    note = (
        f" ({len(late)} only after the first step, as behind a zero-initialised layer)"
        if late
        else ""
    )
    if elsewhere:
        return passed(
            f"{len(expected) - len(elsewhere)} of {len(expected)} parameters moved; the other "
            f"{len(elsewhere)} had no gradient on the probe batch but do on other batches "
            "(conditional computation, as experts a router skipped)",
            **evidence,
        )
    return passed(f"all {len(expected)} parameters moved{note}", **evidence)


@check(
    "update.frozen.moved",
    layer="update",
    falsifies="parameters meant to stay fixed change during training",
    predicts="declared-frozen and requires_grad=False parameters are bit-identical after steps",
)
def frozen_moved(case: Case) -> Outcome:
    """A declared-frozen parameter must not move at all; one frozen by ``requires_grad=False``
    alone must not be moved by ``optimizer.step()`` (a zero gradient left behind, then weight
    decay or momentum). One the step's own code moves under ``no_grad`` is a target network (a
    momentum encoder, a mean teacher, an EMA copy), as the watch's frozen_moved judges too."""
    probe = case.stepped
    fixed = [
        n
        for n, p in probe.setup.model.named_parameters()
        if not p.requires_grad or case.is_declared_frozen(n)
    ]
    if not fixed:
        return skipped("no parameter is frozen or declared frozen")
    changed = [n for n in fixed if any(probe.moved(c)[n] for c in range(len(probe.after)))]
    by_optimizer = probe.written_by_optimizer
    moved = [
        n
        for n in changed
        if case.is_declared_frozen(n) or by_optimizer is None or n in by_optimizer
    ]
    by_step = [n for n in changed if n not in moved]
    evidence = {"fixed": len(fixed), "moved": moved[:50], "moved_by_your_step": by_step[:50]}
    if moved:
        return failed(
            f"{len(moved)} frozen parameters moved: {', '.join(moved[:5])} (weight decay or a "
            "stray param group?)",
            **evidence,
        )
    if by_step:
        return passed(
            f"your step's own code, not optimizer.step(), moved {len(by_step)} of the "
            f"{len(fixed)} parameters with requires_grad=False ({', '.join(by_step[:3])}), as a "
            "target network or an EMA copy is kept; declare them in expect_frozen to hold them "
            "fixed",
            **evidence,
        )
    return passed(f"{len(fixed)} frozen parameters stayed fixed", **evidence)


@check(
    "update.finite",
    layer="update",
    falsifies="a step produces NaN or Inf in parameters or loss",
    predicts="parameters and loss stay finite over the first steps",
)
def finite_after_step(case: Case) -> Outcome:
    probe = case.stepped
    for call, after in enumerate(probe.after):
        bad = [
            n
            for n, t in after.items()
            if torch.is_floating_point(t) and not torch.isfinite(t).all()
        ]
        if bad:
            return failed(
                f"after step {call + 1}, {len(bad)} tensors are non-finite: {', '.join(bad[:5])}",
                step=call + 1,
                tensors=bad[:50],
            )
    losses = [float(l) for l in probe.losses if isinstance(l, torch.Tensor) and l.numel() == 1]
    if any(not math.isfinite(l) for l in losses):
        return failed(f"losses over {len(losses)} steps: {losses}", losses=losses)
    return passed(f"parameters and loss finite over {len(probe.after)} steps", losses=losses)


@check(
    "update.ratio",
    layer="update",
    explains=("overfit.*", "shuffle.*"),
    falsifies="the step size is wildly off (updates as large as the weights, or vanishingly small)",
    predicts=f"median |update|/|weight| per tensor between {RATIO_TOO_SMALL:g} and "
    f"{RATIO_TOO_LARGE:g} (about 1e-3 is typical)",
)
def update_ratio(case: Case) -> Outcome:
    if isinstance(case.blueprint.optimizer, torch.optim.LBFGS):
        return skipped(
            "LBFGS scales its steps by a curvature estimate and runs up to max_iter iterations "
            "per call: updates as large as the weights are how it converges in a few calls"
        )
    probe = case.stepped
    # a zero-initialised tensor has no ratio to speak of, and it holds the layers before it still
    # on the first step: the first step that moves initially non-zero weights is the one measured
    measured = [
        n
        for n, w in probe.before.items()
        if not n.startswith("buffer:") and torch.is_floating_point(w) and float(w.norm()) > 0
    ]
    ratios: dict[str, float] = {}
    for step, after in enumerate(probe.after):
        before = probe.before if step == 0 else probe.after[step - 1]
        ratios = {
            n: float((after[n] - before[n]).norm() / before[n].norm())
            for n in measured
            if not torch.equal(before[n], after[n])
        }
        if ratios:
            break
    if not ratios:
        return skipped(
            f"no parameter with non-zero initial weights moved in {len(probe.after)} steps"
        )
    values = sorted(ratios.values())
    median = values[len(values) // 2]
    before = probe.before if step == 0 else probe.after[step - 1]
    grads = probe.grads_at_step[step] if step < len(probe.grads_at_step) else {}
    sign = _sign_step({n: (probe.after[step][n] - before[n], grads.get(n)) for n in ratios})
    evidence = {
        "step": step + 1,
        "median_ratio": median,
        "max_ratio": values[-1],
        "ratios": dict(sorted(ratios.items(), key=lambda kv: -kv[1])[:10]),
        "sign_step": sign,
    }
    if sign and median > RATIO_TOO_LARGE * SIGN_STEP_ALLOWANCE:
        return warned(
            f"median update/weight ratio {median:.2g} on the first step, which moves every "
            "weight by the same amount (a sign step, as Adam-type optimizers start): the "
            "learning rate is a large share of the weights' scale and looks too large",
            **evidence,
        )
    if sign:
        return passed(
            f"median update/weight ratio {median:.2g} on a first sign step (Adam-type: every "
            f"weight moves by the learning rate; judged against {SIGN_STEP_ALLOWANCE:g}x the "
            f"usual {RATIO_TOO_LARGE:g}, as the steps after it are smaller)",
            **evidence,
        )
    if median > RATIO_TOO_LARGE:
        return warned(
            f"median update/weight ratio {median:.2g}: the learning rate looks too large",
            **evidence,
        )
    if median < RATIO_TOO_SMALL:
        return warned(
            f"median update/weight ratio {median:.2g}: the learning rate looks too small",
            **evidence,
        )
    return passed(f"median update/weight ratio {median:.2g}", **evidence)


def _sign_step(moves: dict[str, tuple[torch.Tensor, torch.Tensor | None]]) -> bool:
    """Whether in most tensors the elements with a gradient all moved by about one amount (see
    SIGN_STEP_ALLOWANCE): Adam's first step is lr * sign(g), SGD's is lr * g. Elements without
    a gradient move by weight decay alone, if at all, and are left out."""
    votes = []
    for delta, grad in moves.values():
        size = delta.detach().abs().double()
        if grad is not None and grad.shape == size.shape:
            size = size[grad.to(size.device) != 0]
        size = size.flatten()
        size = size[size > 0]
        if len(size) < 2:
            continue
        votes.append(bool((size >= 0.9 * size.max()).double().mean() >= SIGN_STEP_SHARE))
    return bool(votes) and sum(votes) * 2 > len(votes)


@check(
    "update.grad.zeroed",
    layer="update",
    falsifies="gradients accumulate across train steps (zero_grad missing)",
    predicts="with parameters held fixed, two calls of the step see the same gradient",
)
def grad_zeroed(case: Case) -> Outcome:
    if not any(case.stepped.optimizer_steps):
        return skipped("the step never called optimizer.step() (see update.step.runs)")
    if not all("lr" in g for g in case.blueprint.optimizer.param_groups):
        return skipped("the optimizer has no 'lr' to hold the parameters fixed with")
    probe = run_steps(case, 2, lr_zero=True, seeds=[case.seed, case.seed])
    if sum(probe.optimizer_steps) < 2:
        return skipped("the step did not update twice with the learning rate at zero")
    g1, g2 = probe.grads_at_step[:2]
    names = [n for n in g1 if g1[n] is not None and g2.get(n) is not None and bool(g1[n].any())]
    if not names:
        return skipped("no non-zero gradient to compare")
    votes = _gradient_votes(g1, g2, names)
    voting = [n for n in names if votes[n] != "noise"]
    accumulated = [n for n in voting if votes[n] == "twice"]
    differ = [n for n in voting if votes[n] == "differ"]
    ratio = {n: float(g2[n].norm() / g1[n].norm()) for n in voting}
    evidence = {
        "compared": len(voting),
        "noise_level": [n for n in names if votes[n] == "noise"][:10],
        "norm_ratio_second_to_first": dict(list(ratio.items())[:10]),
    }
    if accumulated:
        return failed(
            f"the second call's gradient is twice the first for {len(accumulated)} tensors: "
            "gradients are never zeroed",
            accumulated=accumulated[:10],
            **evidence,
        )
    stateful = _state_updated_between(case, probe)
    if differ and stateful:
        # the forward updates state of its own (spectral norm's power iteration): the second
        # call runs another model, so its gradient may differ without accumulating
        return passed(
            f"gradients are fresh on each call; {len(differ)} differ between the calls, as the "
            f"forward updates state of its own between them ({', '.join(stateful[:3])})",
            differ=differ[:10],
            state_updated=stateful[:10],
            **evidence,
        )
    if differ:
        return warned(
            f"{len(differ)} gradients differ between identical calls (randomness not tied to "
            "torch's seed?)",
            differ=differ[:10],
            **evidence,
        )
    return passed(f"gradients are fresh on each call ({len(voting)} tensors compared)", **evidence)


def _state_updated_between(case: Case, probe) -> list[str]:
    """Buffers, running statistics aside, that the first of two zero-learning-rate calls left
    otherwise than the second found them: state the forward updates itself (spectral norm's
    singular vectors)."""
    if len(probe.after) < 2:
        return []
    modules = dict(probe.setup.model.named_modules())
    out = []
    for key in probe.before:
        if not key.startswith("buffer:"):
            continue
        name = key.removeprefix("buffer:")
        owner = modules.get(name.rpartition(".")[0])
        if isinstance(owner, nn.modules.batchnorm._NormBase):
            continue  # running statistics: not read by a train-mode forward
        if not torch.equal(probe.after[0][key], probe.after[1][key]):
            out.append(name)
    return out


@check(
    "update.accumulation",
    layer="update",
    falsifies="a step that accumulates gradients over calls applies only the last call's "
    "(zero_grad() inside the accumulation loop, not after optimizer.step())",
    predicts="with parameters held fixed, the gradient optimizer.step() applies changes when the "
    "first call's batch since the last update changes",
)
def accumulation(case: Case) -> Outcome:
    k = case.calls_per_update
    if k == 1:
        return skipped("the step updates on every call")
    if not all("lr" in g for g in case.blueprint.optimizer.param_groups):
        return skipped("the optimizer has no 'lr' to hold the parameters fixed with")
    same = case.probe_batch.batch()
    other = _other_batch(case)
    if all(torch.equal(a, b) for a, b in zip(same, other)):
        return skipped("no second batch unlike the probe batch to compare with")

    def applied(first: tuple[torch.Tensor, torch.Tensor]) -> dict | None:
        """The gradients at the second update, its first call given ``first``."""
        probe = run_steps(
            case,
            2,
            lr_zero=True,
            seeds=[case.seed, case.seed],
            batch_at=lambda update, call: first if (update == 1 and call == 0) else same,
        )
        return probe.grads_at_step[1] if sum(probe.optimizer_steps) >= 2 else None

    g_same, g_other = applied(same), applied(other)
    if g_same is None or g_other is None:
        return skipped("the step did not update twice with the learning rate at zero")
    names = [n for n in g_same if g_same[n] is not None and g_other.get(n) is not None]
    if not names:
        return skipped("no gradient reached optimizer.step()")
    scale = max(float(g_same[n].abs().max()) for n in names) or 1.0
    changed = [n for n in names if float((g_same[n] - g_other[n]).abs().max()) > GRAD_NOISE * scale]
    evidence = {"calls_per_update": k, "compared": len(names), "changed": changed[:10]}
    if not changed:
        return failed(
            f"the step updates once every {k} calls, but the gradient it applies is the same "
            "whatever the first of those calls saw: only the last call's gradient is kept "
            "(optimizer.zero_grad() belongs after optimizer.step(), not before each backward)",
            **evidence,
        )
    return passed(
        f"gradients of all {k} calls reach each update ({len(changed)} of {len(names)} tensors "
        "change with the first call's batch)",
        **evidence,
    )


def _other_batch(case: Case) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch like the probe batch with other examples (the same ones paired with other targets
    when the training data holds no more)."""
    n = len(case.probe_batch)
    if len(case.train) >= 2 * n:
        return case.train.take(slice(n, 2 * n)).batch()
    x, y = case.probe_batch.batch()
    return x, y.roll(1, dims=0)


#: tolerance of the gradient comparison, as a fraction of the largest gradient entry of any
#: tensor; a tensor whose gradient stays within 10x this is float round-off and does not vote.
#: The bias of a Linear feeding a BatchNorm has a true gradient of zero and gets noise: tuned on
#: the corpus's mlp_linear_batchnorm and conv_bn_relu setups, where that noise measured 2e-7 and
#: 1e-6 of the largest gradient and every real gradient was above 1e-1 of it
GRAD_NOISE = 1e-5


def _gradient_votes(g1: dict, g2: dict, names: list[str]) -> dict[str, str]:
    """Per tensor: "noise" (too small to tell), "same", "twice" (accumulated) or "differ".

    "Same" is tested first: a gradient equal to the first call's is fresh, even where twice it
    would also be within tolerance."""
    largest = max(float(g1[n].abs().max()) for n in names)
    atol = GRAD_NOISE * largest
    votes = {}
    for n in names:
        a, b = g1[n], g2[n]
        if float(a.abs().max()) <= 10 * atol:
            votes[n] = "noise"
        elif torch.allclose(b, a, rtol=1e-3, atol=atol):
            votes[n] = "same"
        elif torch.allclose(b, 2 * a, rtol=1e-3, atol=atol):
            votes[n] = "twice"
        else:
            votes[n] = "differ"
    return votes


@check(
    "update.mode.as_given",
    layer="update",
    falsifies="the model would train in eval mode: it is given in eval mode (left there by an "
    "evaluation) and nothing in the step puts it back in train mode",
    predicts="a model with dropout or batch norm is given in train mode, or the step calls "
    "model.train()",
)
def mode_as_given(case: Case) -> Outcome:
    modules = mode_dependent(case.blueprint.model)
    if not modules:
        return skipped("no dropout or batch norm: train and eval mode compute the same")
    if case.blueprint.model.training:
        return passed("the model is given in train mode", mode_dependent=list(modules[:20]))
    named = ", ".join(modules[:3]) + (f" and {len(modules) - 3} more" if len(modules) > 3 else "")
    evidence = {"mode_dependent": list(modules[:20])}
    effect = (
        f"a loop that never calls model.train() trains with {named} as at inference (dropout "
        "off, batch norm on frozen running statistics)"
    )
    if case.step is None:
        return warned(
            "the model is given in eval mode; the doctor's copies train in train mode, but "
            f"{effect}",
            **evidence,
        )
    modes = _modes_in_step(case)
    if modes is None:
        return skipped("the step ran no forward pass with gradients", **evidence)
    if any(modes):
        return passed("the model is given in eval mode and your step calls model.train()")
    return warned(
        f"the model is given in eval mode and your step trains it in that mode: {effect}; call "
        "model.train() in the step or before each epoch",
        **evidence,
    )


def _modes_in_step(case: Case) -> list[bool] | None:
    """``model.training`` at each forward pass with gradients during one call of the user's step
    on a copy left in the mode it was given in; None when there was none (or the step raised)."""
    setup = case.blueprint.fresh()
    modes: list[bool] = []

    def record(module: torch.nn.Module, _args: object) -> None:
        if torch.is_grad_enabled():
            modes.append(module.training)

    handle = setup.model.register_forward_pre_hook(record)
    torch.manual_seed(case.seed)
    try:
        case.fresh_step(setup)(
            setup.model, case.on_device(case.probe_batch.batch()), setup.optimizer, case.loss_fn
        )
    except Exception:  # noqa: BLE001 - update.step.runs reports a step that raises
        return None
    finally:
        handle.remove()
    return modes or None


@check(
    "update.step.isolated",
    layer="update",
    falsifies="the train step updates objects other than the ones it is given (a global model or "
    "optimizer)",
    predicts="stepping the doctor's copies leaves the caller's model and optimizer bit-identical",
)
def step_isolated(case: Case) -> Outcome:
    if case.user_state is None:
        return skipped("the caller's objects were not snapshotted")
    case.stepped  # noqa: B018 - make sure the user's step has run
    changed = case.user_state.changed()
    if changed:
        case.user_state.restore()
        return failed(
            f"calling the step on copies changed the caller's {', '.join(changed[:5])}: the step "
            "uses a global model or optimizer instead of its arguments (restored)",
            changed=changed[:50],
        )
    return passed("the step only touched the copies it was given")


@check(
    "update.frozen.as_given",
    layer="update",
    falsifies="parameters declared frozen train in the user's loop because the freeze happens "
    "only inside an overridden model.train() (a frozen_stages option) that the loop never calls",
    predicts="as given, parameters matched by expect_frozen have requires_grad=False or are not "
    "updated, and model.train() does not change requires_grad",
)
def frozen_as_given(case: Case) -> Outcome:
    model = case.blueprint.model  # the pristine copy: requires_grad exactly as the user left it
    try:
        toggled = requires_grad_set_by_train(model)
    except Exception as exc:  # noqa: BLE001 - the user's train() override failed on a copy
        return skipped(f"model.train() raised {type(exc).__name__}: {exc}")
    held = _in_optimizer(case)
    named = dict(model.named_parameters())
    exposed = [
        n
        for n, p in named.items()
        if case.is_declared_frozen(n) and p.requires_grad and id(p) in held
    ]
    frozen_by_train = [n for n, on in toggled.items() if not on]
    evidence = {
        "requires_grad_set_by_train": dict(list(toggled.items())[:50]),
        "declared_frozen_trainable_in_optimizer": exposed[:50],
    }
    if exposed:
        trained = [n for n in exposed if n in toggled] or _get_gradient_as_given(case, exposed)
        if trained:
            if any(n in toggled for n in trained):
                why = (
                    "only model.train() freezes them, so a loop that never calls it trains them "
                    "(freeze them where the model is built, or call model.train() before the "
                    "first step)"
                )
            else:
                why = (
                    "they get gradients and will train (set requires_grad=False, or leave them "
                    "out of the optimizer)"
                )
            return failed(
                f"{len(trained)} parameters declared frozen have requires_grad=True as given and "
                f"sit in the optimizer: {', '.join(trained[:5])}; {why}",
                trained=trained[:50],
                **evidence,
            )
    if frozen_by_train:
        return warned(
            f"model.train() sets requires_grad=False on {len(frozen_by_train)} parameters ("
            f"{', '.join(frozen_by_train[:5])}): they are frozen only in loops that call "
            "model.train(), as the doctor's copies do",
            **evidence,
        )
    if toggled:
        return warned(
            f"model.train() sets requires_grad=True on {', '.join(list(toggled)[:5])}", **evidence
        )
    return passed("model.train() leaves requires_grad as given", **evidence)


def _get_gradient_as_given(case: Case, names: list[str]) -> list[str]:
    """Those of ``names`` that get a non-zero gradient from one backward pass of a copy left in
    the mode it was given in (no train() or eval() call)."""
    setup = case.blueprint.fresh()
    torch.manual_seed(case.seed)
    x, y = case.on_device(case.probe_batch.batch())
    try:
        case.loss_fn(setup.model(x), y).backward()
    except Exception:  # noqa: BLE001 - the model layer reports a failing backward
        return []
    params = dict(setup.model.named_parameters())
    return [n for n in names if has_nonzero_grad(params[n])]
