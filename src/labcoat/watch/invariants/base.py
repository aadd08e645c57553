"""The invariant contract and its registry.

An invariant is declared once, as a small class: its alert ``kind``, what a violation
falsifies, what a healthy run predicts, the sample fields it ``needs`` and its options. Like a
torchmetrics ``Metric`` it declares its running state with :meth:`Invariant.add_state`, folds
each :class:`~labcoat.watch.sample.Sample` in with :meth:`Invariant.update` and says what is
violated *now* with :meth:`Invariant.compute`. The watcher turns a violation that starts into
an alert and stays quiet until it clears, so a NaN that persists is one alert, not thousands.

An invariant's declaration is a :class:`~labcoat.findings.Check` like every other engine's
(:meth:`Invariant.declaration`); new invariants register with ``@INVARIANTS.register`` in a
:class:`~labcoat.findings.CheckRegistry`, which refuses duplicate kinds.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterable, Mapping

from labcoat._validation import Interval, OneOf, article, fail
from labcoat.errors import InputError
from labcoat.findings import Check, CheckRegistry, Severity
from labcoat.watch.sample import CrossRank, Sample, WatchContext
from labcoat.watch.state import decode, encode

#: the sample fields an invariant may ask for
SAMPLE_FIELDS = frozenset(
    {
        "losses",
        "lrs",
        "grad_norms",
        "param_norms",
        "frozen_norms",
        "cross_rank",
        "update_ratio",
        "step_gaps",
        "batches",
        "train_modes",
    }
)


@dataclass(frozen=True)
class Violation:
    """An invariant broken at the current sample, about one ``subject``."""

    subject: str
    message: str
    value: float | None = None
    evidence: Mapping[str, Any] = field(default_factory=dict)
    #: overrides the invariant's declared severity for this violation
    severity: Severity | None = None


#: a numeric option's constraint (kept under the name invariants declare their options with)
Bound = Interval


class Invariant(ABC):
    """Base class of every watch invariant (see the module docstring)."""

    kind: ClassVar[str]
    falsifies: ClassVar[str]
    predicts: ClassVar[str]
    severity: ClassVar[Severity] = "fail"
    needs: ClassVar[frozenset[str]] = frozenset()
    #: option name -> (default, constraint); options are keyword arguments of the constructor
    options: ClassVar[Mapping[str, tuple[Any, Bound]]] = {}

    def __init__(self, **options: Any):
        known = OneOf(tuple(sorted(self.options)))
        for name in options:
            known.check(name, f"{self.kind}.<option>", hint=f"{self.kind!r} has no such option.")
        for name, (default, bound) in self.options.items():
            setattr(self, name, bound.check(options.get(name, default), f"{self.kind}.{name}"))
        self._state_defaults: dict[str, Any] = {}
        self.context: WatchContext | None = None

    @classmethod
    def declaration(cls) -> Check:
        """This invariant as a :class:`~labcoat.findings.Check`: what every engine declares."""
        if getattr(cls, "__abstractmethods__", None):
            missing = ", ".join(sorted(cls.__abstractmethods__))
            raise ValueError(f"{cls.__name__} must implement {missing}")
        unknown = set(cls.needs) - SAMPLE_FIELDS
        if unknown:
            raise ValueError(f"{cls.__name__} needs unknown sample fields {sorted(unknown)}")
        return Check(
            getattr(cls, "kind", ""),
            "watch",
            getattr(cls, "falsifies", ""),
            getattr(cls, "predicts", ""),
            run=cls,
            severity=cls.severity,
            options=cls.options,
        )

    # -- declared state ----------------------------------------------------------------------
    def add_state(self, name: str, default: Any) -> None:
        """Declare running state; :meth:`reset` restores every declared state to its default."""
        if name in self.options or name in ("context", "kind"):
            raise ValueError(f"state {name!r} of {type(self).__name__} shadows an option")
        self._state_defaults[name] = default
        setattr(self, name, copy.deepcopy(default))

    def reset(self) -> None:
        for name, default in self._state_defaults.items():
            setattr(self, name, copy.deepcopy(default))

    def state(self) -> dict[str, Any]:
        """The declared state, for inspection and tests."""
        return {name: getattr(self, name) for name in self._state_defaults}

    def state_dict(self) -> dict[str, Any]:
        """The declared state as plain data (see :mod:`labcoat.watch.state`), for checkpoints."""
        return {name: encode(getattr(self, name)) for name in self._state_defaults}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned; call after :meth:`setup`."""
        missing = sorted(set(self._state_defaults) - set(state))
        if missing:
            raise InputError(
                f"the saved state of the {self.kind!r} invariant lacks {missing[0]!r}; was it "
                "saved by another labcoat version or with other options?"
            )
        for name in self._state_defaults:
            setattr(self, name, decode(state[name], getattr(self, name), {"Violation": Violation}))

    # -- the contract ------------------------------------------------------------------------
    def applies(self, context: WatchContext) -> str | None:
        """A reason this invariant cannot say anything about the run, or ``None``."""
        return None

    def idle_reason(self) -> str | None:
        """Why this invariant, although it applied, saw nothing to judge (its finding is then a
        skip, not a pass), or ``None``."""
        return None

    def setup(self, context: WatchContext) -> None:
        """Called once when the watch starts; declare state here."""
        self.context = context

    @abstractmethod
    def update(self, sample: Sample) -> None:
        """Fold one sample into the declared state."""

    @abstractmethod
    def compute(self) -> list[Violation]:
        """What is violated now, given everything folded in so far."""

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.options)
        return f"{type(self).__name__}({opts})"


