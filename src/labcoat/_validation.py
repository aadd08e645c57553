"""Parameter checks shared by every part of labcoat, with one message style.

A constraint is a small object that validates and explains itself (scikit-learn's
``_param_validation``): :meth:`Constraint.is_satisfied_by` answers yes or no and ``str()`` says
what was needed, so the message is written in one place::

    `seed` must be an int >= 0; got -1.

:meth:`Constraint.check` raises :class:`labcoat.errors.InputError` with that message (the CLI
prints it as one line and exits 2) and returns the value, converted where the constraint says
so. A caller may add the fix with ``hint=``. Nothing here imports numpy or torch.
"""

from __future__ import annotations

import math
import numbers
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Iterable

from labcoat.errors import InputError


def fail(name: str, needed: str, value: Any, hint: str = "") -> InputError:
    """The one message: "`name` must be <needed>; got <value>." plus an optional fix."""
    shown = value if isinstance(value, str) and value.startswith("a ") else repr(value)
    return InputError(f"`{name}` must be {needed}; got {shown}." + (f" {hint}" if hint else ""))


class Constraint(ABC):
    """What a parameter must be; subclasses define :meth:`is_satisfied_by` and ``__str__``."""

    @abstractmethod
    def is_satisfied_by(self, value: Any) -> bool:
        """Whether ``value`` meets the constraint."""

    def convert(self, value: Any) -> Any:
        return value

    def check(self, value: Any, name: str, *, hint: str = "") -> Any:
        """``value`` (converted) if it satisfies the constraint, else an :class:`InputError`."""
        if not self.is_satisfied_by(value):
            raise fail(name, str(self), self.shown(value), hint)
        return self.convert(value)

    def shown(self, value: Any) -> Any:
        return value


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


@dataclass(frozen=True)
class Interval(Constraint):
    """An int or a finite number within bounds (``low_open``/``high_open``: strict bounds)."""

    type: type
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def is_satisfied_by(self, value: Any) -> bool:
        if self.type is int and not _is_int(value):
            return False
        if not _is_real(value) or not math.isfinite(value):
            return False
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        if self.high is not None and (value >= self.high if self.high_open else value > self.high):
            return False
        return True

    def convert(self, value: Any) -> Any:
        return int(value) if self.type is int else float(value)

    def __str__(self) -> str:
        if self.low == 0 and self.high == 1 and self.low_open and self.high_open:
            return "a number strictly between 0 and 1"
        kind = "an int" if self.type is int else "a finite number"
        parts = []
        if self.low is not None:
            parts.append(f"{'>' if self.low_open else '>='} {self.low:g}")
        if self.high is not None:
            parts.append(f"{'<' if self.high_open else '<='} {self.high:g}")
        return kind + (" " + " and ".join(parts) if parts else "")


#: the constraints that recur across labcoat
PROBABILITY = Interval(float, 0.0, 1.0, low_open=True, high_open=True)
COUNT = Interval(int, 0)
POSITIVE_INT = Interval(int, 1)
FINITE = Interval(float)


@dataclass(frozen=True)
class OneOf(Constraint):
    """One of a fixed set of values (``or None`` when ``none`` is true)."""

    options: Iterable[Any]
    none: bool = False

    def is_satisfied_by(self, value: Any) -> bool:
        return (self.none and value is None) or value in tuple(self.options)

    def __str__(self) -> str:
        shown = "one of " + (", ".join(map(repr, self.options)) or "nothing (none declared)")
        return shown + (" or None" if self.none else "")


@dataclass(frozen=True)
class IsCallable(Constraint):
    """A callable; ``what`` describes its signature (``callable(output, target) -> loss``)."""

    what: str = "a callable"
    none: bool = False

    def is_satisfied_by(self, value: Any) -> bool:
        return (self.none and value is None) or callable(value)

    def shown(self, value: Any) -> Any:
        return f"a {type(value).__name__}"

    def __str__(self) -> str:
        return self.what + (" or None" if self.none else "")


@dataclass(frozen=True)
class Seed(Constraint):
    """A reproducible seed: an int >= 0 (numpy and scikit-learn refuse negative seeds); with
    ``generator`` also a numpy Generator or None (fresh entropy)."""

    generator: bool = False

    def is_satisfied_by(self, value: Any) -> bool:
        if _is_int(value) and value >= 0:
            return True
        if not self.generator:
            return False
        import numpy as np

        return value is None or isinstance(value, np.random.Generator)

    def convert(self, value: Any) -> Any:
        if not self.generator:
            return int(value)
        import numpy as np

        return value if isinstance(value, np.random.Generator) else np.random.default_rng(value)

    def __str__(self) -> str:
        if self.generator:
            return "an int seed >= 0, a numpy Generator or None"
        return "an int seed >= 0"


def check_int(value: Any, name: str, *, minimum: int = 0, hint: str = "") -> int:
    """An int >= ``minimum`` (bools are refused)."""
    return Interval(int, minimum).check(value, name, hint=hint)


def check_probability(value: Any, name: str) -> float:
    """A number strictly between 0 and 1 (a confidence level, alpha or power)."""
    return PROBABILITY.check(value, name)


def check_choice(value: Any, name: str, options: Iterable[Any], *, none: bool = False) -> Any:
    return OneOf(tuple(options), none).check(value, name)
