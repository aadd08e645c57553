import numpy as np
import pytest

from labcoat._validation import (
    PROBABILITY,
    Interval,
    IsCallable,
    OneOf,
    Seed,
    check_choice,
    check_int,
)
from labcoat.errors import InputError


@pytest.mark.parametrize(
    "constraint, good, bad, message",
    [
        (Interval(int, 1), 3, 0, "`x` must be an int >= 1; got 0."),
        (Interval(int, 1), 3, True, "`x` must be an int >= 1; got True."),
        (Interval(float, 0, 0.5, low_open=True), 0.5, 0.0, "> 0 and <= 0.5; got 0.0."),
        (Interval(float), 1.5, float("nan"), "`x` must be a finite number; got nan."),
        (PROBABILITY, 0.95, 1.0, "`x` must be a number strictly between 0 and 1; got 1.0."),
        (OneOf(("fast", "full")), "fast", "slow", "one of 'fast', 'full'; got 'slow'."),
        (OneOf(("a",), none=True), None, "b", "one of 'a' or None; got 'b'."),
        (IsCallable("a callable(x) -> y"), len, 3, "a callable(x) -> y; got an int."),
        (Seed(), 0, -1, "`x` must be an int seed >= 0; got -1."),
    ],
)
def test_a_constraint_accepts_the_good_value_and_names_the_bad_one(constraint, good, bad, message):
    assert constraint.is_satisfied_by(good) and not constraint.is_satisfied_by(bad)
    constraint.check(good, "x")
    with pytest.raises(InputError) as err:
        constraint.check(bad, "x")
    assert str(err.value).endswith(message)


def test_checks_convert_and_add_the_fix():
    assert check_int(np.int64(4), "n") == 4 and type(check_int(np.int64(4), "n")) is int
    assert isinstance(Seed(generator=True).check(3, "seed"), np.random.Generator)
    with pytest.raises(InputError, match="got 'x'. Pick a budget."):
        OneOf(("fast",)).check("x", "budget", hint="Pick a budget.")
    assert check_choice(None, "task", ("a",), none=True) is None
