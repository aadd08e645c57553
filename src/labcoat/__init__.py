"""labcoat: lab discipline for machine-learning experiments.

The heavy parts (torch for the doctor and the watch) load on first use, so ``import labcoat``
and ``labcoat --help`` stay fast.
"""

from __future__ import annotations

from labcoat._lazy import lazy
from labcoat._version import __version__
from labcoat.errors import InputError, LabcoatError
from labcoat.findings import Check, Finding, Outcome

#: public name -> "module:attribute" (or just "module"), imported on first access
_LAZY: dict[str, str] = {
    "diagnose": "labcoat.doctor:diagnose",
    "check_resume": "labcoat.doctor.resume:check_resume",
    "Experiment": "labcoat.doctor:Experiment",
    "Diagnosis": "labcoat.doctor:Diagnosis",
    "permutation_test": "labcoat.doctor.permutation:permutation_test",
    "Ledger": "labcoat.ledger:Ledger",
    "watch": "labcoat.watch",  # the package itself: callable, and it holds Invariant, Alert, ...
    "Alert": "labcoat.watch:Alert",
    "scale": "labcoat.scale",
    "audit": "labcoat.audit",  # the package: label_issues, duplicates, contamination, groups
    "Plan": "labcoat.verdicts.plan:Plan",
    "verdicts": "labcoat.verdicts",  # the package: review, analyse, VerdictResult
    "evals": "labcoat.evals",  # the package: plan_subset, estimate, compare, sequential
    "replayable": "labcoat.replay.record:replayable",
    "replay": "labcoat.replay",  # the package: replay(), diff(), open_run()
    "design": "labcoat.design",  # the package, callable: design(), analyse(), recommend()
    "logs": "labcoat.logs",  # the package: install(), step(), why()
}

__all__ = ["Check", "Finding", "InputError", "LabcoatError", "Outcome", "__version__", *_LAZY]


__getattr__, __dir__ = lazy(
    "labcoat", _LAZY, renamed={"Report": "Diagnosis", "record": "replayable"}
)
