"""The doctor's ordered layers and the registry its checks declare themselves in."""

from __future__ import annotations

from typing import Any, Callable, Iterable

from labcoat.findings import CheckRegistry, Outcome

LAYERS: tuple[str, ...] = ("data", "model", "update", "overfit", "shuffle")

#: what a passing layer rules out, shown on the ladder
RULES_OUT: dict[str, str] = {
    "data": "labels, inputs and splits are usable and carry signal",
    "model": "forward, loss and gradients are wired as a healthy model's are",
    "update": "one optimizer step moves what should move and nothing else",
    "overfit": "the setup can memorise a tiny fixed batch (positive control)",
    "shuffle": "nothing scores above chance without real labels (negative control)",
}

REGISTRY = CheckRegistry("doctor", LAYERS)


def check(
    id: str, *, explains: Iterable[str] = (), **declared: Any
) -> Callable[[Callable[[Any], Outcome]], Callable[[Any], Outcome]]:
    """Declare a doctor check (see :meth:`CheckRegistry.check`). ``explains`` lists the later
    checks (ids or fnmatch patterns) whose failure a warning from this one would be the likely
    cause of: softmax before a logits loss is why a tiny batch is not memorised, unscaled inputs
    why updates look too small. The report names such a warning as the failure's likely cause."""
    return REGISTRY.check(id, explains=tuple(explains), **declared)
