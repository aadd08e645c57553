"""Stats results kept in the ledger, so ``labcoat report`` finds every comparison a user ran.

A result is stored as one finding (source ``stats``) whose evidence is the result's own
``to_dict()``: a comparison is evidence, not a check, so it passes unless it carries warnings
or a gate rejected the release.
"""

from __future__ import annotations

from typing import Any

from labcoat.findings import Check, CheckRegistry, Finding, Outcome

#: result class → what its finding is called and the one-line summary of it
_KIND = {
    "MeanResult": "mean",
    "CompareResult": "compare",
    "LeaderboardResult": "leaderboard",
    "GateResult": "gate",
    "ExclusionResult": "compare.exclude",
}

#: what each kind of stored result claims, declared like every other engine's checks
CHECKS = CheckRegistry("stats", ["stats"])
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
    CHECKS.add(Check(f"stats.{_kind}", "stats", _falsifies, _predicts, run=None, severity="fail"))


def as_finding(result: Any, name: str = "") -> Finding:
    data = result.to_dict()
    kind = _KIND.get(type(result).__name__, type(result).__name__.lower())
    status = (
        "fail" if data.get("decision") == "REJECT" else ("warn" if data.get("warnings") else "pass")
    )
    label = f"{name}: " if name else ""
    declared = CHECKS.get(f"stats.{kind}") or Check(f"stats.{kind}", "stats", "", "", run=None)
    outcome = Outcome(status, label + _summary(kind, data), {"name": name, **data})
    return declared.finding(outcome)


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


def record(result: Any, *, ledger: Any = None, name: str = "") -> list[int] | None:
    """Store ``result`` in ``ledger`` (a :class:`labcoat.Ledger`, path or URL; ``None``: the
    project's ledger if one exists; ``False``: nowhere). Returns the stored row ids."""
    from labcoat.ledger import Ledger

    notebook = Ledger.for_recording(ledger)
    if notebook is None:
        return None
    return notebook.record_findings([as_finding(result, name)], source="stats")
