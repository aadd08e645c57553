"""Stats results kept in the ledger, so ``labcoat report`` finds every comparison a user ran.

A result is stored as one finding (source ``stats``) whose evidence is the result's own
``to_dict()``: a comparison is evidence, not a check, so it passes unless it carries notes
(``warnings`` in its ``to_dict()``) or a gate rejected the release. Each kind of result is a
check declared in :data:`CHECKS` and run through :func:`labcoat.findings.run_check`, like every
other engine's; ``result.record(ledger)`` (:meth:`labcoat.result.Result.record`) stores it.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

from labcoat.findings import CheckRegistry, Finding, Outcome, run_check

#: what each kind of stored result claims, declared like every other engine's checks
CHECKS = CheckRegistry("stats", ["stats"])


def _summary(kind: str, d: dict) -> str:
    ci = d.get("ci")
    interval = f" [{ci[0]:.4g}, {ci[1]:.4g}]" if ci else ""
    if kind == "mean":
        return f"mean {d['mean']:.4g}{interval} over {d.get('n')} items"
    if kind == "gate":
        return f"{d['decision']}: new − old {d['diff']:+.4g}{interval}, margin {d['margin']:.4g}"
    if kind == "leaderboard":
        return "ranking: " + " > ".join(m["name"] for m in d["models"])
    if "diff" in d:
        return f"difference {d['diff']:+.4g}{interval}, p = {d.get('pvalue', float('nan')):.3g}"
    return kind


def _outcome_of(kind: str) -> Callable[[Any], Outcome]:
    def outcome(result: Any) -> Outcome:
        data = result.to_dict()
        status = (
            "fail"
            if data.get("decision") == "REJECT"
            else ("warn" if data.get("warnings") else "pass")
        )
        return Outcome(status, _summary(kind, data), data)

    return outcome


for _kind, _falsifies, _predicts in (
    (
        "mean",
        "the score is known to within its interval",
        "a rerun on new items from the same population lands inside the interval",
    ),
    (
        "compare",
        "the two models score alike on this population",
        "the difference's interval excludes 0 when they do not",
    ),
    (
        "leaderboard",
        "the ranking is what the scores support",
        "models ranked apart have separated intervals",
    ),
    (
        "gate",
        "the new model is no worse than the old one by more than the margin",
        "the interval of new − old stays above −margin",
    ),
    (
        "compare.exclude",
        "the comparison's decision does not hinge on the excluded questions",
        "with and without them, the same models differ significantly",
    ),
):
    CHECKS.check(f"stats.{_kind}", falsifies=_falsifies, predicts=_predicts)(_outcome_of(_kind))


def as_finding(result: Any, name: str = "") -> Finding:
    """``result`` (a stats result whose ``KIND`` is its check's id) as its one finding;
    ``name`` labels the message and is kept in the evidence."""
    finding = run_check(CHECKS[result.KIND], result)
    if name:
        finding.message = f"{name}: {finding.message}"
    finding.evidence = {"name": name, **finding.evidence}
    return finding


def record(result: Any, *, ledger: Any = None, name: str = "") -> list[int] | None:
    """Deprecated: use ``result.record(ledger, name=name)``."""
    warnings.warn(
        "labcoat.stats.record.record(result, ledger=...) is deprecated; use "
        "result.record(ledger) (every labcoat result records the same way)",
        DeprecationWarning,
        stacklevel=2,
    )
    return result.record(ledger, name=name)
