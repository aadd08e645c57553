"""Run the registered checks layer by layer, stopping at the first layer with a failure."""

from __future__ import annotations

import time
from typing import Callable, Iterable

from labcoat.doctor.case import Case, ProbeFailed
from labcoat.doctor.registry import LAYERS, REGISTRY
from labcoat.findings import Check, Finding, Outcome, failed, skipped
from labcoat.findings import run_check as run


def run_check(check: Check, case: Case) -> Finding:
    """Run one check through the shared runner; a failed probe is explained, not a crash."""
    return run(check, case, explain=lambda exc: _probe_outcome(case, exc))


def _probe_outcome(case: Case, exc: Exception) -> Outcome | None:
    """A failed probe fails the first check that needs it and skips the rest; any other error
    after a probe failed is most likely that failure again."""
    if isinstance(exc, ProbeFailed):
        earlier = case.earlier_report(exc)
        if earlier is None:
            return failed(str(exc), probe=exc.probe, error=exc.signature)
        if earlier == exc.probe:
            return skipped(f"needs the {exc.probe}, which failed")
        return skipped(
            f"needs the {exc.probe}, which fails with the error already reported for the "
            f"{earlier} ({exc.signature})"
        )
    if case._failed_probes:
        probe = next(iter(case._failed_probes))
        return skipped(f"needs the {probe}, which failed ({type(exc).__name__})")
    return None


def run_ladder(
    case: Case,
    *,
    layers: Iterable[str] = LAYERS,
    run_all: bool = False,
    on_finding: Callable[[Finding], None] | None = None,
) -> tuple[list[Finding], list[str], list[str], dict[str, float]]:
    """Findings, layers run, layers not run, seconds per layer."""
    findings: list[Finding] = []
    ran: list[str] = []
    timings: dict[str, float] = {}
    todo = [layer for layer in layers if REGISTRY.in_layer(layer)]
    for i, layer in enumerate(todo):
        start = time.perf_counter()
        layer_findings = []
        for check in REGISTRY.in_layer(layer):
            finding = run_check(check, case)
            layer_findings.append(finding)
            if on_finding is not None:
                on_finding(finding)
        findings.extend(layer_findings)
        ran.append(layer)
        timings[layer] = time.perf_counter() - start
        if not run_all and any(f.failed for f in layer_findings):
            return findings, ran, todo[i + 1 :], timings
    return findings, ran, [], timings
