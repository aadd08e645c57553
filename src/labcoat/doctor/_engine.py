"""The doctor's declaration as an engine (see :mod:`labcoat.descriptor`); imports nothing heavy."""

from labcoat.descriptor import Engine

ENGINE = Engine(
    name="doctor",
    summary="Falsifying checks on a PyTorch setup before it trains: data, model, loss, update.",
    registry="labcoat.doctor.checks:REGISTRY",
    results=("labcoat.doctor.result",),
    commands={
        "doctor": "Diagnose the experiment that FILE.py's function NAME (default: experiment) "
        "returns.",
    },
    section="labcoat.report.sections.doctor:stored_run",
)
