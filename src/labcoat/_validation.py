"""Parameter checks shared by every part of labcoat, with one message style.

A constraint is a small object that validates and explains itself (scikit-learn's
``_param_validation``): :meth:`Constraint.is_satisfied_by` answers yes or no and ``str()`` says
what was needed, so the message is written in one place::

    `seed` must be an int >= 0; got -1.

:meth:`Constraint.check` raises :class:`labcoat.errors.InputError` with that message (the CLI
prints it as one line and exits 2) and returns the value, converted where the constraint says
so. A caller may add the fix with ``hint=``. Nothing here imports numpy or torch.

A public entry point declares its parameters' constraints once with :func:`validate_params`
(scikit-learn's decorator of the same name): a dict name -> constraint, checked on every call
before the body runs. A parameter renamed for one vocabulary (``docs/conventions.md``) keeps its
old name for one release through :func:`renamed`, which warns and passes the value on.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
import warnings
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, TypeVar

from labcoat.errors import InputError

F = TypeVar("F", bound=Callable[..., Any])


def fail(name: str, needed: str, value: Any, hint: str = "") -> InputError:
    """The one message: "`name` must be <needed>; got <value>." plus an optional fix."""
    shown = value if isinstance(value, str) and value.startswith(("a ", "an ")) else repr(value)
    return InputError(f"`{name}` must be {needed}; got {shown}." + (f" {hint}" if hint else ""))


def article(noun: str) -> str:
    """``noun`` with its indefinite article, as messages name a type: "an int", "a float"."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


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
    """An int or a finite number within bounds (``low_open``/``high_open``: strict bounds;
    ``none``: None is accepted too)."""

    type: type
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    none: bool = False

    def is_satisfied_by(self, value: Any) -> bool:
        if self.none and value is None:
            return True
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
        if value is None:
            return None
        return int(value) if self.type is int else float(value)

    def __str__(self) -> str:
        if self.none:
            return str(Interval(self.type, self.low, self.high, self.low_open, self.high_open)) + (
                " or None"
            )
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
class Jobs(Constraint):
    """How many parallel workers (joblib's ``n_jobs``): a positive int, -1 for every core, or
    None (the engine's default)."""

    def is_satisfied_by(self, value: Any) -> bool:
        return value is None or (_is_int(value) and (value >= 1 or value == -1))

    def __str__(self) -> str:
        return "an int >= 1, -1 (every core) or None"


#: parallel workers, as every engine takes them (``n_jobs``; CLI ``--jobs``)
N_JOBS = Jobs()


@dataclass(frozen=True)
class InstanceOf(Constraint):
    """An instance of one of ``types`` (bools are refused where ``int`` is asked for)."""

    types: tuple[type, ...]
    what: str = ""
    none: bool = False

    def is_satisfied_by(self, value: Any) -> bool:
        if self.none and value is None:
            return True
        if isinstance(value, bool) and bool not in self.types:
            return False
        return isinstance(value, self.types)

    def shown(self, value: Any) -> Any:
        return article(type(value).__name__)

    def __str__(self) -> str:
        names = self.what or " or ".join(article(t.__name__) for t in self.types)
        return names + (" or None" if self.none else "")


BOOL = InstanceOf((bool,), "True or False")


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
        return article(type(value).__name__)

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