class CrossRankInvariant(Invariant):
    """An invariant judged on the numbers all ranks gathered at a synchronisation.

    Every rank judges the same gathered numbers, so every rank reaches the same verdict; a
    subclass writes only :meth:`judge`.
    """

    needs = frozenset({"cross_rank"})

    def applies(self, context: WatchContext) -> str | None:
        if context.world_size < 2:
            return "not running under torch.distributed with more than one rank"
        return None

    def setup(self, context: WatchContext) -> None:
        super().setup(context)
        self.add_state("found", None)

    def update(self, sample: Sample) -> None:
        if sample.cross_rank is not None:
            self.found = self.judge(sample.cross_rank, sample.step)

    @abstractmethod
    def judge(self, cr: CrossRank, step: int) -> Violation | None:
        """The violation shown by one synchronisation's gathered numbers, or None."""

    def compute(self) -> list[Violation]:
        return [] if self.found is None else [self.found]


def create(
    selection: Iterable[str | Invariant] | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    registry: CheckRegistry | None = None,
) -> list[Invariant]:
    """Fresh invariant objects: every registered kind, or the given kinds and instances.

    ``options`` maps a kind to the keyword options of its constructor.
    """
    registry = INVARIANTS if registry is None else registry
    kinds = OneOf(registry.ids())
    options = dict(options or {})
    for kind in options:
        kinds.check(kind, "options", hint="Its keys are alert kinds.")
    chosen: list[Invariant] = []
    for item in registry.ids() if selection is None else selection:
        if isinstance(item, Invariant):
            chosen.append(item)
        elif isinstance(item, str):
            cls = registry[kinds.check(item, "invariants")].run
            chosen.append(cls(**options.get(item, {})))
        else:
            raise fail(
                "invariants",
                "alert kinds (str) or Invariant objects",
                article(type(item).__name__),
                f"Known kinds: {', '.join(registry.ids())}.",
            )
    listed = [inv.kind for inv in chosen]
    repeated = sorted({k for k in listed if listed.count(k) > 1})
    if repeated:
        raise InputError(f"`invariants` lists the kind {repeated[0]!r} more than once; keep one.")
    return chosen


#: every built-in invariant registers here (see :mod:`labcoat.watch.invariants`)
INVARIANTS = CheckRegistry("watch", ["watch"])
