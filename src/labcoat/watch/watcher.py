"""The training watch: hooks that only look, invariants that judge, alerts that say where.

``labcoat.watch(model, optimizer)`` hooks the optimizer's step (pre and post) and, when ranks
are compared, the model's forward. On a sampled step the pre-step hook computes gradient and
parameter norms on the device with fused kernels; ``observe`` moves everything pending to the
host in one transfer and hands a :class:`~labcoat.watch.sample.Sample` to each invariant.
Between sampled steps the hooks only count and keep a detached reference to the loss, so
every loss is still seen. Nothing the user's model or optimizer computes is changed, and
every hook is removed when the ``with`` block ends.
"""

from __future__ import annotations

import logging
import math
import numbers
import os
import time
import warnings
from typing import Any, Callable, Iterable, Mapping, Sequence

import torch
from torch import nn

from labcoat.errors import InputError
from labcoat.findings import Finding
from labcoat.watch._resolve import as_items, resolve_tensors, select_replicated
from labcoat.watch.alerts import Alert
from labcoat.watch.distributed import RankInfo, StepClock, Synchronizer
from labcoat.watch.evaluation import EvalResult, Evaluation, ScoreFn, evaluate
from labcoat.watch.events import EventLog, rank_path
from labcoat.watch.invariants import INVARIANTS, Invariant, Violation
from labcoat.watch.probes import fused_norms, stack_scalars, to_host
from labcoat.watch.sample import FrozenReason, Sample, WatchContext

logger = logging.getLogger("labcoat.watch")

#: sample tensors every this many steps by default; chosen with bench/watch.py so a small CPU
#: training loop runs within 3 % of its unwatched speed
DEFAULT_EVERY = 10
#: compare ranks (desync, straggler) every this many steps by default
DEFAULT_SYNC_EVERY = 50


