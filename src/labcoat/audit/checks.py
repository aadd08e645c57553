"""The audit's checks, declared once like the doctor's: what each falsifies, what healthy data
predicts, and how a result becomes an :class:`~labcoat.findings.Outcome`.

Every audit result (:class:`AuditResult`) turns into findings through these checks, so the
ledger stores them, the CLI renders them and ``--json`` prints them the same way as the
doctor's and the watch's.
"""

from __future__ import annotations

from labcoat.findings import Check, CheckRegistry, Finding, Outcome
from labcoat.result import Result

LAYER = "audit"
REGISTRY = CheckRegistry("audit", [LAYER])
#: the modules whose import declares every audit check
MODULES = ("label_errors", "near_duplicates", "benchmark_contamination", "group_leakage")


class AuditResult(Result):
    """Shared behaviour of audit results: findings through the audit's checks; ``ok``,
    ``record``, ``to_html`` and the rich view come from :class:`labcoat.result.Result`.

    A subclass names its checks in ``CHECKS``; each check's ``run`` reads the result.
    """

    engine = "audit"
    view = "labcoat.audit.view:result_view"
    section = "labcoat.report.sections.audit:audit_section"
    title = "Audit"
    CHECKS: tuple[str, ...] = ()

    @property
    def findings(self) -> list[Finding]:
        return [REGISTRY[c].evaluate(self) for c in self.CHECKS]


def check(id: str, *, falsifies: str, predicts: str):
    """Register an audit check whose ``run`` takes the result object."""
    return REGISTRY.check(id, layer=LAYER, falsifies=falsifies, predicts=predicts)


def declared(id: str) -> Check:
    return REGISTRY[id]


def all_checks() -> CheckRegistry:
    """The registry once every audit module has declared its checks."""
    import importlib

    for name in MODULES:
        importlib.import_module(f"labcoat.audit.{name}")
    return REGISTRY


__all__ = ["LAYER", "REGISTRY", "AuditResult", "Outcome", "all_checks", "check", "declared"]
