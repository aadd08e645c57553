"""The watch's judgement: samples -> invariants -> alerts -> sinks.

The judge folds each :class:`~labcoat.watch.sample.Sample` into every invariant that applies,
turns a violation that *starts* into an :class:`~labcoat.watch.alerts.Alert` (one that
persists stays one alert), and hands alerts, evaluations and the sampled series to the sinks:
the ``labcoat.watch`` logger, ``on_alert`` callbacks, the events file and the ledger's events
table (both written in batches). Its windows survive a restart through :meth:`state_dict`.

Samples may be handed in faster than they are judged (:meth:`Judge.submit`): judging ten
samples in a row costs about a third as much per sample as judging each alone right after a
training step, whose kernels have pushed the invariants' code out of the CPU's caches. A
sample holding a non-finite number is judged at once, with everything before it; every
reader of the results (:attr:`Judge.alerts`, :meth:`Judge.findings`, :meth:`Judge.state_dict`,
:meth:`Judge.close`) first judges what is waiting.
"""

from __future__ import annotations

import logging
import warnings
from typing import Any, Callable, Mapping, Sequence

from labcoat.errors import InputError
from labcoat.findings import Finding, Outcome
from labcoat.watch.alerts import Alert
from labcoat.watch.events import EventLog, series_event
from labcoat.watch.invariants import Invariant, Violation
from labcoat.watch.invariants._grad_history import share_histories
from labcoat.watch.sample import Sample, WatchContext
from labcoat.watch.state import decode, encode

logger = logging.getLogger("labcoat.watch")

#: events kept before they go to the ledger in one transaction
LEDGER_BATCH = 512


