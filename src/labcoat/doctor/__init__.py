"""The doctor: a ladder of falsifying checks on a real PyTorch setup.

data → model → update → overfit (positive control) → shuffle (negative control); it stops at
the first failing layer and names the evidence. Checks are declared once in
:mod:`labcoat.doctor.checks` and registered in :data:`labcoat.doctor.registry.REGISTRY`.
"""

from labcoat.doctor.api import Experiment, diagnose
from labcoat.doctor.registry import LAYERS, REGISTRY
from labcoat.doctor.result import Report

__all__ = ["Experiment", "LAYERS", "REGISTRY", "Report", "diagnose"]
