"""The doctor: a ladder of falsifying checks on a real PyTorch setup.

data → model → update → overfit (positive control) → shuffle (negative control); it stops at
the first failing layer and names the evidence. Checks are declared once in
:mod:`labcoat.doctor.checks` and registered in :data:`labcoat.doctor.registry.REGISTRY`.

The names below load on first use: ``labcoat doctor missing.py`` says the file is missing, and
an experiment file is looked over, before torch is imported (PEP 562).
"""

from __future__ import annotations

import importlib
from typing import Any

#: public name -> the module that defines it
_LAZY = {
    "Experiment": "labcoat.doctor.api",
    "diagnose": "labcoat.doctor.api",
    "LAYERS": "labcoat.doctor.registry",
    "REGISTRY": "labcoat.doctor.checks",  # importing the checks registers every one of them
    "Report": "labcoat.doctor.result",
}

__all__ = ["Experiment", "LAYERS", "REGISTRY", "Report", "diagnose"]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'labcoat.doctor' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
