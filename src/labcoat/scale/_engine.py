"""The scaling fit's declaration as an engine (see :mod:`labcoat.descriptor`); imports nothing
heavy."""

from labcoat.descriptor import Engine

ENGINE = Engine(
    name="scale",
    summary="Scaling-law fits with honest uncertainty, backtested on held-out larger runs.",
    registry="labcoat.scale.diagnostics:CHECKS",
    results=("labcoat.scale.result", "labcoat.scale.backtest", "labcoat.scale.downstream"),
    commands={
        "scale": "Scaling-law fits with honest uncertainty, and backtests on held-out larger runs."
    },
)
