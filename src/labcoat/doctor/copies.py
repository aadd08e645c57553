"""Copies of the user's model and optimizer, so the doctor never changes what the user owns.

The model and optimizer are deep-copied *together*: one memo maps every parameter the optimizer
holds to the copy's parameter by identity, so the copy keeps the optimizer's class,
hyper-parameters, param-group structure and state, and also keeps its mistakes (a parameter left
out, a tensor from another model) for the update layer to find.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import torch
from torch import nn

from labcoat.errors import InputError

OptimizerLike = (
    torch.optim.Optimizer | Callable[[Iterable[torch.nn.Parameter]], torch.optim.Optimizer]
)


@dataclass
class Setup:
    """One working copy: a model and the optimizer built on it."""

    model: nn.Module
    optimizer: torch.optim.Optimizer

    def snapshot(self) -> dict[str, torch.Tensor]:
        """Every parameter and buffer, cloned: the baseline for 'did it move?' comparisons."""
        state = {n: p.detach().clone() for n, p in self.model.named_parameters()}
        state.update({f"buffer:{n}": b.detach().clone() for n, b in self.model.named_buffers()})
        return state


class Blueprint:
    """A pristine copy of the user's setup from which fresh working copies are made."""

    def __init__(self, model: nn.Module, optimizer: OptimizerLike):
        if not isinstance(model, nn.Module):
            raise InputError(f"model: expected a torch.nn.Module; got {type(model).__name__}")
        self.factory: Callable[[Iterable[torch.nn.Parameter]], torch.optim.Optimizer] | None = None
        if isinstance(optimizer, torch.optim.Optimizer):
            try:
                self._model, self._optimizer = copy_setup(model, optimizer)
            except Exception as exc:  # noqa: BLE001 - any failure means we cannot work on copies
                raise InputError(
                    f"model/optimizer: could not be deep-copied ({type(exc).__name__}: {exc}); "
                    "the doctor works on copies and never on your objects"
                ) from exc
            keep_frozen_grads(model, self._model)
        elif callable(optimizer):
            self.factory = optimizer
            self._model = _copy_model(model)
            self._optimizer = self._build(self._model)
        else:
            raise InputError(
                "optimizer: expected a torch.optim.Optimizer built on the model's parameters, or a "
                f"callable(params) -> Optimizer; got {type(optimizer).__name__}"
            )

    def _build(self, model: nn.Module) -> torch.optim.Optimizer:
        assert self.factory is not None
        try:
            opt = self.factory(model.parameters())
        except Exception as exc:  # noqa: BLE001
            raise InputError(f"optimizer: the factory raised {type(exc).__name__}: {exc}") from exc
        if not isinstance(opt, torch.optim.Optimizer):
            raise InputError(
                f"optimizer: the factory returned {type(opt).__name__}, not a torch.optim.Optimizer"
            )
        return opt

    @property
    def model(self) -> nn.Module:
        """The pristine copy; read it, never train it (use :meth:`fresh`)."""
        return self._model

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        return self._optimizer

    def fresh(self, *, model_wrapper: Callable[[nn.Module], nn.Module] | None = None) -> Setup:
        """A new working copy of model and optimizer, identity mapping preserved."""
        model, opt = copy_setup(self._model, self._optimizer)
        keep_frozen_grads(self._model, model)
        if model_wrapper is not None:
            model = model_wrapper(model)
        return Setup(model, opt)


def copy_setup(
    model: nn.Module, optimizer: torch.optim.Optimizer
) -> tuple[nn.Module, torch.optim.Optimizer]:
    """Deep copies of both through one memo. ``Optimizer.__getstate__`` keeps only defaults,
    state and param groups, so data a subclass sets in ``__init__`` (LBFGS's ``_params``) would
    be missing from the copy; it is copied too, through the same memo. Callables are not: a
    scheduler's wrapper around ``optimizer.step`` calls the caller's optimizer."""
    memo: dict[int, Any] = {}
    copied_model, copied_opt = copy.deepcopy((model, optimizer), memo)
    for name, value in vars(optimizer).items():
        if name not in vars(copied_opt) and not callable(value):
            setattr(copied_opt, name, copy.deepcopy(value, memo))
    return copied_model, copied_opt


def dense_grad(p: torch.Tensor) -> torch.Tensor | None:
    """A detached, dense copy of ``p.grad``: ``Embedding(sparse=True)`` gives sparse gradients,
    which most tensor ops (``any``, ``ne``, ``isfinite``) refuse."""
    if p.grad is None:
        return None
    grad = p.grad.detach()
    return grad.to_dense() if grad.is_sparse else grad.clone()


def has_nonzero_grad(p: torch.Tensor) -> bool:
    """True when ``p`` has a gradient with a non-zero entry (dense or sparse)."""
    grad = dense_grad(p)
    return grad is not None and bool(grad.any())


