"""The context every doctor check receives: the user's setup on copies, fixed examples and the
results of shared probes (one forward pass, one backward pass), each computed once.

A probe that raises inside the user's code is remembered as :class:`ProbeFailed`; the first
check that needs it reports the failure and later ones skip, naming what they depended on.
"""

from __future__ import annotations

import copy
import math
import types
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any, Callable

import torch
from torch import nn

from labcoat._validation import article
from labcoat.doctor.copies import (
    Blueprint,
    Setup,
    UserState,
    dense_grad,
    device_of,
    has_nonzero_grad,
    named_tensors,
)
from labcoat.doctor.inputs import Examples
from labcoat.doctor.losses import ignore_index, scores_binary_targets, takes_labels_past_outputs
from labcoat.doctor.progress import ControlProgress
from labcoat.errors import InputError
from labcoat.params import name_matches

Task = str  # "classification" | "regression" | "sequence"
TASKS = ("classification", "regression", "sequence")
#: calls a train step may take before its first optimizer.step(): one that accumulates gradients
#: over several calls (``if calls % k == 0: optimizer.step()``) updates every k calls
MAX_CALLS_PER_UPDATE = 32


#: batches of the training data, besides the probe batch, tried for a parameter it left out
OTHER_BATCHES = 16


class ProbeFailed(Exception):
    """A shared probe raised inside the user's code (forward, loss, backward or step)."""

    def __init__(self, probe: str, error: BaseException, hint: str = ""):
        super().__init__(
            f"{probe} raised {type(error).__name__}: {error}" + (f"; {hint}" if hint else "")
        )
        self.probe = probe
        self.error = error

    @property
    def signature(self) -> str:
        """The error itself, so that one cause failing several probes is reported once."""
        return f"{type(self.error).__name__}: {self.error}"


def standard_step(
    model: nn.Module,
    batch: tuple[torch.Tensor, torch.Tensor],
    optimizer: torch.optim.Optimizer,
    loss_fn: Callable,
) -> torch.Tensor:
    """The textbook train step used when the user gives none."""
    x, y = batch
    optimizer.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss


