"""The training watch: a :class:`Watcher` joins a sampler (hooks -> samples, see
:mod:`labcoat.watch.sampler`) and a judge (invariants -> alerts -> sinks, see
:mod:`labcoat.watch.judge`) for one model and optimizer, and runs periodic evaluations.

``labcoat.watch(model, optimizer)`` only reads: nothing the model or optimizer computes is
changed, and every hook is removed when the ``with`` block ends. :meth:`Watcher.state_dict`
goes into a checkpoint so a resumed run keeps its windows.
"""

from __future__ import annotations

import numbers
import os
from typing import Any, Callable, Iterable, Mapping, Sequence

import torch
from torch import nn

from labcoat._validation import POSITIVE_INT, validate_params
from labcoat.errors import InputError
from labcoat.findings import Finding
from labcoat.logs.capture import WATCH, note_step
from labcoat.params import resolve
from labcoat.result import Result
from labcoat.watch._resolve import select_replicated
from labcoat.watch.alerts import Alert, Findings
from labcoat.watch.distributed import RankInfo
from labcoat.watch.evaluation import EvalResult, Evaluation, ScoreFn, evaluate
from labcoat.watch.events import EventLog, rank_path
from labcoat.watch.invariants import Invariant, create
from labcoat.watch.judge import Judge
from labcoat.watch.probes import read_at_once
from labcoat.watch.sample import WatchContext
from labcoat.watch.sampler import Sampler

#: sample tensors every this many steps by default; chosen with bench/watch.py so a small CPU
#: training loop runs within 3 % of its unwatched speed
DEFAULT_EVERY = 10
#: compare ranks (desync, straggler) every this many steps by default
DEFAULT_SYNC_EVERY = 50
#: judge the samples taken every this many steps by default (at once when one holds a
#: non-finite number): at ``every=1`` alerts come as soon as at the default ``every``, for
#: about a third of the invariants' cost (see :mod:`labcoat.watch.judge`)
DEFAULT_JUDGE_EVERY = DEFAULT_EVERY
#: version of :meth:`Watcher.state_dict`'s layout
STATE_VERSION = 1


