"""The doctor: a ladder of falsifying checks on a real PyTorch setup.

data → model → update → overfit (positive control) → shuffle (negative control); it stops at
the first failing layer and names the evidence. Checks are declared once in
:mod:`labcoat.doctor.checks` and registered in :data:`labcoat.doctor.registry.REGISTRY`.

The names below load on first use: ``labcoat doctor missing.py`` says the file is missing, and
an experiment file is looked over, before torch is imported (PEP 562).
"""

from __future__ import annotations

from labcoat._lazy import lazy

#: public name -> "module:attribute", imported on first access
_LAZY = {
    "Experiment": "labcoat.doctor.api:Experiment",
    "diagnose": "labcoat.doctor.api:diagnose",
    "LAYERS": "labcoat.doctor.registry:LAYERS",
    # importing the checks registers every one of them
    "REGISTRY": "labcoat.doctor.checks:REGISTRY",
    "Diagnosis": "labcoat.doctor.result:Diagnosis",
}

__all__ = ["Diagnosis", "Experiment", "LAYERS", "REGISTRY", "diagnose"]


__getattr__, __dir__ = lazy("labcoat.doctor", _LAZY, renamed={"Report": "Diagnosis"})
