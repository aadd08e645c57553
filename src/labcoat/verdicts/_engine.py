"""Verdicts' declaration as an engine (see :mod:`labcoat.descriptor`); imports nothing heavy."""

from labcoat.descriptor import Engine

ENGINE = Engine(
    name="verdicts",
    summary="Pre-registered plans: a design review before the run, a verdict by the plan after.",
    registry="labcoat.verdicts.deviations:REGISTRY",
    results=("labcoat.verdicts.review", "labcoat.verdicts.verdict"),
    commands={
        "verdict": "Judge entry ENTRY_ID by its registered plan on the results of arm A and arm B."
    },
)