class Watcher(Result):
    """A running watch over one model and optimizer; made by :func:`watch`.

    Call :meth:`observe` once per training step, after ``optimizer.step()``. New alerts are
    returned, kept in :attr:`alerts`, logged to the ``labcoat.watch`` logger, passed to each
    ``on_alert`` callback and appended to the ``events`` file when one is given.
    """

    KIND = "watch.session"

    engine = "watch"
    section = "labcoat.report.sections.watch:result_section"
    title = "Watch"

    @validate_params(
        {
            "every": POSITIVE_INT,
            "sync_every": POSITIVE_INT,
            "judge_every": POSITIVE_INT,
        }
    )
    def __init__(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        *,
        expect_frozen: Any = (),
        ledger: Any = None,
        every: int = DEFAULT_EVERY,
        sync_every: int = DEFAULT_SYNC_EVERY,
        judge_every: int = DEFAULT_JUDGE_EVERY,
        events: str | os.PathLike[str] | None = None,
        invariants: Iterable[str | Invariant] | None = None,
        options: Mapping[str, Mapping[str, Any]] | None = None,
        replicated: Any = None,
        group: Any = None,
        on_alert: Callable[[Alert], None] | Sequence[Callable[[Alert], None]] | None = None,
        evaluation: Evaluation | Sequence[Evaluation] | None = None,
        record: Any = None,
    ):
        self.model = _check_model(model)
        self.optimizer = _check_optimizer(optimizer)
        self.every, self.sync_every, self.judge_every = (
            int(every),
            int(sync_every),
            int(judge_every),
        )
        from labcoat.ledger import Ledger

        self.ledger = Ledger.for_recording(ledger)
        callbacks = [] if on_alert is None else [on_alert] if callable(on_alert) else list(on_alert)
        for cb in callbacks:
            if not callable(cb):
                raise InputError(f"`on_alert` must be callable or a list of callables; got {cb!r}.")
        self._callbacks = callbacks
        evals = (
            []
            if evaluation is None
            else [evaluation]
            if isinstance(evaluation, Evaluation)
            else list(evaluation)
        )
        for ev in evals:
            if not isinstance(ev, Evaluation):
                raise InputError(
                    "`evaluation` must be a labcoat.watch.Evaluation or a list of them; got "
                    f"{type(ev).__name__}."
                )
        self._periodic = evals
        self._invariants = create(invariants, options)
        self._declared_frozen = resolve(
            self.model, expect_frozen, "expect_frozen", with_buffers=True
        )
        self._replicated_spec = replicated
        self._events_path = events
        self._group = group
        self._evaluations: list[EvalResult] = []
        self._started = False
        self._closed = False
        self._resume: Mapping[str, Any] | None = None
        self._run: Any = None  # the ledger run this session records into, when it opened one
        self._last_step: int | None = None
        self._judged_at: int | None = None  # observe() calls when samples were last judged
        self.sampler: Sampler | None = None
        self.judge = Judge(self._invariants, callbacks=callbacks, ledger=self.ledger)
        if (
            record is not None
        ):  # a labcoat.replayable run: alerts name the checkpoint that replays them
            if not callable(getattr(record, "alert_evidence", None)):
                raise InputError(
                    "`record` must be what labcoat.replayable(...) returned; got "
                    f"{type(record).__name__}."
                )
            self.judge.annotate = record.alert_evidence

    # -- lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> "Watcher":
        self.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close(failed=exc_info[0] is not None)

    def start(self) -> "Watcher":
        """Install the hooks and take the frozen tensors' baseline; :meth:`close` undoes it."""
        if self._started:
            raise InputError("this watch has already been started; make a new labcoat.watch(...)")
        self._started = True
        self._run = None
        if (
            self.ledger is not None
            and hasattr(self.ledger, "start_run")
            and self.ledger.current_run_id() is None
        ):
            # one run holds this session's series, alerts and findings (a run already open joins
            # them)
            self._run = self.ledger.start_run(name="watch")
            self.judge.ledger_events = self._run
        self.info = RankInfo.current(self._group)
        if self._events_path is not None:
            path = rank_path(self._events_path, self.info.rank, self.info.world_size)
            self.judge.log = EventLog(path)
        self.sampler = Sampler(
            self.model,
            self.optimizer,
            frozen=self._declared_frozen,
            every=self.every,
            sync_every=self.sync_every,
            info=self.info,
        )
        needs = self.judge.start(self.sampler.context)
        if self.judge.records_series:
            needs |= {"grad_norms", "update_ratio"}
        replicated = (
            select_replicated(self.model, self._replicated_spec) if "cross_rank" in needs else None
        )
        self.sampler.attach(needs, replicated)
        if self._resume is not None:
            self._load(self._resume)
            self._resume = None
        return self

    def close(self, *, failed: bool = False) -> None:
        """Remove every hook, write what is buffered and hand the findings to the ledger."""
        if not self._started or self._closed:
            return
        self._closed = True
        if self.sampler is not None:
            self.sampler.remove()
        self.judge.close()
        if self.ledger is not None:
            from labcoat.ledger.persist import record

            record(self, self.ledger, run=self._run)
            if self._run is not None:
                self.ledger.finish_run(
                    self._run, status="failed" if failed else "ok", exit_status=None
                )

    @property
    def context(self) -> WatchContext:
        """Facts about the watched run (parameter names, frozen tensors, rank)."""
        if self.sampler is None:
            raise InputError("the watch has not started; use `with labcoat.watch(...) as w:`.")
        return self.sampler.context

    @property
    def observed(self) -> int:
        """observe() calls so far (including those before a resume)."""
        return 0 if self.sampler is None else self.sampler.observed

    @property
    def samples(self) -> int:
        """Steps whose tensors were sampled so far."""
        return 0 if self.sampler is None else self.sampler.samples

    # -- the user's side -------------------------------------------------------------------
    def observe(self, step: int, loss: Any = None, *, batch: Any = None) -> list[Alert]:
        """Record one training step (call it after ``optimizer.step()``); returns new alerts.

        Samples are judged every ``judge_every`` calls, and at once when one holds a NaN or
        Inf, so an alert may come a few calls after the step it names (its ``step`` is exact).

        ``loss`` may be a scalar tensor (on an accelerator, kept there until the next sampled
        step) or a number. ``batch`` (optional) is the step's input batch, as the loader gave it; a
        fingerprint of it lets ``repeat_batch`` see batches that come back. Under
        torch.distributed every rank must call ``observe`` equally often.
        """
        sampler = self.sampler
        if sampler is None or self._closed:
            raise InputError(
                "observe() was called outside the watch; call it inside `with "
                "labcoat.watch(model, optimizer) as w:`."
            )
        if type(step) is not int and (  # the usual case first: an ABC check costs more
            isinstance(step, bool) or not isinstance(step, numbers.Integral)
        ):
            raise InputError(f"`step` must be an int (the training step); got {step!r}.")
        step = int(step)
        self._last_step = step
        note_step(step, WATCH)  # captured lines carry the step last observed (labcoat.logs)
        if loss is not None:
            self.record_loss(step, loss)
        if batch is not None:
            sampler.add_batch(step, batch)
        sampled, synced = sampler.tick()
        new: list[Alert] = []
        if sampled or synced:
            due = self._judged_at is None or sampler.observed - self._judged_at >= self.judge_every
            if due:
                self._judged_at = sampler.observed
            new = self.judge.submit(sampler.collect(step, sampled, synced), sampled, now=due)
        sampler.plan_next()
        if self._periodic:
            self._run_periodic(step)
        if sampler.clock is not None:
            sampler.clock.restart()
        return new

    def _run_periodic(self, step: int) -> None:
        for ev in self._periodic:
            if self.observed % ev.every == 0:
                self.evaluate(ev.batches, ev.score, step=step, **ev.settings())

    def evaluate(
        self,
        batches: Iterable[Any] | Callable[[], Iterable[Any]],
        score: ScoreFn,
        *,
        step: int | None = None,
        **settings: Any,
    ) -> EvalResult:
        """Evaluate the model now, stopping once the interval is tight; recorded as an event.

        ``settings`` are :func:`~labcoat.watch.evaluation.evaluate`'s (width, threshold, lower,
        upper, level, name, ids, estimator). ``score(batch)`` returns one score per item in
        ``[lower, upper]``; scores stream into an anytime-valid confidence sequence, so stopping
        at ``width`` (or once ``threshold`` is excluded) keeps its ``level``. With ``ids``
        (batch -> item ids), each item's score is recorded as an ``eval_item`` event (the
        events file and the ledger), named by the evaluation and this step.
        """
        if self.sampler is not None:
            self.sampler.evaluating = True
        try:
            step = self._last_step if step is None else step
            result = evaluate(self.model, batches, score, step=step, **settings)
        finally:
            if self.sampler is not None:
                self.sampler.evaluating = False
        self._evaluations.append(result)
        self.judge.drain()  # alerts of the steps before it come first
        rank = self.info.rank if self._started else None
        self.judge.emit(result.to_event(rank))
        for item in result.item_events(rank):  # with `ids`: to the events file and the ledger
            self.judge.emit(item, urgent=False)
        return result

    def record_loss(self, step: int, loss: Any) -> None:
        """Add a loss that arrives apart from :meth:`observe` (e.g. from a trainer's logs)."""
        if self.sampler is None:
            raise InputError("record_loss() was called outside the watch.")
        if isinstance(loss, torch.Tensor):
            if loss.numel() != 1:
                raise InputError(
                    f"`loss` must be a scalar; got a tensor of shape {tuple(loss.shape)}. Pass the "
                    "reduced training loss (e.g. loss.mean())."
                )
            # a CPU loss is read now (nothing to wait for); one on an accelerator stays there
            # until the sampled step's single transfer
            now = read_at_once(loss)
            self.sampler.add_loss(int(step), loss.item() if now else loss.detach())
        elif isinstance(loss, numbers.Real) and not isinstance(loss, bool):
            self.sampler.add_loss(int(step), float(loss))
        else:
            raise InputError(
                f"`loss` must be a scalar tensor or a number; got {type(loss).__name__}."
            )

    # -- resuming --------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The watch's windows and counters as plain data: save it with the model's checkpoint
        and pass it to :meth:`load_state_dict` when the run resumes (before or after start)."""
        if self.sampler is None:
            raise InputError("state_dict() needs a started watch; call it inside the `with` block.")
        return {
            "version": STATE_VERSION,
            "every": self.every,
            "sampler": self.sampler.state_dict(),
            "judge": self.judge.state_dict(),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from :meth:`state_dict` of an earlier run of the same setup."""
        if not isinstance(state, Mapping) or state.get("version") != STATE_VERSION:
            raise InputError(
                "load_state_dict() expects what Watcher.state_dict() returned (version "
                f"{STATE_VERSION}); got {type(state).__name__}."
            )
        if self.sampler is None:
            self._resume = state
        else:
            if self.sampler.observed:
                raise InputError("load_state_dict() must come before the first observe().")
            self._load(state)

    def _load(self, state: Mapping[str, Any]) -> None:
        assert self.sampler is not None
        saved_names = tuple(state["sampler"]["param_names"])
        if saved_names != self.sampler.names or state["every"] != self.every:
            raise InputError(
                "the saved watch state is for another setup (its parameters or `every` differ); "
                "resume with the same model and `every`, or start a fresh watch."
            )
        self.sampler.load_state_dict(state["sampler"])
        self.judge.load_state_dict(state["judge"])

    # -- results ---------------------------------------------------------------------------
    @property
    def alerts(self) -> list[Alert]:
        """Every alert this rank raised, in order (samples not judged yet are judged first)."""
        self.judge.drain()
        return list(self.judge.alerts)

    @property
    def evaluations(self) -> list[EvalResult]:
        """Every evaluation run through this watch, in order."""
        return list(self._evaluations)

    @property
    def events(self) -> list[dict[str, Any]]:
        """The alerts and evaluations this rank recorded, as JSON-able dicts (the sampled
        series goes to the events file and the ledger, not here)."""
        self.judge.drain()
        return list(self.judge.events)

    @property
    def findings(self) -> list[Finding]:
        """One finding per alert, a pass per invariant that held, a skip per one that could not
        apply: what the ledger records for this run."""
        return Findings(self.judge.findings(self.observed, self.samples, self._started))

    def to_dict(self) -> dict[str, Any]:
        return {
            "observed": self.observed,
            "samples": self.samples,
            "events": self.events,
            "findings": [f.to_dict() for f in self.findings],
        }

    def __repr__(self) -> str:
        state = "closed" if self._closed else "running" if self._started else "not started"
        return (
            f"Watcher({state}, every={self.every}, observed={self.observed}, alerts="
            f"{len(self.judge.alerts)})"
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
        What must not change: glob patterns of tensor names (``"backbone.*"``), names of
        parameters or submodules, submodules or parameters (see :mod:`labcoat.params`, the
        same convention as ``labcoat.diagnose``); parameters with ``requires_grad=False`` are
        expected frozen anyway, and a declared module's floating-point buffers are included.
    ledger
        An object with ``record_findings(findings, source=...)`` (a :class:`labcoat.Ledger`);
        the watch's findings go there when the ``with`` block ends.
    every
        Compute tensor statistics every ``every`` steps (losses are seen every step).
    **options
        ``judge_every`` (judge the samples taken every N steps, default 10, and at once when
        a number is non-finite; 1 judges each as it is taken, at about twice the invariants'
        cost), ``sync_every`` (compare ranks every N steps), ``events`` (JSON-lines path;
        ``{rank}`` is filled in), ``invariants`` (kinds or :class:`Invariant` objects to run),
        ``options`` (per-kind invariant options, e.g. ``{"spike": {"z": 8}}``),
        ``replicated`` (what every rank holds a copy of), ``group`` (process group),
        ``on_alert`` (callbacks) and ``evaluation`` (an :class:`Evaluation` to run every N
        steps, with error bars and early stopping).
    """
    return Watcher(
        model, optimizer, expect_frozen=expect_frozen, ledger=ledger, every=every, **options
    )


def _check_model(model: Any) -> nn.Module:
    if not isinstance(model, nn.Module):
        raise InputError(
            f"`model` must be a torch.nn.Module; got {type(model).__name__}. Pass the module whose "
            "parameters the optimizer trains."
        )
    if isinstance(model, (nn.parallel.DistributedDataParallel, nn.DataParallel)):
        model = model.module
    if next(model.parameters(), None) is None:
        raise InputError(
            f"`model` ({type(model).__name__}) has no parameters; there is nothing to watch."
        )
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
            f"`optimizer` must be a torch.optim.Optimizer; got {type(optimizer).__name__}. Pass "
            "the optimizer whose step() trains the model."
        )
    return optimizer