def keep_frozen_grads(source: nn.Module, copied: nn.Module) -> None:
    """Give the copy's frozen parameters the gradients the source's hold.

    Deep copies drop ``.grad``. A parameter frozen after a step keeps its old gradient (a zero
    tensor after ``zero_grad(set_to_none=False)``), and the optimizer still applies weight decay
    or momentum to it: without that gradient the copies would hide the update. Gradients of
    trainable parameters are left out, so that the doctor's probes see only their own."""
    for (_, p), (_, q) in zip(source.named_parameters(), copied.named_parameters()):
        if not p.requires_grad and p.grad is not None and q.shape == p.shape:
            q.grad = p.grad.detach().clone()


def _copy_model(model: nn.Module) -> nn.Module:
    try:
        return copy.deepcopy(model)
    except Exception as exc:  # noqa: BLE001
        raise InputError(f"model: could not be deep-copied ({type(exc).__name__}: {exc})") from exc


def device_of(model: nn.Module) -> torch.device:
    for tensor in list(model.parameters()) + list(model.buffers()):
        return tensor.device
    return torch.device("cpu")


def optimizer_tensors(optimizer: torch.optim.Optimizer) -> list[tuple[int, int, torch.Tensor]]:
    """(group index, position, tensor) for every tensor the optimizer updates."""
    return [
        (g, i, p)
        for g, group in enumerate(optimizer.param_groups)
        for i, p in enumerate(group["params"])
    ]


def perturb_zero_tensors(model: nn.Module, *, scale: float = 0.01, seed: int = 0) -> list[str]:
    """Give every all-zero parameter small random values; returns their names.

    A zero-initialised layer legitimately blocks gradients to everything before it and makes the
    output constant at step 0. Re-running a probe after this tells such a layer apart from a
    broken graph.
    """
    gen = torch.Generator().manual_seed(seed)
    names = []
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.numel() and not bool(p.any()):
                p.copy_((torch.randn(p.shape, generator=gen) * scale).to(p))
                names.append(name)
    return names


class UserState:
    """A snapshot of the caller's model and optimizer, to prove (and if need be restore) that the
    doctor left them bit-identical. A train step that reaches for a global model or optimizer
    instead of its arguments is the usual way they would change."""

    def __init__(self, model: nn.Module, optimizer: Any):
        self.model = model
        self.optimizer = optimizer if isinstance(optimizer, torch.optim.Optimizer) else None
        self.tensors = {n: t.detach().clone() for n, t in named_tensors(model)}
        self.grads = {
            n: (None if p.grad is None else p.grad.detach().clone())
            for n, p in model.named_parameters()
        }
        self.optimizer_state = (
            copy.deepcopy(self.optimizer.state_dict()) if self.optimizer is not None else None
        )

    def changed(self) -> list[str]:
        """Names of the caller's tensors that differ from the snapshot."""
        out = [
            n
            for n, t in named_tensors(self.model)
            if n not in self.tensors or not torch.equal(self.tensors[n], t.detach())
        ]
        for n, p in self.model.named_parameters():
            g = self.grads.get(n)
            if (g is None) != (p.grad is None) or (g is not None and not torch.equal(g, p.grad)):
                out.append(f"{n}.grad")
        if self.optimizer is not None and _state_differs(
            self.optimizer_state, self.optimizer.state_dict()
        ):
            out.append("optimizer state")
        return out

    def restore(self) -> None:
        with torch.no_grad():
            for n, t in named_tensors(self.model):
                if n in self.tensors:
                    t.copy_(self.tensors[n])
        for n, p in self.model.named_parameters():
            p.grad = None if self.grads.get(n) is None else self.grads[n].clone()
        if self.optimizer is not None:
            self.optimizer.load_state_dict(copy.deepcopy(self.optimizer_state))


def named_tensors(model: nn.Module):
    """Every parameter, then every buffer (named ``buffer:NAME``), in the model's order."""
    yield from model.named_parameters()
    for n, b in model.named_buffers():
        yield f"buffer:{n}", b


def _state_differs(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return not (
            isinstance(a, torch.Tensor)
            and isinstance(b, torch.Tensor)
            and a.shape == b.shape
            and torch.equal(a, b)
        )
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() != b.keys() or any(_state_differs(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) != len(b) or any(_state_differs(x, y) for x, y in zip(a, b))
    return a != b


def requires_grad_set_by_train(model: nn.Module) -> dict[str, bool]:
    """Parameters whose ``requires_grad`` a call of ``model.train()`` changes, with the value it
    sets: freezing that lives in an overridden ``train()`` (mmdetection's ``frozen_stages``)
    holds only in loops that call it. Works on a copy; the model as given is left alone."""
    twin = _copy_model(model)
    before = {n: p.requires_grad for n, p in twin.named_parameters()}
    twin.train()
    return {
        n: p.requires_grad
        for n, p in twin.named_parameters()
        if n in before and p.requires_grad != before[n]
    }
