"""Data audits (``labcoat audit``): label errors, duplicates across splits, benchmark
contamination and group leakage.

Each function returns a plain result object with ``.findings`` (the shape every labcoat check
shares), ``.to_dict()`` and a rich view. cleanlab, datasketch and Ray load only when the audit
that needs them runs; the corpus pipelines run locally by default or on Ray with
``engine="ray"``.
"""

from __future__ import annotations

from labcoat._lazy import lazy

#: public name -> "module:attribute", imported on first access
_LAZY: dict[str, str] = {
    "label_issues": "labcoat.audit.label_errors:label_issues",
    "LabelIssues": "labcoat.audit.label_errors:LabelIssues",
    "duplicates": "labcoat.audit.near_duplicates:duplicates",
    "Duplicates": "labcoat.audit.near_duplicates:Duplicates",
    "contamination": "labcoat.audit.benchmark_contamination:contamination",
    "Contamination": "labcoat.audit.benchmark_contamination:Contamination",
    "groups": "labcoat.audit.group_leakage:groups",
    "SharedGroups": "labcoat.audit.group_leakage:SharedGroups",
}

__all__ = [
    "Contamination",
    "Duplicates",
    "LabelIssues",
    "SharedGroups",
    "contamination",
    "duplicates",
    "groups",
    "label_issues",
]


__getattr__, __dir__ = lazy("labcoat.audit", _LAZY)
