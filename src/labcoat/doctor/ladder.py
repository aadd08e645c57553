"""Run the registered checks layer by layer, stopping at the first layer with a failure."""

from __future__ import annotations

import time
import warnings
from typing import Callable, Iterable

from labcoat.doctor.case import Case, ProbeFailed
from labcoat.doctor.registry import LAYERS, REGISTRY
from labcoat.findings import Check, Finding, failed, skipped


def run_check(check: Check, case: Case) -> Finding:
    """Run one check; map what it raises to a finding, never to an exception."""
    start = time.perf_counter()
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:  # the user's code warning is evidence
            warnings.simplefilter("always")
            reason = check.applies(case) if check.applies else None
            outcome = skipped(reason) if reason else check.run(case)
    except ProbeFailed as exc:
        earlier = case.earlier_report(exc)
        if earlier is None:
            outcome = failed(str(exc), probe=exc.probe, error=exc.signature)
        elif earlier == exc.probe:
            outcome = skipped(f"needs the {exc.probe}, which failed")
        else:
            outcome = skipped(
                f"needs the {exc.probe}, which fails with the error already reported for the "
                f"{earlier} ({exc.signature})"
            )
    except Exception as exc:  # noqa: BLE001 - a check must yield a finding, whatever happens
        if case._failed_probes:
            probe = next(iter(case._failed_probes))
            outcome = skipped(f"needs the {probe}, which failed ({type(exc).__name__})")
        else:
            outcome = failed(f"check crashed: {type(exc).__name__}: {exc}", error=repr(exc))
    finding = check.finding(outcome, duration_s=time.perf_counter() - start)
    messages = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
    if messages:
        finding.evidence["warnings"] = messages[:5]
    return finding


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
