"""The audit's declaration as an engine (see :mod:`labcoat.descriptor`); imports nothing heavy."""

from labcoat.descriptor import Engine

ENGINE = Engine(
    name="audit",
    summary="Data audits: label errors, duplicates across splits, contamination, group leakage.",
    registry="labcoat.audit.checks:all_checks",
    results=(
        "labcoat.audit.label_errors",
        "labcoat.audit.near_duplicates",
        "labcoat.audit.benchmark_contamination",
        "labcoat.audit.group_leakage",
    ),
    commands={
        "audit": "Audit data: label errors, duplicates across splits, contamination, group leakage."
    },
)
