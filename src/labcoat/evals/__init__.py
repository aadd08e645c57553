"""Fast evals from a few hundred items, with intervals that hold and a refusal when they cannot.

Plan a subset from your own history of per-item results, evaluate only those items, and get
the full-benchmark score with an interval (:func:`estimate`), a paired comparison that says
"inconclusive, N items needed" instead of ranking inside the noise (:func:`compare`), or a
sequential eval that stops once it knows (:func:`sequential`); during training, the watch
scores each checkpoint on the plan (:func:`planned_evaluation`) and the ledger keeps the
per-item results for the next plan (``read_history(ledger=...)``)::

    history = labcoat.evals.read_history("history.csv")        # items x models
    plan = labcoat.evals.plan_subset(history, subset_size=200)
    est = labcoat.evals.estimate({"q17": 1.0, ...}, plan)
    est.mean, est.ci

See docs/evals.md.
"""

from labcoat._validation import deprecated_names
from labcoat.evals.compare import Comparison, compare
from labcoat.evals.estimate import Estimate, estimate
from labcoat.evals.history import History, Results, read_history, read_results
from labcoat.evals.plan import METHODS, SubsetPlan, load_plan, plan_subset
from labcoat.evals.planned import planned_evaluation
from labcoat.evals.sequential import SequentialEval, sequential

#: renamed for one vocabulary (docs/deprecations.md); the old names warn for one release
__getattr__ = deprecated_names("labcoat.evals", {"Plan": ("SubsetPlan", SubsetPlan)})

__all__ = [
    "METHODS",
    "Comparison",
    "Estimate",
    "History",
    "SubsetPlan",
    "Results",
    "SequentialEval",
    "compare",
    "estimate",
    "load_plan",
    "plan_subset",
    "planned_evaluation",
    "read_history",
    "read_results",
    "sequential",
]
