"""Replay's declaration as an engine (see :mod:`labcoat.descriptor`); imports nothing heavy."""

from labcoat.descriptor import Engine

ENGINE = Engine(
    name="replay",
    summary="Record a run, replay its steps, and find where two runs part ways.",
    registry="labcoat.replay.results:CHECKS",
    results=("labcoat.replay.results",),
    commands={
        "replay": "Re-run steps of a recorded RUN (its directory or id) and check they are the "
        "same.",
        "divergence": "Where two recorded runs A and B part ways: provenance, first divergence, "
        "module.",
    },
)
