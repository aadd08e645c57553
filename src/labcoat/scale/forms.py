"""The laws a fit can assume: the replication's power-law sums, or the user's own function.

A form knows its parameter names, the grid of starts the replication's recipe uses, how to map
its internal parameters (log coefficients, exponents) to the published ones (A, E, α…), and
how to predict. The two power-law sums share one batched objective
(:mod:`labcoat.scale.objective`); a user's callable is fitted with scipy, start by start.
"""

from __future__ import annotations

import inspect
import itertools
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from labcoat._validation import fail
from labcoat.errors import InputError
from labcoat.scale import objective

#: the replication's grid (Besiroglu et al. 2024): exponents, log coefficients, log floor
EXPONENT_GRID = tuple(np.arange(0.0, 2.01, 0.5))
COEFFICIENT_GRID = tuple(np.arange(0.0, 25.01, 5.0))
FLOOR_GRID = tuple(np.arange(-1.0, 1.01, 0.5))


@dataclass(frozen=True)
class PowerLawSum:
    """``L = E + Σ_j A_j · x_j^(−α_j)``, fitted in log space with the batched objective."""

    name: str
    variables: tuple[str, ...]  # what each x_j is called in results: ("N", "D")
    coefficients: tuple[str, ...]  # ("A", "B")
    exponents: tuple[str, ...]  # ("alpha", "beta")

    @property
    def names(self) -> tuple[str, ...]:
        """Published parameter names, in the internal order (a_1…a_k, e, α_1…α_k)."""
        return (*self.coefficients, "E", *self.exponents)

    @property
    def internal_names(self) -> tuple[str, ...]:
        return (*(f"log_{c}" for c in self.coefficients), "log_E", *self.exponents)

    @property
    def batched(self) -> bool:
        return True

    def grid(self) -> np.ndarray:
        """Every start of the replication's grid, one row each (internal order)."""
        k = len(self.variables)
        axes = [COEFFICIENT_GRID] * k + [FLOOR_GRID] + [EXPONENT_GRID] * k
        return np.array(list(itertools.product(*axes)), dtype=float)

    def grid_box(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Lowest and highest grid value and the grid step of each internal parameter."""
        k = len(self.variables)
        lows = [COEFFICIENT_GRID[0]] * k + [FLOOR_GRID[0]] + [EXPONENT_GRID[0]] * k
        highs = [COEFFICIENT_GRID[-1]] * k + [FLOOR_GRID[-1]] + [EXPONENT_GRID[-1]] * k
        steps = [5.0] * k + [0.5] + [0.5] * k
        return np.array(lows), np.array(highs), np.array(steps)

    def natural(self, theta: np.ndarray) -> np.ndarray:
        """Internal rows -> published parameters (coefficients and E exponentiated)."""
        theta = np.atleast_2d(theta)
        k = len(self.variables)
        out = theta.copy()
        out[:, : k + 1] = np.exp(theta[:, : k + 1])
        return out

    def log_predict(self, theta: np.ndarray, x: np.ndarray) -> np.ndarray:
        """``log L`` for each row of ``theta`` at points ``x`` (k, n): shape (S, n)."""
        return objective.log_predict(theta, np.log(x))

    def value_and_grad(self, theta, x, loss, delta, weights=None):
        return objective.value_and_grad(theta, np.log(x), np.log(loss), delta, weights)


CHINCHILLA = PowerLawSum("chinchilla", ("N", "D"), ("A", "B"), ("alpha", "beta"))
CURVE = PowerLawSum("curve", ("x",), ("A",), ("alpha",))
FORMS: dict[str, PowerLawSum] = {f.name: f for f in (CHINCHILLA, CURVE)}


def _all_forms() -> dict[str, Any]:
    from labcoat.scale.curves import CURVES

    return {**FORMS, **CURVES}


#: what ``form=`` takes, as error messages say it
FORM_CHOICES = (
    "one of 'chinchilla', 'curve', 'm1', 'm2', 'm3', 'm4', 'broken', 'auto' (one variable) "
    "or a callable"
)


@dataclass(frozen=True)
class CustomForm:
    """A user's law ``f(*variables, **params) -> loss``, with the starts the user gives.

    ``p0`` maps each parameter to a start value or a list of them; every combination is a
    start, and the best final objective wins, as with the power laws' grid.
    """

    function: Callable[..., Any]
    p0: Mapping[str, Any]
    n_variables: int
    name: str = "custom"
    starts: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not callable(self.function):
            raise fail("form", FORM_CHOICES, self.function)
        if not isinstance(self.p0, Mapping) or not self.p0:
            raise InputError(
                "p0: a custom form needs initial guesses as a dict of parameter name -> value "
                "(or a list of values to try), e.g. p0={'E': 1.7, 'A': [100, 1000], 'alpha': 0.3}"
            )
        try:
            signature = inspect.signature(self.function)
            signature.bind(*([np.ones(1)] * self.n_variables), **{k: 1.0 for k in self.p0})
        except TypeError as exc:
            raise InputError(
                f"form: the function cannot be called as f({self._call_shape()}): {exc}; "
                "its parameters must be the keys of p0"
            ) from None
        except ValueError:  # builtins without a signature: trust the caller
            pass
        axes = [np.atleast_1d(np.asarray(v, dtype=float)) for v in self.p0.values()]
        object.__setattr__(self, "starts", np.array(list(itertools.product(*axes)), dtype=float))

    def _call_shape(self) -> str:
        variables = ["N", "D"][: self.n_variables] if self.n_variables <= 2 else ["x"]
        return ", ".join(variables + [f"{k}=…" for k in self.p0])

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.p0)

    internal_names = names

    @property
    def batched(self) -> bool:
        return False

    @property
    def variables(self) -> tuple[str, ...]:
        return ("N", "D")[: self.n_variables] if self.n_variables == 2 else ("x",)

    def grid(self) -> np.ndarray:
        return self.starts

    def natural(self, theta: np.ndarray) -> np.ndarray:
        return np.atleast_2d(theta).copy()

    def log_predict(self, theta: np.ndarray, x: np.ndarray) -> np.ndarray:
        theta = np.atleast_2d(theta)
        out = np.empty((theta.shape[0], x.shape[1]))
        with np.errstate(all="ignore"):
            for i, row in enumerate(theta):
                value = np.asarray(self.function(*x, **dict(zip(self.names, row))), dtype=float)
                out[i] = np.log(np.broadcast_to(value, (x.shape[1],)))
        return out


def resolve_form(
    form: Any, p0: Mapping[str, Any] | None, n_variables: int
) -> PowerLawSum | CustomForm:
    """The form object for ``fit(form=...)``, checked against the number of input variables."""
    if isinstance(form, str):
        forms = _all_forms()
        if form not in forms:
            raise fail("form", FORM_CHOICES, form)
        chosen = forms[form]
        if len(chosen.variables) != n_variables:
            needs = "N and D" if len(chosen.variables) == 2 else "one variable (pass D=None)"
            raise InputError(
                f"form {form!r} needs {needs}; got {n_variables} variable(s)"
                + ("; use form='curve' for loss against one quantity" if n_variables == 1 else "")
            )
        if p0 is not None:
            raise InputError(
                f"p0: form {form!r} starts from the replication's grid; p0 is for a custom callable"
            )
        return chosen
    return CustomForm(form, p0 or {}, n_variables)
