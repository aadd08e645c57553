"""Evals' declaration as an engine (see :mod:`labcoat.descriptor`); imports nothing heavy."""

from labcoat.descriptor import Engine

ENGINE = Engine(
    name="evals",
    summary="Fast evals from a few hundred items: plan, estimate, compare, sequential.",
    registry="labcoat.evals.checks:CHECKS",
    results=(
        "labcoat.evals.compare",
        "labcoat.evals.estimate",
        "labcoat.evals.plan",
        "labcoat.evals.sequential",
    ),
    commands={
        "evals": "Fast evals from a few hundred items: plan, estimate, compare (intervals that "
        "hold)."
    },
)