class Watcher:
    """A running watch over one model and optimizer; made by :func:`watch`.

    Call :meth:`observe` once per training step, after ``optimizer.step()``. New alerts are
    returned, kept in :attr:`alerts`, logged to the ``labcoat.watch`` logger, passed to each
    ``on_alert`` callback and appended to the ``events`` file when one is given.
    """

    def __init__(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        *,
        expect_frozen: Any = (),
        ledger: Any = None,
        every: int = DEFAULT_EVERY,
        sync_every: int = DEFAULT_SYNC_EVERY,
        events: str | os.PathLike[str] | None = None,
        invariants: Iterable[str | Invariant] | None = None,
        options: Mapping[str, Mapping[str, Any]] | None = None,
        replicated: Any = None,
        group: Any = None,
        on_alert: Callable[[Alert], None] | Sequence[Callable[[Alert], None]] | None = None,
        evaluation: Evaluation | Sequence[Evaluation] | None = None,
    ):
        self.model = _check_model(model)
        self.optimizer = _check_optimizer(optimizer)
        self.every = _check_count(every, "every")
        self.sync_every = _check_count(sync_every, "sync_every")
        from labcoat.ledger import Ledger

        self.ledger = Ledger.for_recording(ledger)
        callbacks = [] if on_alert is None else [on_alert] if callable(on_alert) else list(on_alert)
        for cb in callbacks:
            if not callable(cb):
                raise InputError(f"`on_alert` must be callable or a list of callables; got {cb!r}.")
        self._callbacks = callbacks
        evals = [] if evaluation is None else [evaluation] if isinstance(evaluation, Evaluation) else list(evaluation)
        for ev in evals:
            if not isinstance(ev, Evaluation):
                raise InputError(
                    f"`evaluation` must be a labcoat.watch.Evaluation or a list of them; got {type(ev).__name__}."
                )
        self._periodic = evals
        self._evaluating = False
        self._invariants = INVARIANTS.create(invariants, options)
        self._declared_frozen = resolve_tensors(
            self.model, as_items(expect_frozen), "expect_frozen", with_buffers=True
        )
        self._replicated_spec = replicated
        self._events_path = events
        self._group = group

        self._alerts: list[Alert] = []
        self._events: list[dict[str, Any]] = []
        self._evaluations: list[EvalResult] = []
        self._started = False
        self._closed = False
        self._handles: list[Any] = []
        self._log: EventLog | None = None
        self.observed = 0
        self.samples = 0
        self._last_step: int | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> "Watcher":
        self.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def start(self) -> "Watcher":
        """Install the hooks and take the frozen tensors' baseline; :meth:`close` undoes it."""
        if self._started:
            raise InputError("this watch has already been started; make a new labcoat.watch(...)")
        self._started = True
        self.info = RankInfo.current(self._group)
        named = list(self.model.named_parameters())
        self._names = tuple(n for n, _ in named)
        self._params = [p for _, p in named]
        name_of = {id(p): n for n, p in named}
        group_params = tuple(
            tuple(name_of.get(id(p), f"param_groups[{g}][{i}]") for i, p in enumerate(group["params"]))
            for g, group in enumerate(self.optimizer.param_groups)
        )
        frozen: dict[str, FrozenReason] = {n: "requires_grad=False" for n, p in named if not p.requires_grad}
        frozen.update({n: "declared" for n in self._declared_frozen})
        by_name = dict(named)
        self._frozen_tensors = {n: self._declared_frozen.get(n, by_name.get(n)) for n in frozen}
        baseline = to_host([fused_norms(list(self._frozen_tensors.values()))])[0] if frozen else []
        self.context = WatchContext(
            param_names=self._names,
            frozen=frozen,
            group_params=group_params,
            frozen_baseline=dict(zip(self._frozen_tensors, baseline)),
            rank=self.info.rank,
            world_size=self.info.world_size,
            every=self.every,
        )
        self._active: list[Invariant] = []
        self._skipped: dict[str, str] = {}
        for inv in self._invariants:
            reason = inv.applies(self.context)
            if reason is None:
                inv.setup(self.context)
                self._active.append(inv)
            else:
                self._skipped[inv.kind] = reason
        self._needs = frozenset().union(*(inv.needs for inv in self._active))
        self._violated: dict[str, set[str]] = {inv.kind: set() for inv in self._active}

        self._log = (
            EventLog(rank_path(self._events_path, self.info.rank, self.info.world_size))
            if self._events_path is not None
            else None
        )
        self._reset_pending()
        self._applied_since_measure = 0
        self._sample_next = True
        self._handles.append(self.optimizer.register_step_pre_hook(self._before_step))
        self._handles.append(self.optimizer.register_step_post_hook(self._after_step))
        self._clock: StepClock | None = None
        self._sync: Synchronizer | None = None
        if "cross_rank" in self._needs:
            replicated = select_replicated(self.model, self._replicated_spec)
            self._sync = Synchronizer(list(replicated), list(replicated.values()), self.info)
            self._clock = StepClock()
            self._handles.append(self.model.register_forward_pre_hook(self._forward_start))
            self._handles.append(self.model.register_forward_hook(self._forward_end))
        return self

    def close(self) -> None:
        """Remove every hook, close the events file and hand the findings to the ledger."""
        if not self._started or self._closed:
            return
        self._closed = True
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        if self._log is not None:
            self._log.close()
        if self.ledger is not None:
            self.ledger.record_findings(self.findings(), source="watch")

    # -- hooks (they only read) ------------------------------------------------------------
    def _before_step(self, optimizer: Any, args: tuple, kwargs: dict) -> None:
        if self._clock is not None:
            self._clock.step_start()
        if not self._sample_next:
            return
        if "param_norms" in self._needs:
            self._measure_params()
        if "grad_norms" in self._needs:
            closure = args[0] if args else kwargs.get("closure")
            if closure is None:
                self._measure_grads()
            else:  # the closure computes this step's gradients inside step(): read them after
                self._grads_after_step = True
        if "lrs" in self._needs:
            self._pending_lrs = [_lr_value(g.get("lr")) for g in optimizer.param_groups]

    def _after_step(self, optimizer: Any, args: tuple, kwargs: dict) -> None:
        self._applied_since_measure += 1
        if self._clock is not None:
            self._clock.step_end()
        if self._grads_after_step:
            self._grads_after_step = False
            self._measure_grads()

    def _forward_start(self, module: nn.Module, args: Any) -> None:
        if self._clock is not None and not self._evaluating:
            self._clock.forward_start()

    def _forward_end(self, module: nn.Module, args: Any, output: Any) -> None:
        if self._clock is not None and not self._evaluating:
            self._clock.forward_end()

    def _measure_params(self) -> None:
        self._pending_params = fused_norms(self._params)
        self._pending_versions = [p._version for p in self._params]
        self._pending_applied = self._applied_since_measure
        self._applied_since_measure = 0

    def _measure_grads(self) -> None:
        with_grad = [(n, p.grad) for n, p in zip(self._names, self._params) if p.grad is not None]
        self._pending_grad_names = tuple(n for n, _ in with_grad)
        self._pending_grads = fused_norms([g for _, g in with_grad])

    def _reset_pending(self) -> None:
        self._pending_losses: list[tuple[int, Any]] = []
        self._pending_params: torch.Tensor | None = None
        self._pending_versions: list[int] | None = None
        self._pending_applied = 0
        self._pending_grads: torch.Tensor | None = None
        self._pending_grad_names: tuple[str, ...] = ()
        self._pending_lrs: list[float | None] | None = None
        self._grads_after_step = False

    # -- the user's side -------------------------------------------------------------------
    def observe(self, step: int, loss: Any = None) -> list[Alert]:
        """Record one training step (call it after ``optimizer.step()``); returns new alerts.

        ``loss`` may be a scalar tensor (kept on its device until the next sampled step) or a
        number. Under torch.distributed every rank must call ``observe`` equally often.
        """
        if not self._started or self._closed:
            raise InputError(
                "observe() was called outside the watch; call it inside "
                "`with labcoat.watch(model, optimizer) as w:`."
            )
        if isinstance(step, bool) or not isinstance(step, numbers.Integral):
            raise InputError(f"`step` must be an int (the training step); got {step!r}.")
        step = int(step)
        self._last_step = step
        if loss is not None:
            self.record_loss(step, loss)
        index = self.observed
        self.observed += 1
        if self._clock is not None:
            self._clock.lap()
        sampled = index % self.every == 0
        synced = self._sync is not None and index % self.sync_every == 0
        new: list[Alert] = []
        if sampled or synced:
            new = self._judge(self._collect(step, sampled, synced))
        self._sample_next = self.observed % self.every == 0
        for ev in self._periodic:
            if self.observed % ev.every == 0:
                self.evaluate(
                    ev.batches, ev.score, width=ev.width, threshold=ev.threshold, lower=ev.lower,
                    upper=ev.upper, confidence=ev.confidence, name=ev.name, step=step,
                )
        if self._clock is not None:
            self._clock.restart()
        return new

    def evaluate(
        self,
        batches: Iterable[Any] | Callable[[], Iterable[Any]],
        score: ScoreFn,
        *,
        width: float | None = 0.05,
        threshold: float | None = None,
        lower: float = 0.0,
        upper: float = 1.0,
        confidence: float = 0.95,
        name: str = "eval",
        step: int | None = None,
    ) -> EvalResult:
        """Evaluate the model now, stopping once the interval is tight; recorded as an event.

        ``score(batch)`` returns one score per item in ``[lower, upper]``; scores stream into
        an anytime-valid confidence sequence (:mod:`labcoat.watch.evaluation`), so stopping
        at ``width`` (or once ``threshold`` is excluded) keeps its ``confidence``.
        """
        self._evaluating = True
        try:
            result = evaluate(
                self.model, batches, score, width=width, threshold=threshold, lower=lower,
                upper=upper, confidence=confidence, name=name,
                step=self._last_step if step is None else step,
            )
        finally:
            self._evaluating = False
        self._evaluations.append(result)
        self._emit(result.to_event(self.info.rank if self._started else None))
        return result

    def record_loss(self, step: int, loss: Any) -> None:
        """Add a loss that arrives apart from :meth:`observe` (e.g. from a trainer's logs)."""
        if isinstance(loss, torch.Tensor):
            if loss.numel() != 1:
                raise InputError(
                    f"`loss` must be a scalar; got a tensor of shape {tuple(loss.shape)}. "
                    "Pass the reduced training loss (e.g. loss.mean())."
                )
            self._pending_losses.append((int(step), loss.detach()))
        elif isinstance(loss, numbers.Real) and not isinstance(loss, bool):
            self._pending_losses.append((int(step), float(loss)))
        else:
            raise InputError(f"`loss` must be a scalar tensor or a number; got {type(loss).__name__}.")

    def _collect(self, step: int, sampled: bool, synced: bool) -> Sample:
        if sampled and "param_norms" in self._needs and self._pending_params is None:
            self._measure_params()  # no optimizer step ran this step (skipped or accumulating)
        vectors: dict[str, torch.Tensor] = {}
        if self._pending_losses:
            vectors["losses"] = stack_scalars([v for _, v in self._pending_losses])
        if sampled and self._pending_params is not None:
            vectors["params"] = self._pending_params
        if sampled and self._pending_grads is not None:
            vectors["grads"] = self._pending_grads
        if sampled and "frozen_norms" in self._needs and self._frozen_tensors:
            vectors["frozen"] = fused_norms(list(self._frozen_tensors.values()))
        host = dict(zip(vectors, to_host(list(vectors.values()))))
        cross = self._sync.gather(self._clock.take_median()) if synced and self._sync and self._clock else None
        grads = host.get("grads")
        params = host.get("params")
        if params is not None:
            applied = self._pending_applied
        elif sampled:
            applied, self._applied_since_measure = self._applied_since_measure, 0
        else:
            applied = 0
        sample = Sample(
            step=step,
            time=time.time(),
            losses=[(s, v) for (s, _), v in zip(self._pending_losses, host.get("losses", []))],
            applied_steps=applied,
            lrs=self._pending_lrs if sampled else None,
            grad_norms=dict(zip(self._pending_grad_names, grads)) if grads is not None else None,
            param_norms=dict(zip(self._names, params)) if params is not None else None,
            param_versions=dict(zip(self._names, self._pending_versions or ())) if params is not None else None,
            frozen_norms=dict(zip(self._frozen_tensors, host["frozen"])) if "frozen" in host else None,
            cross_rank=cross,
        )
        self._reset_pending()
        if sampled:
            self.samples += 1
        return sample

    def _judge(self, sample: Sample) -> list[Alert]:
        new: list[Alert] = []
        for inv in list(self._active):
            try:
                inv.update(sample)
                violations = inv.compute()
            except Exception as exc:  # a broken invariant must not stop the user's training
                warnings.warn(
                    f"labcoat.watch: the {inv.kind!r} invariant raised {exc!r}; it is turned off "
                    "for the rest of this run.",
                    RuntimeWarning,
                    stacklevel=3,
                )
                self._active.remove(inv)
                self._skipped[inv.kind] = f"turned off after an internal error: {exc!r}"
                continue
            now = {v.subject for v in violations}
            before = self._violated[inv.kind]
            for v in violations:
                if v.subject not in before:
                    new.append(self._raise(inv, v, sample))
            self._violated[inv.kind] = now
        return new

    def _raise(self, inv: Invariant, v: Violation, sample: Sample) -> Alert:
        alert = Alert(
            kind=inv.kind,
            step=sample.step,
            rank=self.info.rank,
            severity=v.severity or inv.severity,
            message=v.message,
            evidence=dict(v.evidence),
            subject=v.subject,
            value=v.value,
            time=sample.time,
        )
        self._alerts.append(alert)
        self._emit(alert.to_event())
        logger.warning("%s at step %s: %s", alert.kind, alert.step, alert.message)
        for cb in self._callbacks:
            cb(alert)
        return alert

    def _emit(self, event: dict[str, Any]) -> None:
        self._events.append(event)
        if self._log is not None:
            self._log.write(event)

    # -- results ---------------------------------------------------------------------------
    @property
    def alerts(self) -> list[Alert]:
        """Every alert this rank raised, in order."""
        return list(self._alerts)

    @property
    def evaluations(self) -> list[EvalResult]:
        """Every evaluation run through this watch, in order."""
        return list(self._evaluations)

    @property
    def events(self) -> list[dict[str, Any]]:
        """Every event this rank recorded (alerts and evaluations), as JSON-able dicts."""
        return list(self._events)

    def findings(self) -> list[Finding]:
        """One finding per alert, a pass per invariant that held, a skip per one that could not
        apply: what the ledger records for this run."""
        out: list[Finding] = []
        for inv in self._invariants:
            mine = [a for a in self._alerts if a.kind == inv.kind]
            if mine:
                out.extend(a.to_finding() for a in mine)
                continue
            skipped = self._skipped.get(inv.kind) if self._started else "the watch never started"
            base = Finding(
                check=inv.kind,
                layer="watch",
                status="skip" if skipped else "pass",
                message=skipped or f"held over {self.observed} steps ({self.samples} sampled)",
                evidence={"steps": self.observed, "samples": self.samples},
                falsifies=inv.falsifies,
                predicts=inv.predicts,
                rank=self.info.rank if self._started else None,
            )
            out.append(base)
        return out

    def __repr__(self) -> str:
        state = "closed" if self._closed else "running" if self._started else "not started"
        return (
            f"Watcher({state}, every={self.every}, observed={self.observed}, "
            f"alerts={len(self._alerts)})"
        )


