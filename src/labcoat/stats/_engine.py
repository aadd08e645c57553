"""Stats' declaration as an engine (see :mod:`labcoat.descriptor`); imports nothing heavy."""

from labcoat.descriptor import Engine

ENGINE = Engine(
    name="stats",
    summary="Honest error bars for evals: means, comparisons, gates, leaderboards, power.",
    registry="labcoat.stats.record:CHECKS",
    results=(
        "labcoat.stats.mean",
        "labcoat.stats.compare",
        "labcoat.stats.gate",
        "labcoat.stats.leaderboard",
        "labcoat.stats._results",
        "labcoat.stats.power",
        "labcoat.stats.proportions",
        "labcoat.stats.sequential",
        "labcoat.stats.multiple",
        "labcoat.stats.effects",
        "labcoat.stats.seeds",
    ),
    commands={
        "stats": "Honest error bars for evals (Miller 2024, rliable, anytime-valid sequences)."
    },
)
