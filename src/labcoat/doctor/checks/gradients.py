"""The model layer's check of hand-written gradients: every custom ``torch.autograd.Function``
the forward pass runs is compared with finite differences in double precision.

A wrong sign, a missing factor or a gradient sent to the wrong input trains silently: the loss
still falls a little, just not as it should. ``torch.autograd.gradcheck`` finds each on the
smallest slice that exercises the Function (its inputs on the first two probe examples).
"""

from __future__ import annotations

from typing import Any

import torch

from labcoat.doctor.case import Case
from labcoat.doctor.checks import model as _model  # noqa: F401  (its checks come first)
from labcoat.doctor.registry import check
from labcoat.findings import Outcome, failed, passed, skipped

#: probe examples the Functions are captured on (their inputs' size sets gradcheck's cost)
ROWS = 2
#: input values above which gradcheck runs in its fast mode (random projections of the Jacobian)
FULL_JACOBIAN_MAX = 2000
#: finite-difference step and tolerances, in double precision
EPS, ATOL, RTOL = 1e-6, 1e-5, 1e-3


def custom_functions(out: torch.Tensor) -> list[type]:
    """The user's ``torch.autograd.Function`` classes whose backward the graph of ``out`` runs,
    in the order met (PyTorch's own, such as checkpointing's, are left out)."""
    found: dict[type, None] = {}
    seen: set[int] = set()
    stack = [out.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        cls = getattr(node, "_forward_cls", None)
        if isinstance(cls, type) and not cls.__module__.startswith("torch"):
            found.setdefault(cls, None)
        stack.extend(next_node for next_node, _ in node.next_functions)
    return list(found)


def _captured_calls(case: Case, classes: list[type]) -> dict[type, tuple[tuple, dict, list]]:
    """The arguments of each class's first ``apply`` in one train-mode forward on the probe
    slice, and which of them required a gradient (each class's ``apply`` is put back as it was,
    whatever happens)."""
    calls: dict[type, tuple[tuple, dict, list]] = {}
    saved = {cls: cls.__dict__.get("apply") for cls in classes}

    def recorder(cls: type, original: Any):
        def apply(*args, **kwargs):
            if cls not in calls:
                calls[cls] = (
                    tuple(a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args),
                    dict(kwargs),
                    [isinstance(a, torch.Tensor) and a.requires_grad for a in args],
                )
            return original(*args, **kwargs)

        return apply

    try:
        for cls in classes:
            cls.apply = staticmethod(recorder(cls, cls.apply))
        setup = case.blueprint.fresh()
        setup.model.train()
        torch.manual_seed(case.seed)
        with torch.enable_grad():
            setup.model(case.probe_batch.x[:ROWS].to(case.device))
    finally:
        for cls, original in saved.items():
            if original is None:
                del cls.apply
            else:
                cls.apply = original
    return calls


def _directional(fn: Any, inputs: list, which: int, seed: int) -> tuple[float, float]:
    """For input ``which``: the derivative of a random projection of the outputs along a random
    direction, by central differences and by the Function's backward."""
    g = torch.Generator().manual_seed(seed)
    x = inputs[which]
    u = torch.randn(x.shape, generator=g, dtype=x.dtype)

    def outputs(shifted: torch.Tensor) -> list[torch.Tensor]:
        args = list(inputs)
        args[which] = shifted
        out = fn(*args)
        return [
            o for o in (out if isinstance(out, (tuple, list)) else (out,)) if torch.is_tensor(o)
        ]

    with torch.no_grad():
        base = outputs(x.detach())
        vs = [torch.randn(o.shape, generator=g, dtype=o.dtype) for o in base]
        plus = outputs(x.detach() + EPS * u)
        minus = outputs(x.detach() - EPS * u)
    numerical = sum(float(((p - m) / (2 * EPS) * v).sum()) for p, m, v in zip(plus, minus, vs))
    args = [a.detach().requires_grad_(a.requires_grad) if torch.is_tensor(a) else a for a in inputs]
    with torch.enable_grad():
        outs = fn(*args)
        outs = [
            o for o in (outs if isinstance(outs, (tuple, list)) else (outs,)) if torch.is_tensor(o)
        ]
        total = sum((o * v).sum() for o, v in zip(outs, vs) if o.requires_grad)
        if not isinstance(total, torch.Tensor):
            return numerical, 0.0
        (grad,) = torch.autograd.grad(total, args[which], allow_unused=True)
    analytic = 0.0 if grad is None else float((grad * u).sum())
    return numerical, analytic


def _what_is_wrong(numerical: float, analytic: float) -> str:
    if abs(analytic) < 1e-12:
        return "no gradient reaches it"
    ratio = analytic / numerical if numerical else float("inf")
    if abs(ratio + 1) < 0.05:
        return "its gradient has the wrong sign"
    return (
        f"its gradient is {ratio:.3g}x the true one along a random direction (a missing or "
        "extra factor, or another input's gradient)"
    )


def _functions_applies(case: Case) -> str | None:
    try:
        out = _graph_output(case)
    except Exception:  # noqa: BLE001 - model.forward and model.grad.coverage report it
        return "needs a train-mode forward pass, which failed (see model.grad.coverage)"
    if not custom_functions(out):
        return "the forward pass runs no custom torch.autograd.Function"
    return None


def _graph_output(case: Case) -> torch.Tensor:
    """A train-mode output of a fresh copy on the probe slice, with its autograd graph."""

    def run() -> torch.Tensor:
        setup = case.blueprint.fresh()
        setup.model.train()
        torch.manual_seed(case.seed)
        with torch.enable_grad():
            out = setup.model(case.probe_batch.x[:ROWS].to(case.device))
        if not isinstance(out, torch.Tensor):
            raise TypeError("the model's output is not one tensor (see model.forward)")
        return out

    return case.probe_once("custom functions", run)


@check(
    "model.grad.custom",
    layer="model",
    falsifies="a hand-written backward (a custom torch.autograd.Function) is wrong: a wrong sign, "
    "a missing factor, a gradient sent to the wrong input",
    predicts="each custom Function's backward agrees with finite differences of its forward "
    "(torch.autograd.gradcheck in double precision on the inputs it got from two probe "
    "examples); a piecewise-constant forward with a surrogate backward (straight-through) is "
    "exempt",
    applies=_functions_applies,
)
def grad_custom(case: Case) -> Outcome:
    classes = custom_functions(_graph_output(case))
    calls = _captured_calls(case, classes)
    checked, surrogate, broken, unjudged = [], [], {}, {}
    for cls, (args, kwargs, wanted) in calls.items():
        name = cls.__qualname__
        inputs = [
            a.double().requires_grad_(w) if torch.is_tensor(a) and a.is_floating_point() else a
            for a, w in zip(args, wanted)
        ]

        def fn(*a, cls=cls, kwargs=kwargs):
            return cls.apply(*a, **kwargs)

        differentiable = [i for i, a in enumerate(inputs) if torch.is_tensor(a) and a.requires_grad]
        if not differentiable:
            unjudged[name] = "none of its inputs requires a gradient"
            continue
        size = sum(inputs[i].numel() for i in differentiable)
        try:
            ok = torch.autograd.gradcheck(
                fn,
                tuple(inputs),
                eps=EPS,
                atol=ATOL,
                rtol=RTOL,
                raise_exception=False,
                fast_mode=size > FULL_JACOBIAN_MAX,
                check_undefined_grad=False,
            )
            directions = {i: _directional(fn, inputs, i, case.seed + i) for i in differentiable}
        except Exception as exc:  # noqa: BLE001 - e.g. float32 constants the Function holds
            unjudged[name] = f"it cannot run in double precision ({type(exc).__name__}: {exc})"[
                :200
            ]
            continue
        if ok:
            checked.append(name)
            continue
        if all(abs(num) < 1e-9 for num, _ in directions.values()):
            surrogate.append(name)  # a step function's true gradient is 0: a surrogate on purpose
            continue
        wrong = {
            i: _what_is_wrong(num, ana)
            for i, (num, ana) in directions.items()
            if abs(num - ana) > ATOL + RTOL * max(abs(num), abs(ana))
        }
        broken[name] = wrong or {
            i: "its Jacobian disagrees with finite differences" for i in differentiable
        }
    evidence = {
        "functions": [c.__qualname__ for c in classes],
        "gradcheck_passed": checked,
        "surrogate_gradients": surrogate,
        "wrong": {k: {str(i): v for i, v in w.items()} for k, w in broken.items()},
        "not_judged": unjudged,
    }
    if broken:
        name, wrong = next(iter(broken.items()))
        said = "; ".join(f"input {i}: {v}" for i, v in list(wrong.items())[:3])
        return failed(
            f"the backward of {name} disagrees with finite differences of its forward "
            f"(gradcheck in double precision): {said}",
            **evidence,
        )
    if not checked and not surrogate:
        return skipped(
            "no custom Function could be checked: "
            + "; ".join(f"{k}: {v}" for k, v in unjudged.items()),
            **evidence,
        )
    note = (
        f"; {', '.join(surrogate)} has a piecewise-constant forward and a surrogate backward "
        "(straight-through), not judged"
        if surrogate
        else ""
    )
    return passed(
        f"the backward of {', '.join(checked) or 'no Function'} agrees with finite differences "
        f"in double precision{note}",
        **evidence,
    )