@dataclass
class Case:
    blueprint: Blueprint
    train: Examples
    val: Examples
    loss_fn: Callable[[Any, Any], torch.Tensor]
    step: Callable | None = None
    metric: Callable[[Any, Any], float] | None = None
    task: Task | None = None
    expect_frozen: tuple[str, ...] = ()
    expect_leaky: tuple[int, ...] = ()  # features declared to predict the label on their own
    seed: int = 0
    effort: str = "fast"
    probe_size: int = 32
    user_state: UserState | None = None  # the caller's objects, to prove they stay untouched
    #: the caller's model and optimizer, which a step may hold (a scheduler built on the optimizer):
    #: each run's copy of the step holds that run's copies instead
    callers: tuple[nn.Module, torch.optim.Optimizer | None] | None = None
    val_given: bool = False  # the held-out data is the user's val_data, not labcoat's split
    #: the examples as the user's data yielded them, before the split (batch boundaries kept)
    read: Examples | None = None
    #: the user's DataLoader, when the data is one (its workers are run by data.loader.workers)
    loader: Any = None
    progress: ControlProgress = field(default_factory=lambda: ControlProgress(False), repr=False)
    _results: dict[str, Any] = field(default_factory=dict, repr=False)
    _failed_probes: dict[str, ProbeFailed] = field(default_factory=dict, repr=False)
    _reported: dict[str, str] = field(
        default_factory=dict, repr=False
    )  # error signature -> probe that reported it

    # -- data ---------------------------------------------------------------------------------
    @cached_property
    def device(self) -> torch.device:
        """Where the copies live (the blueprint's device, which never changes): read once, since
        training loops ask for it on every batch."""
        return device_of(self.blueprint.model)

    def on_device(
        self, batch: tuple[torch.Tensor, torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        x, y = batch
        return x.to(self.device), y.to(self.device)

    @cached_property
    def probe_batch(self) -> Examples:
        """A small fixed batch from the training data, classes mixed where possible."""
        return self.train.take(slice(0, min(self.probe_size, len(self.train))))

    @property
    def split_owner(self) -> str:
        """Whose train/validation split the data layer judges, for messages about it."""
        if self.val_given:
            return "your split (val_data)"
        if self.train.groups is not None:
            return (
                "labcoat's split (a random fifth held out, each group and identical inputs kept "
                "on one side)"
            )
        return "labcoat's split (a random fifth held out, identical inputs kept on one side)"

    def fresh_step(self, setup: Setup, *, reset_held: bool = False) -> Callable:
        """The train step for one run on ``setup``. A step with state of its own (an object that
        counts calls to accumulate gradients, or holds a learning-rate scheduler) is deep-copied,
        so that every run starts it afresh and the caller's object is left as it was; what it
        holds of the caller's model and optimizer becomes this run's copies, so a scheduler it
        steps drives the copy's learning rate. A plain function is kept, with the training state
        it reads from a global or a closure (a scheduler, a gradient scaler, an EMA model)
        swapped for copies. A step that reaches for the caller's model itself is still caught
        changing it. ``reset_held``: re-initialise this run's copies of the modules the step
        holds besides the model (see :func:`held_modules`), as an ablation of what they know."""
        if self.step is None:
            return standard_step
        step = _fresh(self.step, self._to_copies(setup))
        if reset_held:
            originals = {id(m) for m in held_modules(self.step, setup.model).values()}
            for module in held_modules(step, setup.model).values():
                if id(module) not in originals:  # a copy for this run, never the caller's
                    for sub in module.modules():
                        if callable(getattr(sub, "reset_parameters", None)):
                            sub.reset_parameters()
        if self.train.fields is None:
            return step
        return _dict_batch_step(step, self.train.fields)

    def _to_copies(self, setup: Setup) -> dict[int, Any]:
        """A deepcopy memo that sends the caller's model, optimizer and tensors to ``setup``'s."""
        if self.callers is None:
            return {}
        model, optimizer = self.callers
        memo: dict[int, Any] = {id(model): setup.model}
        if optimizer is not None:
            memo[id(optimizer)] = setup.optimizer
        for (_, mine), (_, copied) in zip(named_tensors(model), named_tensors(setup.model)):
            memo[id(mine)] = copied
        return memo

    @property
    def calls_per_update(self) -> int:
        """Calls of the user's step per optimizer step: more than one for a step that accumulates
        gradients over calls. Training controls count in updates, so they call it this many
        times per step of their effort."""
        if self.step is None:
            return 1
        try:
            return self.stepped.calls_per_update
        except ProbeFailed:
            return 1

    # -- probes (each runs once) --------------------------------------------------------------
    def _probe(self, name: str, fn: Callable[[], Any]) -> Any:
        if name in self._failed_probes:
            raise self._failed_probes[name]
        try:
            return fn()
        except ProbeFailed:
            raise
        except Exception as exc:  # noqa: BLE001 - the user's code failed; that is the finding
            failure = ProbeFailed(name, exc, self._likely_cause(exc))
            self._failed_probes[name] = failure
            raise failure from exc

    def probe_once(self, name: str, fn: Callable[[], Any]) -> Any:
        """Run a named probe once and keep its result for every check that needs it."""
        if name not in self._results:
            self._results[name] = self._probe(name, fn)
        return self._results[name]

    def earlier_report(self, failure: ProbeFailed) -> str | None:
        """None the first time a failure is reported; after that, the probe whose failure with the
        same error was reported, so later checks skip instead of repeating one cause."""
        earlier = self._reported.get(failure.signature) or self._reported.get(
            f"probe:{failure.probe}"
        )
        if earlier is None:
            self._reported[failure.signature] = self._reported[f"probe:{failure.probe}"] = (
                failure.probe
            )
        return earlier

    def _likely_cause(self, error: BaseException) -> str:
        """A cause that PyTorch's error message leaves for the user to work out."""
        x = self.train.x
        weights = [p.dtype for p in self.blueprint.model.parameters() if torch.is_floating_point(p)]
        # PyTorch words a dtype clash as 'must have the same dtype', 'Input type (double) and
        # bias type (float) should be the same', 'expected scalar type Double but found Float'
        said = str(error).lower()
        if (
            "type" in said
            and "convert" not in said
            and torch.is_floating_point(x)
            and weights
            and x.dtype != weights[0]
        ):
            return (
                f"the inputs are {str(x.dtype).removeprefix('torch.')} but the model's parameters "
                f"are {str(weights[0]).removeprefix('torch.')}: convert one to the other (X.to("
                f"{weights[0]}) or model.to({x.dtype}))"
            )
        out_of_range = _ids_beyond_embeddings(self.blueprint.model, x)
        if out_of_range and ("index" in said and "range" in said or isinstance(error, IndexError)):
            return out_of_range
        return ""

    @cached_property
    def eval_model(self) -> nn.Module:
        """A copy in eval mode for read-only probes; never stepped."""
        model = self.blueprint.fresh().model
        model.eval()
        return model

    def forward(self, model: nn.Module, x: torch.Tensor) -> torch.Tensor:
        """``model(x)`` without gradients, insisting on a tensor output."""
        with torch.no_grad():
            return _one_tensor(model(x.to(self.device)))

    @cached_property
    def _probe_forward(self) -> Any:
        """The pristine copy's eval-mode output on the probe batch, as the model returns it:
        computed once for :meth:`refuse_structured_output` and :attr:`output`."""
        with torch.no_grad():
            return self.eval_model(self.probe_batch.x.to(self.device))

    def refuse_structured_output(self) -> None:
        """Raise an :class:`InputError` when the model returns several outputs that the user's
        loss consumes together (a VAE's reconstruction, mean and log-variance; logits and an
        auxiliary loss): a deliberate design the checks cannot read, not a broken model. An
        output the loss cannot take (``return out,`` by mistake, ``None``) is left to
        ``model.forward``, which reports it as the bug it is."""
        try:
            out = self._probe_forward
            if isinstance(out, torch.Tensor) or not _tensors_only(out):
                return
            with torch.no_grad():
                loss = self.loss_fn(out, self.probe_batch.y.to(self.device))
        except Exception:  # noqa: BLE001 - the ladder's probes report the user's errors
            return
        if isinstance(loss, torch.Tensor) and loss.numel() == 1 and bool(torch.isfinite(loss)):
            raise InputError(
                f"the model returns {_describe(out)} and loss_fn takes them together; the "
                "doctor's checks compare one output tensor with the targets, so it cannot check "
                "this setup as given: pass a wrapper whose forward returns that tensor (e.g. "
                "model(x)[0] or model(x)['logits']) with a loss on it"
            )

    @cached_property
    def output(self) -> torch.Tensor:
        """Eval-mode output of the pristine copy on the probe batch."""
        return self._probe("forward", lambda: _one_tensor(self._probe_forward))

    @cached_property
    def inferred_task(self) -> Task:
        if self.task is not None:
            return self.task
        y = self.train.y
        try:
            out = self.output
        except ProbeFailed:
            out = None
        if torch.is_floating_point(y):
            yes_no = out is not None and one_logit_per_target(self.probe_batch.y, out, self.loss_fn)
            return (
                "classification" if yes_no and bool(((y == 0) | (y == 1)).all()) else "regression"
            )
        if out is None:
            return "classification" if y.ndim == 1 else "sequence"
        if y.ndim >= 2 and out.ndim == y.ndim + 1 and not _classes_on_dim_1(out, y):
            return "sequence"
        past = _labels_past_outputs(y, out, ignore_index(self.loss_fn))
        if past and takes_labels_past_outputs(
            self.loss_fn, out, self.probe_batch.y.to(out.device), past
        ):  # ranks or counts the loss reads as values (CORAL's K-1 logits, Poisson counts)
            return "regression"
        return "classification"

    @cached_property
    def target_offset(self) -> int | None:
        """How sequence targets relate to the inputs: 1 when they are the inputs shifted by one
        token (``y[:, t] == x[:, t + 1]``), 0 when they are the inputs themselves (a loss that
        shifts them, as Hugging Face's causal LMs do), None otherwise (a tagger's labels).
        Only in the first two cases must the model not read inputs after position t."""
        if self.inferred_task != "sequence":
            return None
        return target_offset(self.train.x, self.train.y, ignore_index(self.loss_fn))

    @cached_property
    def n_outputs(self) -> int | None:
        """Classes (classification) or vocabulary size (sequence): the output's last dimension;
        1 where each 0/1 target value gets its own logit (binary or multi-label)."""
        if self.inferred_task == "regression":
            return None
        out = self.output
        if torch.is_floating_point(self.train.y) and out.numel() == self.probe_batch.y.numel():
            return 1
        if out.ndim == 1:
            return 1
        return (
            int(out.shape[1]) if _classes_on_dim_1(out, self.probe_batch.y) else int(out.shape[-1])
        )

    @cached_property
    def chance_loss(self) -> float | None:
        """The loss a healthy, untrained classifier should start near: ln C (or ln V)."""
        c = self.n_outputs
        if c == 1:
            return math.log(2)
        return math.log(c) if c else None

    @cached_property
    def stepped(self) -> "StepProbe":
        """Three updates by the user's step on one fresh copy (a zero-initialised layer needs
        two)."""
        return self._probe("train step", lambda: run_steps(self, 3))

    @cached_property
    def backward(self) -> "BackwardProbe":
        """Gradients of one train-mode forward/backward pass on a fresh copy."""

        def run() -> BackwardProbe:
            torch.manual_seed(self.seed)
            setup = self.blueprint.fresh()
            setup.model.train()
            x, y = self.on_device(self.probe_batch.batch())
            loss = self.loss_fn(setup.model(x), y)
            if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
                raise TypeError("the loss is not a scalar tensor (see model.loss.scalar)")
            loss.backward()
            grads = {n: dense_grad(p) for n, p in setup.model.named_parameters() if p.requires_grad}
            return BackwardProbe(setup, float(loss.detach()), grads)

        return self._probe("backward", run)

    @cached_property
    def targets_ignored(self) -> bool:
        """Whether the user's own train step computes the same loss and the same update when
        every target is moved to the next example: a self-supervised objective (contrastive,
        masked, a reconstruction of its own) trains on targets of its own making. False for
        the standard step, which always compares the outputs with the targets, and whenever it
        cannot be told (equal targets, a step that fails or returns nothing to compare)."""
        if self.step is None:
            return False
        x, y = self.on_device(self.probe_batch.batch())
        moved = torch.roll(y, 1, dims=0)
        if torch.equal(moved, y):
            return False
        results = []
        try:
            for targets in (y, moved):
                setup = self.blueprint.fresh()
                setup.model.train()
                torch.manual_seed(self.seed)
                loss = self.fresh_step(setup)(
                    setup.model, (x, targets), setup.optimizer, self.loss_fn
                )
                if not isinstance(loss, torch.Tensor):
                    return False
                results.append((loss.detach().clone(), setup.snapshot()))
        except Exception:  # noqa: BLE001 - a step that fails is reported by update.step.runs
            return False
        (loss_a, after_a), (loss_b, after_b) = results
        return torch.equal(loss_a, loss_b) and all(
            torch.equal(after_a[n], after_b[n]) for n in after_a
        )

    @cached_property
    def reached_elsewhere(self) -> frozenset[str]:
        """Trainable parameters the probe batch gives no gradient (or an all-zero one) that
        some other batch of the training data gives a finite non-zero one: conditional
        computation (a mixture-of-experts router that sent no example of the probe batch to an
        expert, a branch some inputs take) reaches a parameter on some batches only, while a
        detached or unused one is reached by none. Up to :data:`OTHER_BATCHES` batches are
        tried, only when the probe batch left a parameter out."""
        grads = self.backward.grads
        left = [n for n, g in grads.items() if g is None or not bool(g.any())]
        size = len(self.probe_batch)
        starts = range(size, len(self.train), size)[:OTHER_BATCHES]
        # a router and the layers before it are reached by every batch: with nothing reached,
        # the graph is cut (as in the self-test's mutants), not conditional
        if not left or len(left) == len(grads) or not starts:
            return frozenset()
        setup = self.blueprint.fresh()
        setup.model.train()
        params = dict(setup.model.named_parameters())
        reached: set[str] = set()
        torch.manual_seed(self.seed)
        try:
            for start in starts:
                x, y = self.on_device(self.train.take(slice(start, start + size)).batch())
                setup.model.zero_grad(set_to_none=True)
                self.loss_fn(setup.model(x), y).backward()
                reached.update(n for n in left if has_nonzero_grad(params[n]))
                if len(reached) == len(left):
                    break
        except Exception:  # noqa: BLE001 - a batch the model cannot take excuses nothing
            return frozenset()
        return frozenset(reached)

    def is_declared_frozen(self, name: str) -> bool:
        return name_matches(name, self.expect_frozen)


def _ids_beyond_embeddings(model: nn.Module, x: torch.Tensor) -> str:
    """Why integer inputs crash an embedding, when they reach past its rows: token ids made by
    another vocabulary than the one the model was built (or pretrained) with."""
    if torch.is_floating_point(x) or not x.numel():
        return ""
    low, high = int(x.min()), int(x.max())
    tables = {
        name: m.num_embeddings
        for name, m in model.named_modules()
        if isinstance(m, (nn.Embedding, nn.EmbeddingBag))
    }
    if not tables:
        return ""
    # the largest table is the vocabulary's (a position table has fewer rows than ids)
    name, rows = max(tables.items(), key=lambda item: item[1])
    if low >= 0 and high < rows:
        return ""
    return (
        f"the input ids run from {low} to {high}, but the embedding {name or 'of the model'} has "
        f"{rows} rows (ids 0..{rows - 1}): the ids come from another vocabulary than the model's "
        "(a tokenizer with more tokens, an offset, special ids added after the embedding was "
        "built); encode with the model's own tokenizer, or resize the embedding"
    )


def _fresh(step: Callable, to_copies: dict[int, Any]) -> Callable:
    """A copy of ``step`` for one run (see :meth:`Case.fresh_step`); one that cannot be copied is
    used as it is."""
    if isinstance(step, types.BuiltinFunctionType):
        return step
    if isinstance(step, types.FunctionType):
        return _with_copied_state(step, to_copies)
    try:
        return copy.deepcopy(step, memo=dict(to_copies))
    except Exception:  # noqa: BLE001 - a step holding a lock, a file, a process: use it as it is
        return step


def _with_copied_state(fn: types.FunctionType, to_copies: dict[int, Any]) -> Callable:
    """``fn``, or a twin of it that reads copies of the training state it would otherwise change
    in the caller's objects, where it reads them from its globals or closure: a learning-rate
    scheduler on the caller's optimizer (the copy is bound to this run's optimizer), a gradient
    scaler, and modules other than the model itself (an EMA or teacher model). The caller's model
    and optimizer are not swapped: a step that trains them instead of its arguments is a bug
    that update.step.isolated reports."""

    def ours(value: Any) -> bool:
        if isinstance(value, torch.optim.lr_scheduler.LRScheduler):
            return id(getattr(value, "optimizer", None)) in to_copies
        if isinstance(value, torch.amp.GradScaler):
            return True
        return isinstance(value, nn.Module) and id(value) not in to_copies

    def copied(value: Any) -> Any:
        return copy.deepcopy(value, memo=dict(to_copies))

    names = {
        name: copied(fn.__globals__[name])
        for name in fn.__code__.co_names
        if ours(fn.__globals__.get(name))
    }
    cells = list(fn.__closure__ or ())
    swapped = False
    for i, cell in enumerate(cells):
        try:
            value = cell.cell_contents
        except ValueError:  # a cell not yet filled
            continue
        if ours(value):
            cells[i], swapped = types.CellType(copied(value)), True
    if not names and not swapped:
        return fn
    twin = types.FunctionType(
        fn.__code__,
        {**fn.__globals__, **names} if names else fn.__globals__,
        fn.__name__,
        fn.__defaults__,
        tuple(cells) if fn.__closure__ else None,
    )
    twin.__kwdefaults__ = fn.__kwdefaults__
    return twin


def held_modules(step: Callable, model: nn.Module) -> dict[str, nn.Module]:
    """Modules a train step holds besides the model it trains (a teacher it distils from, an EMA
    copy, a frozen feature extractor), by name: its attributes, its closure and the globals it
    reads. A module holding any of the model's parameters is the model itself, wrapped."""
    if isinstance(step, types.MethodType):
        step = step.__self__
    found: dict[str, Any] = {}
    if isinstance(step, types.FunctionType):
        found.update({n: step.__globals__.get(n) for n in step.__code__.co_names})
        for name, cell in zip(step.__code__.co_freevars, step.__closure__ or ()):
            try:
                found[name] = cell.cell_contents
            except ValueError:  # a cell not yet filled
                continue
    elif isinstance(step, partial):
        found.update({f"arg{i}": v for i, v in enumerate(step.args)})
        found.update(step.keywords)
    elif hasattr(step, "__dict__"):
        found.update(vars(step))
    own = {id(p) for p in model.parameters()}
    return {
        name: value
        for name, value in found.items()
        if isinstance(value, nn.Module)
        and value is not model
        and not any(id(p) in own for p in value.parameters())
    }


def _dict_batch_step(step: Callable, fields: Any) -> Callable:
    """The user's step, given batches as the user's loader gives them (dicts), not (x, y)."""

    def as_dicts(
        model: nn.Module,
        batch: tuple[torch.Tensor, torch.Tensor],
        optimizer: Any,
        loss_fn: Callable,
    ) -> Any:
        x, y = batch
        return step(model, fields.as_batch(x, y), optimizer, loss_fn)

    return as_dicts


def _labels_past_outputs(y: torch.Tensor, out: Any, skip: int) -> list[int]:
    """The smallest and largest of one-per-example integer labels where they lie outside the
    classes an ``(N, C)`` output scores (0..C-1; one logit scores 0 and 1), ``skip``
    (ignore_index) aside."""
    if y.ndim != 1 or not isinstance(out, torch.Tensor) or out.ndim not in (1, 2):
        return []
    kept = y[y != skip]
    if not len(kept):
        return []
    classes = 2 if out.ndim == 1 or out.shape[1] == 1 else int(out.shape[1])
    return sorted({v for v in (int(kept.min()), int(kept.max())) if not 0 <= v < classes})


def _classes_on_dim_1(out: torch.Tensor, y: torch.Tensor) -> bool:
    """True for cross-entropy's layout of several targets per example, (N, C, d1, ...) for
    (N, d1, ...) integer targets (a per-token tagger's (N, C, T), a segmenter's (N, C, H, W)),
    where classes-last, (N, d1, ..., C), does not fit the targets."""
    if y.ndim < 2 or out.ndim != y.ndim + 1 or torch.is_floating_point(y):
        return False
    return tuple(out.shape[2:]) == tuple(y.shape[1:]) and tuple(out.shape[:-1]) != tuple(y.shape)


def _one_tensor(out: Any) -> torch.Tensor:
    """``out`` detached if it is a tensor; else the error that names what came back, and the fix."""
    if not isinstance(out, torch.Tensor):
        raise TypeError(
            f"the model returned {_describe(out)}; the doctor's checks need the one tensor "
            "your loss compares with the targets: pass a wrapper whose forward returns it "
            "(e.g. model(x)[0] or model(x)['logits'])"
        )
    return out.detach()


def _tensors_only(out: Any) -> bool:
    """Whether ``out`` is a tuple, list or dict holding tensors and nothing else."""
    values = list(out.values()) if isinstance(out, dict) else out
    return (
        isinstance(out, (tuple, list, dict))
        and len(values) > 0
        and all(isinstance(v, torch.Tensor) for v in values)
    )


def _describe(out: Any) -> str:
    """A short description of a structured model output (a tuple, a dict, ...)."""

    def part(v: Any) -> str:
        return f"tensor {tuple(v.shape)}" if isinstance(v, torch.Tensor) else type(v).__name__

    if isinstance(out, dict):
        return f"{article(type(out).__name__)} of " + ", ".join(
            f"{k!r}: {part(v)}" for k, v in list(out.items())[:4]
        )
    if isinstance(out, (tuple, list)):
        return f"{article(type(out).__name__)} of " + ", ".join(part(v) for v in out[:4])
    return article(type(out).__name__)


def one_logit_per_target(y: torch.Tensor, out: torch.Tensor, loss_fn: Callable) -> bool:
    """True when each 0/1 target value is its own yes/no question, scored from its own output:
    binary (one target per example) or multi-label (several). One-hot rows are class
    probabilities instead (a cross-entropy given one-hot targets) unless the loss is a binary
    cross-entropy, which scores each value on its own; and a loss that is lowest where the
    output equals the target (MSE on 0/1 targets) makes it regression."""
    if (
        out.shape[0] != y.shape[0]
        or out.numel() != y.numel()
        or not bool(((y == 0) | (y == 1)).all())
    ):
        return False
    if scores_binary_targets(loss_fn):
        return True
    if y[0].numel() > 1 and bool((y.reshape(len(y), -1).sum(dim=1) == 1).all()):
        return False
    return _prefers_logits(loss_fn, y, out)


#: the logit magnitude of a confident yes/no prediction
_CONFIDENT = 10.0


def _prefers_logits(loss_fn: Callable, y: torch.Tensor, out: torch.Tensor) -> bool:
    """True when the loss scores confident logits (+/-10) on the right side of zero lower than
    outputs equal to the 0/1 targets: it reads outputs as logits, not as values to match."""
    target = y.to(out.device)
    as_values = target.reshape(out.shape).to(out.dtype)
    try:
        with torch.no_grad():
            return bool(
                loss_fn(_CONFIDENT * (2 * as_values - 1), target) < loss_fn(as_values, target)
            )
    except Exception:  # noqa: BLE001 - a loss that rejects one of them: keep the yes/no reading
        return True


def target_offset(
    x: torch.Tensor, y: torch.Tensor, skip: int, agreement: float = 0.99
) -> int | None:
    """1 if ``y`` is ``x`` shifted by one position, 0 if it is ``x``, else None (padding ``skip``
    aside)."""
    if torch.is_floating_point(x) or x.shape != y.shape or x.ndim != 2 or x.shape[1] < 2:
        return None
    for offset in (1, 0):
        targets, inputs = y[:, : y.shape[1] - offset], x[:, offset:]
        valid = targets != skip
        if valid.any() and float((targets[valid] == inputs[valid]).double().mean()) >= agreement:
            return offset
    return None


@dataclass
class BackwardProbe:
    setup: Setup
    loss: float
    grads: dict[str, torch.Tensor | None]


@dataclass
class StepProbe:
    """Parameters before and after updates by the user's train step on a fresh copy."""

    setup: Setup
    before: dict[str, torch.Tensor]
    after: list[dict[str, torch.Tensor]]  # after each call that ran optimizer.step()
    losses: list[Any]  # what those calls returned
    optimizer_steps: list[int]  # optimizer.step() calls seen during each of them
    grads_at_step: list[dict[str, torch.Tensor | None]]  # gradients when optimizer.step() ran
    calls: int = 0  # calls of the step in all, those that did not update included
    #: parameters whose version counter optimizer.step() itself moved, over all calls (None:
    #: it moved no counter at all, as an optimizer writing through ``.data``: unknown)
    written_by_optimizer: frozenset[str] | None = None

    @property
    def calls_per_update(self) -> int:
        """1 for a step that updates on every call; k for one that accumulates over k calls."""
        return max(1, self.calls // max(1, sum(self.optimizer_steps)))

    def moved(self, call: int = 0) -> dict[str, bool]:
        after = self.after[call]
        return {
            n: not torch.equal(self.before[n], after[n])
            for n in self.before
            if not n.startswith("buffer:")
        }


def run_steps(
    case: Case,
    updates: int,
    *,
    lr_zero: bool = False,
    seeds: list[int] | None = None,
    batch_at: Callable[[int, int], tuple[torch.Tensor, torch.Tensor]] | None = None,
) -> StepProbe:
    """Call the user's step on one fresh copy until it has run optimizer.step() in ``updates``
    calls, and record what each of those calls did. A step that accumulates gradients is called
    until it updates, at most MAX_CALLS_PER_UPDATE times in a row; one that never updates is
    recorded once, after the last of those calls. ``seeds``: torch's seed for each update's
    calls; ``batch_at(update, call)``: the batch of each call (counted from the last update), the
    probe batch when None."""
    setup = case.blueprint.fresh()
    if lr_zero:
        for group in setup.optimizer.param_groups:
            if "lr" in group:
                group["lr"] = (
                    0.0
                    if not isinstance(group["lr"], torch.Tensor)
                    else torch.zeros_like(group["lr"])
                )
    names = {id(p): n for n, p in setup.model.named_parameters()}
    named = list(setup.model.named_parameters())
    counter: dict[str, Any] = {"steps": 0, "grads": {}, "versions": [], "written": set()}

    def pre_hook(optimizer, _args, _kwargs):
        counter["steps"] += 1
        counter["grads"] = {
            names.get(id(p), f"<foreign {g}.{i}>"): dense_grad(p)
            for g, group in enumerate(optimizer.param_groups)
            for i, p in enumerate(group["params"])
        }
        counter["versions"] = [p._version for _, p in named]

    def post_hook(optimizer, _args, _kwargs):
        counter["written"].update(
            n for (n, p), v in zip(named, counter["versions"]) if p._version != v
        )

    handles = [
        setup.optimizer.register_step_pre_hook(pre_hook),
        setup.optimizer.register_step_post_hook(post_hook),
    ]
    setup.model.train()
    before = setup.snapshot()
    afters, losses, steps, grads = [], [], [], []
    batch = case.on_device(case.probe_batch.batch())
    step = case.fresh_step(setup)
    calls = idle = 0

    def record(loss: Any) -> None:
        losses.append(loss.detach().clone() if isinstance(loss, torch.Tensor) else loss)
        afters.append(setup.snapshot())
        steps.append(counter["steps"])
        grads.append(counter["grads"])

    try:
        while len(afters) < updates and idle < MAX_CALLS_PER_UPDATE:
            counter["steps"], counter["grads"] = 0, {}
            torch.manual_seed(case.seed if seeds is None else seeds[len(afters)])
            given = batch if batch_at is None else case.on_device(batch_at(len(afters), idle))
            loss = step(setup.model, given, setup.optimizer, case.loss_fn)
            calls += 1
            if counter["steps"] or idle == MAX_CALLS_PER_UPDATE - 1:
                record(loss)
            idle = 0 if counter["steps"] else idle + 1
    finally:
        for handle in handles:
            handle.remove()
    written = frozenset(counter["written"]) if counter["written"] else None
    return StepProbe(setup, before, afters, losses, steps, grads, calls, written)