def watch(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    expect_frozen: Any = (),
    ledger: Any = None,
    every: int = DEFAULT_EVERY,
    **options: Any,
) -> Watcher:
    """Watch a training run for silent errors; use it as a context manager.

    >>> with labcoat.watch(model, optimizer) as w:          # doctest: +SKIP
    ...     for step, (x, y) in enumerate(loader):
    ...         loss = loss_fn(model(x), y)
    ...         optimizer.zero_grad(); loss.backward(); optimizer.step()
    ...         w.observe(step=step, loss=loss)
    >>> w.alerts                                            # doctest: +SKIP

    Parameters
    ----------
    model, optimizer
        The module being trained (a DDP/DataParallel wrapper is unwrapped) and its optimizer.
    expect_frozen
        Submodules, parameters or names that must not change; parameters with
        ``requires_grad=False`` are expected frozen anyway.
    ledger
        An object with ``record_findings(findings, source=...)`` (a :class:`labcoat.Ledger`);
        the watch's findings go there when the ``with`` block ends.
    every
        Compute tensor statistics every ``every`` steps (losses are seen every step).
    **options
        ``sync_every`` (compare ranks every N steps), ``events`` (JSON-lines path; ``{rank}``
        is filled in), ``invariants`` (kinds or :class:`Invariant` objects to run),
        ``options`` (per-kind invariant options, e.g. ``{"spike": {"z": 8}}``),
        ``replicated`` (what every rank holds a copy of), ``group`` (process group),
        ``on_alert`` (callbacks) and ``evaluation`` (an :class:`Evaluation` to run every N
        steps, with error bars and early stopping).
    """
    return Watcher(model, optimizer, expect_frozen=expect_frozen, ledger=ledger, every=every, **options)