class Judge:
    """Invariants, de-duplication and sinks for one rank's watch (see the module docstring)."""

    def __init__(
        self,
        invariants: Sequence[Invariant],
        *,
        callbacks: Sequence[Callable[[Alert], None]] = (),
        log: EventLog | None = None,
        ledger: Any = None,
    ):
        self.invariants = list(invariants)
        self.callbacks = list(callbacks)
        self.log = log
        self.ledger_events = ledger if callable(getattr(ledger, "record_events", None)) else None
        self.alerts: list[Alert] = []
        self.events: list[dict[str, Any]] = []
        self.active: list[Invariant] = []
        self.skipped: dict[str, str] = {}
        self.rank: int | None = None
        self._violated: dict[str, set[str]] = {}
        self._to_ledger: list[dict[str, Any]] = []
        self._waiting: list[tuple[Sample, bool]] = []  # submitted, not judged yet
        #: step -> evidence every alert at that step gets (a labcoat.replayable run's replay)
        self.annotate: Callable[[int], Mapping[str, Any]] | None = None

    def submit(self, sample: Sample, sampled: bool, *, now: bool) -> list[Alert]:
        """Queue ``sample``; judge everything queued when ``now`` or when the sample holds a
        non-finite number. Returns the alerts that start."""
        self._waiting.append((sample, sampled))
        if now or not sample.finite():
            return self.drain()
        return []

    def drain(self) -> list[Alert]:
        """Judge every queued sample, in order; returns the alerts that start."""
        if not self._waiting:
            return []
        waiting, self._waiting = self._waiting, []
        new: list[Alert] = []
        for sample, sampled in waiting:
            new.extend(self.judge(sample, sampled))
        return new

    @property
    def records_series(self) -> bool:
        """Whether the sampled series goes anywhere (an events file or a ledger)."""
        return self.log is not None or self.ledger_events is not None

    def start(self, context: WatchContext) -> frozenset[str]:
        """Set up the invariants that apply to this run; returns the sample fields they need."""
        self.rank = context.rank
        for inv in self.invariants:
            reason = inv.applies(context)
            if reason is None:
                inv.setup(context)
                self.active.append(inv)
            else:
                self.skipped[inv.kind] = reason
        self._violated = {inv.kind: set() for inv in self.active}
        share_histories(self.active)
        return frozenset().union(*(inv.needs for inv in self.active))

    def judge(self, sample: Sample, sampled: bool) -> list[Alert]:
        """Fold ``sample`` into every active invariant; returns the alerts that start now."""
        if sampled and self.records_series:
            self.emit(series_event(sample, self.rank), urgent=False)
        new: list[Alert] = []
        for inv in list(self.active):
            try:
                inv.update(sample)
                violations = inv.compute()
            except Exception as exc:  # a broken invariant must not stop the user's training
                warnings.warn(
                    f"labcoat.watch: the {inv.kind!r} invariant raised {exc!r}; it is turned off "
                    "for the rest of this run.",
                    RuntimeWarning,
                    stacklevel=5,  # the user's observe()
                )
                self.active.remove(inv)
                self.skipped[inv.kind] = f"turned off after an internal error: {exc!r}"
                continue
            before = self._violated[inv.kind]
            if violations or before:
                for v in violations:
                    if v.subject not in before:
                        new.append(self._raise(inv, v, sample))
                self._violated[inv.kind] = {v.subject for v in violations}
        return new

    def _raise(self, inv: Invariant, v: Violation, sample: Sample) -> Alert:
        evidence = dict(v.evidence)
        if self.annotate is not None:
            evidence.update(self.annotate(sample.step))
        alert = Alert(
            check=inv.kind,
            step=sample.step,
            rank=self.rank,
            status=v.severity or inv.severity,
            message=v.message,
            evidence=evidence,
            subject=v.subject,
            value=v.value,
            time=sample.time,
        )
        self.alerts.append(alert)
        self.emit(alert.to_event())
        logger.warning("%s at step %s: %s", alert.check, alert.step, alert.message)
        for cb in self.callbacks:
            cb(alert)
        return alert

    def emit(self, event: dict[str, Any], urgent: bool = True) -> None:
        """Record an event: alerts and evaluations are kept and flushed at once; the series is
        written in batches and not kept in memory."""
        if urgent:
            self.events.append(event)
        if self.log is not None:
            self.log.write(event, flush=urgent)
        if self.ledger_events is not None:
            self._to_ledger.append(event)
            if len(self._to_ledger) >= LEDGER_BATCH:
                self.flush()

    def flush(self) -> None:
        self.drain()
        if self.log is not None:
            self.log.flush()
        if self.ledger_events is not None and self._to_ledger:
            batch, self._to_ledger = self._to_ledger, []
            self.ledger_events.record_events(batch, source="watch")

    def close(self) -> None:
        self.flush()
        if self.log is not None:
            self.log.close()

    def findings(self, observed: int, samples: int, started: bool) -> list[Finding]:
        """One finding per alert, a pass per invariant that held, a skip per one that could not
        apply: what the ledger records for this run."""
        self.drain()
        out: list[Finding] = []
        for inv in self.invariants:
            mine = [a for a in self.alerts if a.check == inv.kind]
            if mine:
                out.extend(a.to_finding(type(inv).declaration()) for a in mine)
                continue
            skipped = self.skipped.get(inv.kind) if started else "the watch never started"
            if not skipped and inv in self.active:
                skipped = inv.idle_reason()
            evidence = {"steps": observed, "samples": samples}
            outcome = (
                Outcome("skip", skipped, evidence)
                if skipped
                else Outcome("pass", f"held over {observed} steps ({samples} sampled)", evidence)
            )
            out.append(type(inv).declaration().finding(outcome, rank=self.rank))
        return out

    # -- resuming --------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        self.drain()
        return {
            "invariants": {inv.kind: inv.state_dict() for inv in self.active},
            "violated": {k: sorted(v) for k, v in self._violated.items()},
            "alerts": [a.to_event() for a in self.alerts],
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        saved = state["invariants"]
        mine = [inv.kind for inv in self.active]
        if sorted(saved) != sorted(mine):
            raise InputError(
                f"the saved watch state is for the invariants {sorted(saved)}, this watch runs "
                f"{sorted(mine)}; resume with the same `invariants` and `options`."
            )
        for inv in self.active:
            inv.load_state_dict(saved[inv.kind])
        self._violated = {k: set(decode(v)) for k, v in state["violated"].items()}
        self.alerts = [Alert.from_event(e) for e in state["alerts"]]
        self.events = [encode(e) for e in state["alerts"]]
