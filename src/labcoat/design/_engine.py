"""The design engine's declaration (see :mod:`labcoat.descriptor`); imports nothing heavy."""

from labcoat.descriptor import Engine

ENGINE = Engine(
    name="design",
    summary="Designs with several interventions that can attribute each effect, and their "
    "analyses.",
    registry="labcoat.design.checks:CHECKS",
    results=("labcoat.design.designs", "labcoat.design.analysis", "labcoat.design.verdict_result"),
    commands={
        "design": "A two-level design for the factors in FACTORS.toml ([factors] name = [low, "
        "high], and an optional [design] table of labcoat.design()'s keywords): its runs, what "
        "they alias, each planned effect's power."
    },
)
