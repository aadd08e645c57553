"""The audit's checks, declared once like the doctor's: what each falsifies, what healthy data
predicts, and how a result becomes an :class:`~labcoat.findings.Outcome`.

Every audit result (:class:`AuditResult`) turns into findings through these checks, so the
ledger stores them, the CLI renders them and ``--json`` prints them the same way as the
doctor's and the watch's.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from labcoat.findings import Check, CheckRegistry, Finding, Outcome, worst
from labcoat.report.html import HtmlMixin

LAYER = "audit"
REGISTRY = CheckRegistry("audit", [LAYER])
#: the modules whose import declares every audit check
MODULES = ("label_errors", "near_duplicates", "benchmark_contamination", "group_leakage")


class AuditResult(HtmlMixin, ABC):
    """Shared behaviour of audit results: findings, ``ok``, rich rendering, ledger recording.

    A subclass names its checks in ``CHECKS``; each check's ``run`` reads the result.
    """

    CHECKS: tuple[str, ...] = ()

    @property
    def findings(self) -> list[Finding]:
        return [REGISTRY[c].evaluate(self) for c in self.CHECKS]

    @property
    def ok(self) -> bool:
        """True when no check failed (warnings still need a look)."""
        return worst(self.findings) != "fail"

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """The result as plain JSON-able data (what ``--json`` prints)."""

    def record(self, ledger: Any = None) -> list[int] | None:
        """Store the findings in ``ledger`` (a :class:`labcoat.Ledger`, path or URL; ``None``:
        the project's ledger if one exists; ``False``: nowhere). Returns the row ids."""
        from labcoat.ledger import Ledger

        notebook = Ledger.for_recording(ledger)
        if notebook is None:
            return None
        return notebook.record_findings(self.findings, source="audit")

    def __rich__(self):  # rich's protocol; the view lives in labcoat.audit.view
        from labcoat.audit.view import result_view

        return result_view(self)


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
