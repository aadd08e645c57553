"""The logs engine's declaration (see :mod:`labcoat.descriptor`); imports nothing heavy."""

from labcoat.descriptor import Engine

ENGINE = Engine(
    name="logs",
    summary="Logs across ranks that name the first failure: captured, templated, folded.",
    registry="labcoat.logs.checks:CHECKS",
    results=("labcoat.logs.result",),
    section="labcoat.report.sections.logs:stored_run",
    commands={
        "logs": "A run's log records: RUN is a run id, `last`, or a folder of per-rank log files "
        "(torchrun --log-dir). With --why, exit 1 when a failure-indicating line is named."
    },
)
