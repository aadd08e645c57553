"""The model layer: forward, loss and gradients wired the way a healthy model's are."""

from __future__ import annotations

import copy
import math

import torch
from torch import nn

from labcoat._validation import article
from labcoat.doctor.case import Case, ProbeFailed
from labcoat.doctor.copies import has_nonzero_grad, optimizer_tensors, perturb_zero_tensors
from labcoat.doctor.effect import without_effect
from labcoat.doctor.features import inputs_are_ids
from labcoat.doctor.losses import takes_probabilities
from labcoat.doctor.registry import check
from labcoat.doctor.targets import layout_of, to_output
from labcoat.findings import Outcome, failed, passed, skipped, warned
from labcoat.params import unmatched as unmatched_items


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    scale = max(1.0, float(a.abs().max()) if a.numel() else 1.0)
    return bool(torch.allclose(a, b, rtol=0, atol=1e-5 * scale))


def _loss_on(case: Case, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return case.loss_fn(out, y.to(out.device))


@check(
    "model.forward",
    layer="model",
    falsifies="the forward pass fails or gives output the targets cannot be compared with",
    predicts="a finite output with one row per example and a shape that fits the targets",
)
def forward(case: Case) -> Outcome:
    out = case.output
    y = case.probe_batch.y
    evidence = {
        "output_shape": list(out.shape),
        "target_shape": list(y.shape),
        "task": case.inferred_task,
    }
    if not torch.isfinite(out).all():
        return failed(
            f"the output holds {int((~torch.isfinite(out)).sum())} non-finite values", **evidence
        )
    if out.ndim == 0 or out.shape[0] != y.shape[0]:
        return failed(
            f"output has shape {tuple(out.shape)} for {y.shape[0]} examples; the first dimension "
            "must be the batch",
            **evidence,
        )
    task = case.inferred_task
    if task == "regression" and _float_class_indices(out, y):
        return failed(
            f"targets are floating point but hold class indices below the model's {out.shape[1]} "
            "outputs: pass integer labels (y.long()) so the loss reads them as classes",
            **evidence,
        )
    if task == "regression" or (task == "classification" and case.n_outputs == 1):
        if tuple(out.shape) != tuple(y.shape):
            try:
                spread = tuple(torch.broadcast_shapes(out.shape, y.shape))
            except RuntimeError:
                spread = None
            if out.numel() == y.numel() and _loss_handles_shape(case, out, y):
                return passed(
                    f"output {tuple(out.shape)} and target {tuple(y.shape)} differ in shape, but "
                    "the loss gives what it gives on matching shapes",
                    **evidence,
                )
            if _loss_reads_extra_axis(case, out, y):
                return passed(
                    f"output {tuple(out.shape)} gives {out.shape[1]} values per target "
                    f"{tuple(y.shape)}, and the loss reads them itself (it takes a batch whose "
                    "size no elementwise broadcast would fit)",
                    **evidence,
                )
            if spread is not None and spread != tuple(y.shape) or out.numel() != y.numel():
                return failed(
                    f"output {tuple(out.shape)} and target {tuple(y.shape)} differ in shape"
                    + (f"; an elementwise loss broadcasts them to {spread}" if spread else ""),
                    **evidence,
                )
            return warned(
                f"output {tuple(out.shape)} and target {tuple(y.shape)} differ in shape but hold "
                "as many values; reshape one to match",
                **evidence,
            )
    else:
        if task == "sequence":
            fits, expected = tuple(out.shape[:-1]) == tuple(y.shape), "(N, T, V) for (N, T) targets"
        else:  # cross-entropy layout: (N, C, d1, ...) for (N, d1, ...)
            fits = out.ndim == y.ndim + 1 and tuple(out.shape[2:]) == tuple(y.shape[1:])
            expected = "(N, C) for (N,) targets"
        if not fits:
            return failed(
                f"output {tuple(out.shape)} does not fit targets {tuple(y.shape)}: expected "
                f"{expected}",
                **evidence,
            )
    return passed(
        f"output {tuple(out.shape)} is finite and fits targets {tuple(y.shape)}", **evidence
    )


def _float_class_indices(out: torch.Tensor, y: torch.Tensor) -> bool:
    """Float targets shaped like class labels for this output: (N, C, ...) for (N, ...) targets
    holding whole numbers in [0, C)."""
    if out.ndim != y.ndim + 1 or tuple(out.shape[2:]) != tuple(y.shape[1:]) or out.shape[1] < 2:
        return False
    whole = bool((y == y.round()).all()) and bool((y >= 0).all()) and bool((y < out.shape[1]).all())
    return whole


def _loss_reads_extra_axis(case: Case, out: torch.Tensor, y: torch.Tensor) -> bool:
    """True for ``(N, k)`` outputs, ``k > 1``, on ``(N,)`` targets that the loss takes on a batch
    of ``m != k`` rows. An elementwise loss cannot broadcast those shapes (it raises, unless the
    batch happens to have ``k`` rows), so such a loss reads the ``k`` values per target on purpose:
    quantile heads under a pinball loss, a mean and a variance under a Gaussian likelihood."""
    if y.ndim != 1 or out.ndim != 2 or out.shape[1] < 2:
        return False
    rows = [m for m in range(len(y) - 1, 1, -1) if m != out.shape[1]][:1]
    if not rows:
        return False
    try:
        loss = _loss_on(case, out[: rows[0]], y[: rows[0]])
    except Exception:  # noqa: BLE001 - a loss that cannot take the shapes is the finding itself
        return False
    return isinstance(loss, torch.Tensor) and bool(torch.isfinite(loss).all())


def _loss_handles_shape(case: Case, out: torch.Tensor, y: torch.Tensor) -> bool:
    """True when the user's loss on the mismatched shapes equals the loss on matched shapes:
    then the loss reshapes internally and nothing is broadcast."""
    try:
        as_is = _loss_on(case, out, y)
        matched = _loss_on(case, out.reshape(y.shape), y)
    except Exception:  # noqa: BLE001 - a loss that cannot take the shapes is the finding itself
        return False
    return (
        isinstance(as_is, torch.Tensor)
        and as_is.shape == matched.shape
        and bool(torch.allclose(as_is, matched, rtol=1e-5, atol=1e-8))
    )


@check(
    "model.metric",
    layer="model",
    falsifies="the eval metric cannot score the model's output (wrong return type, NaN)",
    predicts="metric(output, target) returns one finite number",
    applies=lambda case: (
        None
        if case.metric is not None
        else "no metric given (the controls use accuracy or the loss)"
    ),
)
def metric_value(case: Case) -> Outcome:
    x, y = case.probe_batch.batch()
    try:
        value = case.metric(case.output, y.to(case.output.device))
    except Exception as exc:  # noqa: BLE001 - the user's metric failed: that is the finding
        return failed(f"metric raised {type(exc).__name__}: {exc}")
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            return failed(
                f"metric returned a tensor of shape {tuple(value.shape)}; it must return one "
                "number (higher is better)"
            )
        value = value.item()
    try:
        if isinstance(value, (bool, str, bytes)):
            raise TypeError
        value = float(value)
    except (TypeError, ValueError):
        return failed(
            f"metric returned {type(value).__name__} {value!r:.40}; it must return one number "
            "(higher is better)"
        )
    if not math.isfinite(value):
        return failed(f"metric returned {value} on the untrained model's output", value=value)
    return passed(f"metric returns a number ({value:.4g} before training)", value=value)


@check(
    "model.loss.scalar",
    layer="model",
    falsifies="the loss is not one finite number (reduction='none', NaN from the start)",
    predicts="loss_fn(output, target) is a finite scalar tensor",
)
def loss_scalar(case: Case) -> Outcome:
    out = (
        case.output
    )  # a forward that fails is reported by model.forward, not as the loss's failure
    try:
        loss = _loss_on(case, out, case.probe_batch.y)
    except Exception as exc:  # noqa: BLE001 - the user's loss failed: that is the finding
        failure = ProbeFailed("loss", exc)
        case.earlier_report(failure)  # the backward pass and every training run will hit it too
        return failed(f"loss_fn raised {failure.signature}", probe="loss", error=failure.signature)
    if not isinstance(loss, torch.Tensor):
        return failed(
            f"loss_fn returned {article(type(loss).__name__)}; it must return a tensor to "
            "backpropagate"
        )
    if loss.numel() != 1:
        return failed(
            f"loss has shape {tuple(loss.shape)}, not a scalar: reduce it (reduction='mean') "
            "before backward",
            loss_shape=list(loss.shape),
        )
    if not torch.isfinite(loss):
        return failed(f"the initial loss is {float(loss)}", loss=float(loss))
    return passed(f"loss is a finite scalar ({float(loss):.4g})", loss=float(loss))


@check(
    "model.loss.batch_scaling",
    layer="model",
    explains=("update.finite", "overfit.*"),
    falsifies="the loss grows with batch size (a sum where a mean was meant)",
    predicts="the loss of a batch repeated twice equals the loss of the batch",
)
def loss_batch_scaling(case: Case) -> Outcome:
    x, y = case.probe_batch.batch()
    out = case.output
    try:
        single = float(_loss_on(case, out, y))
        out2 = case.forward(case.eval_model, torch.cat([x, x]))
        double = float(_loss_on(case, out2, torch.cat([y, y])))
    except Exception as exc:  # noqa: BLE001
        return skipped(
            f"loss on a doubled batch could not be computed ({type(exc).__name__}: {exc})"
        )
    ratio = double / single if single else float("nan")
    evidence = {"loss": single, "loss_doubled_batch": double, "ratio": ratio}
    if single and abs(ratio - 2.0) < 0.05:
        return warned(
            "the loss doubles when the batch doubles: reduction='sum'? the learning rate then "
            "depends on batch size",
            **evidence,
        )
    return passed(f"loss is independent of batch size (ratio {ratio:.3f})", **evidence)


@check(
    "model.loss.initial",
    layer="model",
    explains=("overfit.*",),
    falsifies="the untrained model starts far from where a healthy initialisation does",
    predicts="initial loss near ln C for C classes (near the constant-prediction loss for "
    "regression)",
)
def loss_initial(case: Case) -> Outcome:
    y = case.probe_batch.y
    out = case.output
    try:
        loss = float(_loss_on(case, out, y))
    except Exception as exc:  # noqa: BLE001
        return skipped(f"needs the loss, which raised {type(exc).__name__} (see model.loss.scalar)")
    if case.inferred_task == "regression":
        const = torch.full_like(case.output, float(y.double().mean()))
        try:
            reference = float(_loss_on(case, const, y))
        except Exception:  # noqa: BLE001
            return skipped("the loss of a constant prediction could not be computed")
        evidence = {"initial_loss": loss, "constant_prediction_loss": reference}
        if loss > 10 * reference + 1e-8:
            return warned(
                f"initial loss {loss:.4g} is over 10x that of predicting the mean ({reference:.4g}"
                "): output or target scale?",
                **evidence,
            )
        return passed(
            f"initial loss {loss:.4g} vs {reference:.4g} for predicting the mean", **evidence
        )
    ln_c = case.chance_loss
    if ln_c is None:
        return skipped("a single class has no chance-level loss")
    expected = _uniform_loss(case, y)
    if expected is None:
        expected, what = ln_c, f"ln C = {ln_c:.3f}"
    else:
        what = f"{expected:.3f}, the loss of a uniform prediction (ln C = {ln_c:.3f})"
    evidence = {
        "initial_loss": loss,
        "expected": expected,
        "ln_classes": ln_c,
        "classes": case.n_outputs,
    }
    if loss > expected + max(1.0, 0.5 * expected):
        fresh = _fresh_init_loss(case, y)
        if fresh is not None and fresh <= expected + max(1.0, 0.5 * expected):
            evidence["fresh_init_loss"] = fresh
            return warned(
                f"initial loss {loss:.3f} is far above {what}, though a fresh initialisation of "
                f"this model starts at {fresh:.3f}: the weights as given were trained, and they "
                "do worse than a uniform guess on these inputs"
                + (
                    ": the token ids likely mean something else to the model than to your data "
                    "(another tokenizer or vocabulary, an offset, special ids moved)"
                    if inputs_are_ids(case)
                    else ": the inputs are likely not what it was trained on (another "
                    "preprocessing or scale, columns in another order)"
                ),
                **evidence,
            )
        scale = _input_scale(case)
        if scale is not None:
            evidence["largest_input"] = scale
            return warned(
                f"initial loss {loss:.3f} is far above {what}: unscaled inputs (values up to "
                f"{scale:.4g}; standardise them or divide by the range)",
                **evidence,
            )
        return warned(
            f"initial loss {loss:.3f} is far above {what}: over-confident initialisation or "
            "unscaled inputs",
            **evidence,
        )
    return passed(f"initial loss {loss:.3f} near {what}", **evidence)


def _fresh_init_loss(case: Case, y: torch.Tensor) -> float | None:
    """The loss on the probe batch of a copy whose layers are all re-initialised (their own
    ``reset_parameters``), or None where none can be: what this architecture starts at before
    any training, to tell trained weights that misread the inputs from an over-confident init."""
    model = copy.deepcopy(case.eval_model)
    torch.manual_seed(case.seed)
    owners: dict[int, int] = {}
    for module in model.modules():
        for p in module.parameters(recurse=False):
            owners[id(p)] = owners.get(id(p), 0) + 1
    reset = 0
    for module in model.modules():
        # a tied weight (an embedding shared with the output layer) is left as given: which of
        # its owners' initialisations the architecture means cannot be told
        shared = any(owners[id(p)] > 1 for p in module.parameters(recurse=False))
        if callable(getattr(module, "reset_parameters", None)) and not shared:
            module.reset_parameters()
            reset += 1
    if not reset:
        return None
    try:
        return float(_loss_on(case, case.forward(model, case.probe_batch.x), y))
    except Exception:  # noqa: BLE001 - the unchanged model's loss is reported as it is
        return None


#: float inputs whose magnitude exceeds this look unscaled (raw pixels, raw measurements)
UNSCALED_INPUT = 20.0


def _input_scale(case: Case) -> float | None:
    """The largest |input| where float inputs look unscaled (raw 0-255 pixels), else None."""
    x = case.probe_batch.x
    if not torch.is_floating_point(x):
        return None
    largest = float(x.abs().max()) if x.numel() else 0.0
    return largest if largest > UNSCALED_INPUT else None


def _uniform_loss(case: Case, y: torch.Tensor) -> float | None:
    """The user's loss for a prediction that gives every class the same probability: what a
    healthy initialisation starts near, with the loss's own reduction, weights and smoothing."""
    layout = layout_of(case)
    uniform = torch.full(
        tuple(y.shape) + (layout.n_classes,), -math.log(layout.n_classes), dtype=torch.float64
    )
    try:
        value = float(_loss_on(case, to_output(uniform, case.output, layout), y))
    except Exception:  # noqa: BLE001 - fall back to ln C
        return None
    return value if math.isfinite(value) else None


@check(
    "model.loss.logits",
    layer="model",
    explains=("overfit.*", "shuffle.*"),
    falsifies="probabilities are fed to a loss that expects logits (softmax applied twice)",
    predicts="outputs are unnormalised logits unless the loss takes probabilities",
    applies=lambda case: (
        None if case.inferred_task != "regression" else "regression outputs are not logits"
    ),
)
def loss_logits(case: Case) -> Outcome:
    out = case.output
    probabilities = takes_probabilities(case.loss_fn)
    if case.n_outputs == 1:
        looks = bool((out > 0).all() and (out < 1).all() and out.std() > 0)
        shape = "lie in (0, 1)"
    else:
        looks = bool(
            (out >= 0).all()
            and torch.allclose(out.sum(-1), torch.ones_like(out.sum(-1)), atol=1e-3)
        )
        shape = "are non-negative and sum to 1"
    if looks and not probabilities:
        return warned(
            f"outputs {shape}: they look like probabilities, but the loss expects logits (drop the "
            "softmax/sigmoid)",
            min=float(out.min()),
            max=float(out.max()),
        )
    return passed(
        "outputs look like logits"
        if not looks
        else "probabilities go to a loss that takes probabilities"
    )


@check(
    "model.loss.log_probabilities",
    layer="model",
    explains=("overfit.*", "shuffle.*"),
    falsifies="a loss that takes log-probabilities (NLLLoss, KLDivLoss) is given logits or "
    "probabilities (log_softmax missing, or softmax in its place)",
    predicts="where the loss falls by one when every output rises by one (it reads outputs as "
    "log-probabilities), exp(output) sums to 1 over the classes",
    applies=lambda case: (
        None
        if case.inferred_task != "regression" and (case.n_outputs or 1) > 1
        else "only for outputs with a score per class"
    ),
)
def loss_log_probabilities(case: Case) -> Outcome:
    out, y = case.output, case.probe_batch.y
    try:
        drop = float(_loss_on(case, out, y) - _loss_on(case, out + 1, y))
    except Exception as exc:  # noqa: BLE001 - the loss probes report a loss that raises
        return skipped(f"the loss could not be computed ({type(exc).__name__})")
    if not math.isfinite(drop) or drop < 0.5:
        return passed(
            "the loss does not read outputs as log-probabilities (it normalises them itself)",
            drop_when_outputs_rise_by_1=drop,
        )
    dim = -1 if case.inferred_task == "sequence" else 1
    log_total = torch.logsumexp(out.double(), dim)
    evidence = {
        "drop_when_outputs_rise_by_1": drop,
        "max_abs_logsumexp": float(log_total.abs().max()),
    }
    # log-probabilities rounded to half precision sum to 1 only within their rounding
    tolerance = 1e-3 if torch.finfo(out.dtype).bits >= 32 else 0.05
    if float(log_total.abs().max()) <= tolerance:
        return passed("outputs are log-probabilities, as the loss expects", **evidence)
    sums = out.double().sum(dim)
    if bool((out >= 0).all()) and torch.allclose(sums, torch.ones_like(sums), atol=1e-3):
        what = "probabilities (they sum to 1): the softmax should be a log_softmax"
    else:
        what = (
            f"logits (exp(output) sums to {float(log_total.exp().median()):.3g} per example, "
            "not 1): apply log_softmax first, or use CrossEntropyLoss on the logits"
        )
    return failed(
        "the loss reads outputs as log-probabilities (it falls by "
        f"{drop:.3g} when every output rises by 1, as NLLLoss does), but the outputs are {what}; "
        "the loss is then unbounded below or flat, and its minimum is not the right class",
        **evidence,
    )


@check(
    "model.grad.coverage",
    layer="model",
    explains=("update.params.moved", "overfit.*"),
    falsifies="some trainable parameters get no gradient (detached graph, unused branch, loss cut "
    "off)",
    predicts="every trainable parameter gets a finite, non-zero gradient (or is explained by a "
    "zero-initialised layer)",
)
def grad_coverage(case: Case) -> Outcome:
    probe = case.backward
    grads = {n: g for n, g in probe.grads.items() if not case.is_declared_frozen(n)}
    if not grads:
        return skipped("no trainable parameters (see model.params.frozen)")
    missing = [n for n, g in grads.items() if g is None]
    nonfinite = [n for n, g in grads.items() if g is not None and not torch.isfinite(g).all()]
    zero = [n for n, g in grads.items() if g is not None and not bool(g.any())]
    by_step = _reached_by_step(case, missing + zero)
    missing = [n for n in missing if n not in by_step]
    zero = [n for n in zero if n not in by_step]
    sometimes = [n for n in missing + zero if n in case.reached_elsewhere]
    missing = [n for n in missing if n not in sometimes]
    zero = [n for n in zero if n not in sometimes]
    evidence = {
        "trainable": len(grads),
        "no_grad": missing,
        "nonfinite": nonfinite,
        "zero_grad": zero,
        "only_through_step": by_step[:20],
        "only_on_some_batches": sometimes[:20],
    }
    if nonfinite:
        return failed(
            f"{len(nonfinite)} parameters got non-finite gradients: {', '.join(nonfinite[:5])}",
            **evidence,
        )
    if missing:
        return failed(
            f"{len(missing)} of {len(grads)} trainable parameters get no gradient: "
            f"{', '.join(missing[:5])}",
            **evidence,
        )
    if zero and len(zero) == len(grads):
        return failed(
            f"every gradient is exactly zero (loss {probe.loss:.4g}): the loss does not depend on "
            "the parameters",
            **evidence,
        )
    if zero:
        explained = _explained_by_zero_init(case, zero)
        evidence["explained_by_zero_init"] = explained
        rest = [n for n in zero if n not in explained]
        inert = without_effect(case, rest)
        evidence["without_effect"] = inert
        rest = [n for n in rest if n not in inert]
        if rest:
            return warned(
                f"{len(rest)} parameters get an all-zero gradient: {', '.join(rest[:5])}",
                **evidence,
            )
        if inert:  # harmless: a fact for the evidence, nothing to act on
            evidence["note"] = (
                f"{len(inert)} parameters get an all-zero gradient because the output does not "
                f"depend on them ({', '.join(inert[:5])}: a bias whose shift cancels, as before "
                "a difference of two embeddings): they could be removed"
            )
            return passed(
                f"{len(grads) - len(inert)} of {len(grads)} trainable parameters get gradients; "
                f"the output does not depend on the other {len(inert)}",
                **evidence,
            )
        return passed(
            f"all {len(grads)} trainable parameters get gradients (zeros upstream of a "
            "zero-initialised layer)",
            **evidence,
        )
    through = (
        f" ({len(by_step)} only through your train step, as an auxiliary loss's head)"
        if by_step
        else ""
    )
    if sometimes:
        through += (
            f" ({len(sometimes)} only on some batches: conditional computation, as experts a "
            "router skips)"
        )
    return passed(
        f"all {len(grads)} trainable parameters get finite non-zero gradients{through}", **evidence
    )


def _reached_by_step(case: Case, names: list[str]) -> list[str]:
    """Names among ``names`` that the user's own train step gives a finite non-zero gradient: a
    head trained by an auxiliary loss in the step is used, though ``loss_fn(model(x), y)``
    never reaches it."""
    if case.step is None or not names:
        return []
    try:
        at_step = case.stepped.grads_at_step
    except ProbeFailed:
        return []
    reached = set()
    for grads in at_step:
        for n in names:
            g = grads.get(n)
            if g is not None and bool(g.any()) and bool(torch.isfinite(g).all()):
                reached.add(n)
    return [n for n in names if n in reached]


def _explained_by_zero_init(case: Case, zero: list[str]) -> list[str]:
    """Names among ``zero`` whose gradient becomes non-zero once zero-initialised layers are
    perturbed."""
    setup = case.blueprint.fresh()
    if not perturb_zero_tensors(setup.model, seed=case.seed):
        return []
    setup.model.train()
    torch.manual_seed(case.seed)
    x, y = case.on_device(case.probe_batch.batch())
    case.loss_fn(setup.model(x), y).backward()
    params = dict(setup.model.named_parameters())
    return [n for n in zero if has_nonzero_grad(params[n])]


@check(
    "model.params.frozen",
    layer="model",
    falsifies="parameters are frozen by accident (requires_grad=False left over)",
    predicts="only parameters declared in expect_frozen have requires_grad=False",
)
def params_frozen(case: Case) -> Outcome:
    named = list(case.blueprint.model.named_parameters())
    frozen = [n for n, p in named if not p.requires_grad]
    undeclared = [n for n in frozen if not case.is_declared_frozen(n)]
    unmatched = unmatched_items([n for n, _ in named], case.expect_frozen)
    evidence = {
        "parameters": len(named),
        "frozen": frozen[:50],
        "undeclared_frozen": undeclared[:50],
        "patterns_matching_nothing": unmatched,
    }
    if not named:
        return failed("the model has no parameters", **evidence)
    if len(frozen) == len(named):
        return failed(
            f"all {len(named)} parameter tensors have requires_grad=False: nothing can learn",
            **evidence,
        )
    if undeclared:
        return warned(
            f"{len(undeclared)} parameters are frozen but not declared in expect_frozen: "
            f"{', '.join(undeclared[:5])}",
            **evidence,
        )
    if unmatched:
        return warned(
            f"expect_frozen patterns match no parameter: {', '.join(unmatched)}", **evidence
        )
    return passed(
        f"{len(named) - len(frozen)} trainable, {len(frozen)} frozen as declared", **evidence
    )


@check(
    "model.params.registered",
    layer="model",
    explains=("update.*", "overfit.*"),
    falsifies="weights the forward pass trains are not parameters of the model (layers kept in a "
    "plain list or dict, a tensor with requires_grad=True set as an attribute, an nn.Parameter "
    "made inside forward)",
    predicts="every tensor that requires grad and that the output's graph reaches (the inputs "
    "aside) is one of model.parameters()",
)
def params_registered(case: Case) -> Outcome:
    setup = case.blueprint.fresh()
    setup.model.train()
    x = case.probe_batch.x.to(case.device)
    torch.manual_seed(case.seed)
    with torch.enable_grad():
        out = setup.model(x)
    if not isinstance(out, torch.Tensor) or out.grad_fn is None:
        return skipped("the output has no autograd graph to read (see model.grad.coverage)")
    registered = {id(p) for p in setup.model.parameters()}
    outside = [
        t for t in graph_leaves(out) if id(t) not in registered and not _shares_storage(t, x)
    ]
    if not outside:
        return passed("every weight the output depends on is a parameter of the model")
    held = {id(p) for _, _, p in optimizer_tensors(setup.optimizer)}
    names = _unregistered_names(setup.model)
    described = sorted(
        names.get(id(t), f"a {tuple(t.shape)} tensor made during forward") for t in outside
    )
    evidence = {
        "unregistered": described[:20],
        "values": sum(t.numel() for t in outside),
        "in_optimizer": sum(id(t) in held for t in outside),
    }
    listed = ", ".join(described[:5])
    fix = (
        "keep layers in nn.ModuleList/nn.ModuleDict, tensors as nn.Parameter attributes (or "
        "nn.ParameterList), and create parameters in __init__, not in forward"
    )
    if all(id(t) in held for t in outside):
        return warned(
            f"{len(outside)} tensors the output depends on are trained by the optimizer but are "
            f"not parameters of the model ({listed}): state_dict() does not save them and .to() "
            f"does not move them; {fix}",
            **evidence,
        )
    return failed(
        f"{len(outside)} tensors the output depends on get gradients but are not parameters of "
        f"the model, so the optimizer never updates them ({listed}): {fix}",
        **evidence,
    )


def graph_leaves(out: torch.Tensor) -> list[torch.Tensor]:
    """The leaf tensors autograd would accumulate a gradient into from ``out``: those that
    require grad and that its graph reaches, in the order first met."""
    leaves: dict[int, torch.Tensor] = {}
    seen: set[int] = set()
    stack = [out.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if isinstance(variable, torch.Tensor):
            leaves.setdefault(id(variable), variable)
        stack.extend(next_node for next_node, _ in node.next_functions)
    return list(leaves.values())


def _shares_storage(t: torch.Tensor, x: torch.Tensor) -> bool:
    """True for the input itself or a view of it made a leaf (x.detach().requires_grad_(), as a
    physics-informed model does to differentiate with respect to its inputs)."""
    try:
        return t.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    except RuntimeError:  # a tensor without storage (a functional or meta tensor)
        return False


def _unregistered_names(model: nn.Module) -> dict[int, str]:
    """Where tensors that are not parameters hang on the model: an attribute holding a tensor,
    or a plain list, tuple or dict of modules or tensors (``layers[1].weight``)."""
    names: dict[int, str] = {}

    def add(value: object, where: str) -> None:
        if isinstance(value, torch.Tensor):
            names.setdefault(id(value), where)
        elif isinstance(value, nn.Module):
            for n, p in value.named_parameters():
                names.setdefault(id(p), f"{where}.{n}")
        elif isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                add(item, f"{where}[{i}]")
        elif isinstance(value, dict):
            for key, item in value.items():
                add(item, f"{where}[{key!r}]")

    for prefix, module in model.named_modules():
        for attr, value in vars(module).items():
            if attr.startswith("_") and attr in ("_parameters", "_buffers", "_modules"):
                continue
            add(value, f"{prefix}.{attr}" if prefix else attr)
    return names


def _changed_copy(x: torch.Tensor, row: int) -> torch.Tensor | None:
    """``x`` with row ``row`` replaced by a different example, or None if all rows are equal."""
    for other in range(len(x)):
        if not torch.equal(x[other], x[row]):
            x2 = x.clone()
            x2[row] = x[other]
            return x2
    return None


def eval_randomness(case: Case, x: torch.Tensor, out: torch.Tensor) -> str | None:
    """Why a comparison of two eval-mode outputs cannot be read, or None when it can: a repeat of
    the unchanged batch must give ``out`` again, or every difference may be eval-mode noise
    (dropout left on), which model.eval_deterministic names."""
    again = case.forward(case.eval_model, x)
    if torch.equal(again, out) or _close(out, again):
        return None
    return (
        "a repeat of the unchanged batch gives other outputs in eval mode, so changes cannot be "
        "traced (see model.eval_deterministic)"
    )


@check(
    "model.batch_independence",
    layer="model",
    falsifies="examples leak into each other's outputs (a reshape or normalisation across the "
    "batch)",
    predicts="in eval mode, changing example j changes no other example's output",
)
def batch_independence(case: Case) -> Outcome:
    x = case.probe_batch.x[:8]
    if len(x) < 2:
        return skipped("needs at least two examples")
    x2 = _changed_copy(x, 0)
    if x2 is None:
        return skipped("all probe inputs are identical")
    random = eval_randomness(case, x, case.forward(case.eval_model, x))
    if random is not None:
        return skipped(random)
    model, held = _batch_statistics_held(case, x)
    out1, out2 = case.forward(model, x), case.forward(model, x2)
    diff = (out1[1:] - out2[1:]).abs().reshape(len(x) - 1, -1).amax(dim=1)
    scale = max(1.0, float(out1.abs().max()))
    leaked = torch.nonzero(diff > 1e-5 * scale).flatten() + 1
    note = (
        " (BatchNorm without running statistics normalises by the batch in eval mode too; "
        f"held at the unchanged batch's statistics: {', '.join(held[:3])})"
        if held
        else ""
    )
    if len(leaked):
        return failed(
            f"changing example 0 changed the outputs of {len(leaked)} other examples: the batch "
            f"dimension is mixed{note}",
            changed_rows=leaked.tolist(),
            max_change=float(diff.max()),
            held_batch_statistics=held,
        )
    return passed(
        f"changing one example leaves the others' outputs untouched{note}",
        max_change=float(diff.max()),
        held_batch_statistics=held,
    )


def _batch_statistics_held(case: Case, x: torch.Tensor) -> tuple[nn.Module, list[str]]:
    """The eval model, with every BatchNorm that keeps no running statistics (which normalises by
    the batch in eval mode as well, by the user's choice) given the statistics of ``x`` as its
    running ones: the mixing those layers do by design is held still, any other mixing shows."""
    names = [
        n
        for n, m in case.eval_model.named_modules()
        if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.running_mean is None
    ]
    if not names:
        return case.eval_model, []
    model = copy.deepcopy(case.eval_model)
    modules = dict(model.named_modules())
    inputs: dict[str, torch.Tensor] = {}
    hooks = [
        modules[n].register_forward_pre_hook(
            lambda _m, args, n=n: inputs.__setitem__(n, args[0].detach())
        )
        for n in names
    ]
    try:
        case.forward(model, x)
    finally:
        for hook in hooks:
            hook.remove()
    for n in names:
        seen = inputs.get(n)
        if seen is None:
            continue
        dims = [0, *range(2, seen.ndim)]
        layer = modules[n]
        layer.running_mean = seen.mean(dims)
        layer.running_var = seen.var(dims, unbiased=False)
        layer.track_running_stats = True
    return model, [n for n in names if n in inputs]


@check(
    "model.input_dependence",
    layer="model",
    falsifies="the output ignores the input",
    predicts="different inputs give different outputs (after perturbing zero-initialised layers)",
)
def input_dependence(case: Case) -> Outcome:
    x = case.probe_batch.x[:8]
    x2 = _changed_copy(x, 0)
    if x2 is None:
        return skipped("all probe inputs are identical")
    model = case.eval_model
    perturbed: list[str] = []
    for attempt in range(2):
        out1, out2 = case.forward(model, x), case.forward(model, x2)
        change = float((out1[0] - out2[0]).abs().max())
        if change > 0:
            note = (
                f" once zero-initialised {', '.join(perturbed[:3])} were perturbed"
                if perturbed
                else ""
            )
            return passed(
                f"changing the input changes the output{note}", change=change, perturbed=perturbed
            )
        if attempt == 0:
            model = copy.deepcopy(case.eval_model)
            perturbed = perturb_zero_tensors(model, seed=case.seed)
            if not perturbed:
                break
    return failed("the output does not change when the input changes", perturbed=perturbed)


def _predicts_its_inputs(case: Case) -> str | None:
    if case.inferred_task != "sequence":
        return "only sequence models are causal"
    if case.target_offset is None:
        return (
            "targets are not the input tokens (shifted or not): a model that labels whole "
            "sequences may read both directions"
        )
    return None


@check(
    "model.causality",
    layer="model",
    falsifies="a sequence model sees the future (missing causal mask)",
    predicts="outputs at position t do not change when tokens after t change",
    applies=lambda case: _predicts_its_inputs(case),
)
def causality(case: Case) -> Outcome:
    x = case.probe_batch.x[:8]
    if x.ndim < 2 or x.shape[1] < 3:
        return skipped(f"inputs of shape {tuple(x.shape)} have no time axis to test")
    t = x.shape[1] // 2
    x2 = x.clone()
    x2[:, t + 1 :] = x.roll(1, dims=0)[:, t + 1 :]
    if torch.equal(x2, x):
        x2[:, t + 1 :] = x.flip(1)[:, t + 1 :]
    out1, out2 = case.forward(case.eval_model, x), case.forward(case.eval_model, x2)
    random = eval_randomness(case, x, out1)
    if random is not None:
        return skipped(random)
    diff = (out1[:, : t + 1] - out2[:, : t + 1]).abs()
    per_pos = diff.reshape(len(x), t + 1, -1).amax(dim=(0, 2))
    scale = max(1.0, float(out1.abs().max()))
    leaked = torch.nonzero(per_pos > 1e-5 * scale).flatten()
    if len(leaked):
        return failed(
            f"outputs at positions {leaked[:5].tolist()} (<= {t}) changed when only tokens after "
            f"{t} changed: the model sees the future",
            split_position=t,
            max_change=float(per_pos.max()),
        )
    return passed(f"positions 0..{t} ignore tokens after {t}", split_position=t)


#: values of a unit (examples, times positions) a layer must show for its units to be judged
DEAD_UNIT_ROWS = 8


@check(
    "model.dead_units",
    layer="model",
    explains=("overfit.*",),
    falsifies="ReLU units are dead from the start (output zero for every example)",
    predicts="each ReLU layer has most units active on some example of the first batch",
)
def dead_units(case: Case) -> Outcome:
    acts = (nn.ReLU, nn.ReLU6)
    layers = {n: m for n, m in case.eval_model.named_modules() if isinstance(m, acts)}
    if not layers:
        return skipped("no nn.ReLU modules to observe (functional relu calls are invisible)")
    dead: dict[str, float] = {}
    seen: dict[str, int] = {}  # the most values of one unit a call showed

    def hook(name):
        def record(_module, _inp, out):
            o = out.detach()
            unit = o.transpose(0, 1).reshape(o.shape[1], -1) if o.ndim > 2 else o.T
            frac = (
                float((unit <= 0).all(dim=1).double().mean())
                if o.ndim > 1
                else float((o <= 0).all())
            )
            dead[name] = max(frac, dead.get(name, 0.0))
            seen[name] = max(unit.shape[-1] if o.ndim > 1 else o.numel(), seen.get(name, 0))

        return record

    handles = [m.register_forward_hook(hook(n)) for n, m in layers.items()]
    try:
        case.forward(case.eval_model, case.probe_batch.x)
    finally:
        for h in handles:
            h.remove()
    # a unit a layer shows for a handful of examples only (an expert a router sent few to)
    # may be zero on all of them by chance: half of healthy ReLU units are, on any one
    few = sorted(n for n, rows in seen.items() if rows < DEAD_UNIT_ROWS)
    judged = {n: f for n, f in dead.items() if n not in few}
    all_dead = [n for n, f in judged.items() if f == 1.0]
    mostly = {n: f for n, f in judged.items() if 0.5 < f < 1.0}
    evidence = {"dead_fraction": dead, "too_few_values": few[:50]}
    if all_dead:
        return failed(
            f"every unit of {', '.join(all_dead[:3])} is zero for every example: no "
            "gradient passes",
            **evidence,
        )
    if mostly:
        return warned(f"over half the units are dead in {', '.join(mostly)}", **evidence)
    if not judged:
        return skipped(
            f"every ReLU layer showed each unit fewer than {DEAD_UNIT_ROWS} times", **evidence
        )
    return passed(f"{len(judged)} ReLU layers, at most {max(judged.values()):.0%} dead", **evidence)


@check(
    "model.eval_deterministic",
    layer="model",
    falsifies="eval mode is still random (dropout or noise left on)",
    predicts="two eval-mode forward passes on the same input agree exactly",
)
def eval_deterministic(case: Case) -> Outcome:
    x = case.probe_batch.x
    torch.manual_seed(case.seed + 1)
    a = case.forward(case.eval_model, x)
    torch.manual_seed(case.seed + 2)
    b = case.forward(case.eval_model, x)
    if not _close(a, b):
        return failed(
            "two eval-mode passes on the same input differ: dropout or sampling ignores "
            "model.eval()",
            max_difference=float((a - b).abs().max()),
        )
    return passed("eval-mode output is deterministic")


#: normalisation layers whose buffers are running statistics: they start at the identity
#: (mean 0, variance 1) and are estimated over training, so eval mode at init is normal for them
_RUNNING_STATISTICS = (nn.modules.batchnorm._NormBase,)


def _far_above(loss: float, reference: float, task: str) -> bool:
    """The initial-loss rule of model.loss.initial: far above ln C, or 10x for regression."""
    if task == "regression":
        return loss > 10 * reference + 1e-8
    return loss > reference + max(1.0, 0.5 * reference)


@check(
    "model.mode_state",
    layer="model",
    falsifies="eval mode reads state that only a train-mode forward initialises (spectral_norm's "
    "singular vectors, a data-dependent init), so the model as given is wrong in eval mode",
    predicts="at init, eval mode scores the probe batch about as train mode does, or the gap is "
    "not closed by one train-mode forward (BatchNorm running statistics are estimated over "
    "training)",
)
def mode_state(case: Case) -> Outcome:
    x, y = case.probe_batch.batch()
    eval_out = case.output
    setup = case.blueprint.fresh()
    model = setup.model
    before = {n: b.detach().clone() for n, b in model.named_buffers()}
    model.train()
    torch.manual_seed(case.seed)
    try:
        train_out = case.forward(model, x)
    except Exception as exc:  # noqa: BLE001 - the backward probe reports a train-mode failure
        return skipped(
            f"a train-mode forward raised {type(exc).__name__} (see model.grad.coverage)"
        )
    buffers = dict(model.named_buffers())
    changed = [n for n, b in buffers.items() if n not in before or not torch.equal(before[n], b)]
    modules = dict(model.named_modules())

    def owner(name: str) -> str:
        return name.rpartition(".")[0]

    statistics = [n for n in changed if isinstance(modules.get(owner(n)), _RUNNING_STATISTICS)]
    stateful = sorted({owner(n) for n in changed if n not in statistics})
    evidence = {"buffers_changed_by_train_forward": changed[:20], "modules": stateful[:20]}
    if not stateful:
        if statistics:
            where = ", ".join(sorted({owner(n) for n in statistics})[:5])
            return passed(
                f"one train-mode forward changes only running statistics ({where}), which training "
                "estimates",
                **evidence,
            )
        return passed("no module keeps state that a train-mode forward changes", **evidence)
    with torch.no_grad():  # isolate the suspects: running statistics go back to their start
        for n in statistics:
            buffers[n].copy_(before[n])
    model.eval()
    after_out = case.forward(model, x)
    try:
        losses = [float(_loss_on(case, out, y)) for out in (train_out, eval_out, after_out)]
    except Exception as exc:  # noqa: BLE001
        return skipped(
            f"the loss could not be computed ({type(exc).__name__}; see model.loss.scalar)",
            **evidence,
        )
    train_loss, eval_loss, after_loss = losses
    scale = float(eval_out.abs().mean() / after_out.abs().mean().clamp_min(1e-12))
    evidence.update(
        train_loss=train_loss,
        eval_loss_at_init=eval_loss,
        eval_loss_after_train_forward=after_loss,
        output_scale_ratio=scale,
    )
    task = case.inferred_task
    names = ", ".join(
        f"{n or '<model>'} ({type(modules.get(n, model)).__name__})" for n in stateful[:5]
    )
    if _far_above(eval_loss, train_loss, task) and not _far_above(after_loss, train_loss, task):
        return failed(
            f"at init the eval-mode loss is {eval_loss:.4g} but the train-mode loss is "
            f"{train_loss:.4g} (eval outputs {scale:.3g}x the size); one train-mode forward "
            f"changes the buffers of {names} and brings eval mode to {after_loss:.4g}: their state "
            "is set only by a forward in train mode, so evaluating before any training is wrong "
            "(run one train-mode forward first; for spectral norm, "
            "torch.nn.utils.parametrizations.spectral_norm initialises it)",
            **evidence,
        )
    if _far_above(eval_loss, train_loss, task):
        return warned(
            f"at init the eval-mode loss is {eval_loss:.4g}, the train-mode loss {train_loss:.4g}; "
            f"{names} keep state that train mode changes",
            **evidence,
        )
    return passed(
        f"{names} keep state that train mode changes; eval mode agrees at init (loss "
        f"{eval_loss:.4g} vs {train_loss:.4g})",
        **evidence,
    )
