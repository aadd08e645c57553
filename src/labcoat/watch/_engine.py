"""The watch's declaration as an engine (see :mod:`labcoat.descriptor`); imports nothing heavy."""

from labcoat.descriptor import Engine

ENGINE = Engine(
    name="watch",
    summary="Training invariants checked while a run trains, raised as alerts.",
    registry="labcoat.watch.invariants:INVARIANTS",
    results=("labcoat.watch.result", "labcoat.watch.watcher", "labcoat.watch.evaluation"),
    commands={"watch": "Training-watch events: alerts raised while a run trained."},
    section="labcoat.report.sections.watch:stored_run",
)