def validate_params(
    constraints: Mapping[str, Constraint | tuple[Constraint, str]],
    *,
    first: Callable[[Mapping[str, Any]], None] | None = None,
) -> Callable[[F], F]:
    """Decorator: check the named parameters of every call against their constraints before
    the function runs (scikit-learn's ``validate_params``); the values pass on unchanged (a
    seed stays a seed, so the body decides when to turn it into a generator). A constraint may
    come with the fix its message should give: ``(constraint, hint)``.

    Only the arguments a caller gives are checked (defaults are trusted); a name that is not a
    parameter of the function is refused when the decorator is applied, so a constraint cannot
    silently go stale. The constraints stay readable as ``fn.parameter_constraints`` (the tests
    generate invalid values from them).

    ``first`` is a check of the whole call, run before the per-parameter constraints with every
    argument (defaults filled in) by name: for mistakes that only show across parameters, such
    as arguments given out of order, whose own message names the fix better than one
    parameter's constraint would.
    """

    def decorate(fn: F) -> F:
        signature = inspect.signature(fn)
        unknown = set(constraints) - set(signature.parameters)
        if unknown:
            raise TypeError(f"validate_params: {fn.__qualname__} has no parameter(s) {unknown}")

        @functools.wraps(fn)
        def checked(*args: Any, **kwargs: Any) -> Any:
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError:
                return fn(*args, **kwargs)  # let Python word the signature error itself
            if first is not None:
                every = signature.bind(*args, **kwargs)
                every.apply_defaults()
                first(every.arguments)
            for name, value in bound.arguments.items():
                declared = constraints.get(name)
                if declared is None:
                    continue
                constraint, hint = declared if isinstance(declared, tuple) else (declared, "")
                if not constraint.is_satisfied_by(value):
                    raise fail(name, str(constraint), constraint.shown(value), hint)
            return fn(*args, **kwargs)

        checked.parameter_constraints = dict(constraints)  # type: ignore[attr-defined]
        return checked  # type: ignore[return-value]

    return decorate


def renamed(**old_to_new: str) -> Callable[[F], F]:
    """Decorator: accept a parameter's old name for one release. ``@renamed(random_state=
    "seed")`` passes ``random_state=`` on as ``seed=`` with a :class:`DeprecationWarning` naming
    the new name; giving both is a :class:`TypeError`."""

    def decorate(fn: F) -> F:
        params = inspect.signature(fn).parameters
        missing = {new for new in old_to_new.values() if new not in params}
        if missing:
            raise TypeError(f"renamed: {fn.__qualname__} has no parameter(s) {missing}")

        @functools.wraps(fn)
        def accepting(*args: Any, **kwargs: Any) -> Any:
            for old, new in old_to_new.items():
                if old not in kwargs:
                    continue
                if new in kwargs:
                    raise TypeError(
                        f"{fn.__qualname__}() got both `{old}` (deprecated) and `{new}`; give "
                        f"only `{new}`"
                    )
                warnings.warn(
                    f"{fn.__qualname__}(): `{old}` is deprecated and will be removed in the next "
                    f"release; use `{new}`",
                    DeprecationWarning,
                    stacklevel=2,
                )
                kwargs[new] = kwargs.pop(old)
            return fn(*args, **kwargs)

        accepting.renamed_params = {  # type: ignore[attr-defined]
            **getattr(fn, "renamed_params", {}),
            **old_to_new,
        }
        return accepting  # type: ignore[return-value]

    return decorate


def warn_deprecated(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Say once per call site that ``old`` is deprecated for one release and ``new`` replaces it
    (the one wording every deprecated name, method and delegate uses)."""
    warnings.warn(
        f"{old} is deprecated and will be removed in the next release; use {new}",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def deprecated_names(module: str, old_to_new: dict[str, tuple[str, Any]]) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``module`` whose public names in ``old_to_new`` (old -> (the new
    name, the object)) were renamed: the old name returns the object for one release, with a
    :class:`DeprecationWarning` naming the new one."""

    def __getattr__(name: str) -> Any:
        if name in old_to_new:
            new, value = old_to_new[name]
            warn_deprecated(f"{module}.{name}", f"{module}.{new}")
            return value
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__


def deprecated_alias(old: str, new: str) -> property:
    """A read-only attribute ``old`` that returns ``new`` with a :class:`DeprecationWarning`
    (a result field renamed for one vocabulary, kept one release)."""

    def get(self: Any) -> Any:
        warnings.warn(
            f"{type(self).__name__}.{old} is deprecated and will be removed in the next "
            f"release; use .{new}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(self, new)

    return property(get, doc=f"Deprecated: use :attr:`{new}`.")