def _check_model(model: Any) -> nn.Module:
    if not isinstance(model, nn.Module):
        raise InputError(
            f"`model` must be a torch.nn.Module; got {type(model).__name__}. Pass the module "
            "whose parameters the optimizer trains."
        )
    if isinstance(model, (nn.parallel.DistributedDataParallel, nn.DataParallel)):
        model = model.module
    if next(model.parameters(), None) is None:
        raise InputError(f"`model` ({type(model).__name__}) has no parameters; there is nothing to watch.")
    return model


def _check_optimizer(optimizer: Any) -> torch.optim.Optimizer:
    # wrappers (accelerate, Lightning) keep the real optimizer inside; hook that one, so
    # steps a wrapper skips are not counted as applied
    for _ in range(3):
        inner = getattr(optimizer, "optimizer", None) or getattr(optimizer, "_optimizer", None)
        if isinstance(inner, torch.optim.Optimizer) and inner is not optimizer:
            optimizer = inner
        else:
            break
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise InputError(
            f"`optimizer` must be a torch.optim.Optimizer; got {type(optimizer).__name__}. "
            "Pass the optimizer whose step() trains the model."
        )
    return optimizer


def _check_count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise InputError(f"`{name}` must be a positive int (steps); got {value!r}.")
    return int(value)


def _lr_value(lr: Any) -> float | None:
    if lr is None:
        return None
    if isinstance(lr, torch.Tensor):
        return float(lr.detach().reshape(()).cpu())
    value = float(lr)
    return value if math.isfinite(value) else None
