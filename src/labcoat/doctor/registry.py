"""The doctor's ordered layers and the registry its checks declare themselves in."""

from __future__ import annotations

from labcoat.findings import CheckRegistry

LAYERS: tuple[str, ...] = ("data", "model", "update", "overfit", "shuffle")

#: what a passing layer rules out, shown on the ladder
RULES_OUT: dict[str, str] = {
    "data": "labels, inputs and splits are usable and carry signal",
    "model": "forward, loss and gradients are wired as a healthy model's are",
    "update": "one optimizer step moves what should move and nothing else",
    "overfit": "the setup can memorise a tiny fixed batch (positive control)",
    "shuffle": "nothing scores above chance without real labels (negative control)",
}

REGISTRY = CheckRegistry(LAYERS)
check = REGISTRY.check
