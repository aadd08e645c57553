"""The doctor's diagnosis: plain data (findings in ladder order), rendered elsewhere. (It was
``Report``, a name :mod:`labcoat.report`, the HTML pages, also has; ``Report`` still answers
for one release.)"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any

from labcoat._validation import deprecated_alias, deprecated_names
from labcoat.doctor.registry import LAYERS, REGISTRY
from labcoat.findings import Finding, worst
from labcoat.result import Result
from labcoat.view import STATUS_MARK


@dataclass
class Diagnosis(Result):
    """What :func:`labcoat.diagnose` found.

    ``findings`` are in the order the checks ran; ``failed_layer`` is the first layer with a
    failing check; layers after it are listed in ``layers_not_run`` unless ``run_all`` was set.
    """

    KIND = "doctor.report"

    engine = "doctor"
    view = "labcoat.doctor.view:ladder_view"
    section = "labcoat.report.sections.doctor:doctor_section"
    title = "Doctor"

    findings: list[Finding]
    layers_run: list[str]
    layers_not_run: list[str] = field(default_factory=list)
    task: str | None = None
    seed: int = 0
    #: how much training the controls spent, ``"fast"`` or ``"full"`` (was ``budget``)
    effort: str = "fast"
    timings: dict[str, float] = field(default_factory=dict)
    examples: dict[str, int] = field(default_factory=dict)
    extras: dict[str, Any] = field(default_factory=dict)
    #: the experiment file it diagnosed (``FILE.py[:NAME]``), when it came from one
    target: str | None = None

    budget = deprecated_alias("budget", "effort")

    @property
    def ok(self) -> bool:
        """True when no check failed and labcoat's self-test caught every mutant it built."""
        return not any(f.failed for f in self.findings) and not self.selftest_failed

    @property
    def warnings(self) -> list[Finding]:
        """The findings that warned: suspicious, not proof; the verdict names each of them."""
        return [f for f in self.findings if f.status == "warn"]

    @property
    def inconclusive(self) -> list[Finding]:
        """Skips of a control that ran and could not judge (``"inconclusive"`` in their
        evidence): the verdict names them, since no pass stands behind them."""
        return [f for f in self.findings if f.status == "skip" and f.evidence.get("inconclusive")]

    @property
    def selftest_failed(self) -> bool:
        """True when a mutant of the setup got past the checks: a failure of labcoat itself."""
        return self.extras.get("selftest", {}).get("ok") is False

    @property
    def failed_layer(self) -> str | None:
        for layer in LAYERS:
            if any(f.failed for f in self.layer(layer)):
                return layer
        return None

    @property
    def first_failure(self) -> Finding | None:
        """The failing check the verdict names: the first, in ladder order."""
        return next((f for f in self.findings if f.failed), None)

    @property
    def likely_cause(self) -> Finding | None:
        """An earlier warning whose check declares that it can explain the first failure
        (``explains=`` in its declaration), or None: the failure is then its own best account."""
        failure = self.first_failure
        if failure is None:
            return None
        for f in self.findings:
            if f is failure:
                return None
            if f.status == "warn" and any(
                fnmatch.fnmatchcase(failure.check, p) for p in _explains(f.check)
            ):
                return f
        return None

    def layer(self, name: str) -> list[Finding]:
        return [f for f in self.findings if f.layer == name]

    def __getitem__(self, check_id: str) -> Finding:
        for f in self.findings:
            if f.check == check_id:
                return f
        raise KeyError(check_id)

    def __contains__(self, check_id: object) -> bool:
        return any(f.check == check_id for f in self.findings)

    def to_dict(self) -> dict[str, Any]:
        from labcoat._jsonable import jsonable

        return jsonable(
            {
                "target": self.target,
                "ok": self.ok,
                "verdict": self.summary(),
                "warnings": [{"check": f.check, "message": f.message} for f in self.warnings],
                "failed_layer": self.failed_layer,
                "task": self.task,
                "seed": self.seed,
                "effort": self.effort,
                "budget": self.effort,  # the old key, kept one release
                "layers_run": self.layers_run,
                "layers_not_run": self.layers_not_run,
                "timings": self.timings,
                "examples": self.examples,
                "findings": [f.to_dict() for f in self.findings],
                "likely_cause": None if self.likely_cause is None else self.likely_cause.check,
                **self.extras,
            }
        )

    def summary(self) -> str:
        if self.ok:
            warned = self.warnings
            open_ = self.inconclusive
            unjudged = (
                f"; not judged: {', '.join(f.check for f in open_)} (inconclusive)" if open_ else ""
            )
            if not warned:
                return f"healthy: no check failed in {', '.join(self.layers_run)}{unjudged}"
            count = f"{len(warned)} warning{'s' if len(warned) > 1 else ''}"
            return (
                f"healthy, with {count}: {', '.join(f.check for f in warned)} (no check failed "
                f"in {', '.join(self.layers_run)}){unjudged}"
            )
        f = self.first_failure
        if f is None:
            return (
                "labcoat failed its self-test: a mutant of your setup passed its checks, so their "
                "verdicts cannot be trusted"
            )
        cause = self.likely_cause
        if cause is not None:
            return (
                f"broken at the {self.failed_layer} layer: likely cause: {cause.check} warned: "
                f"{cause.message}; then {f.check}: {f.message}"
            )
        return f"broken at the {self.failed_layer} layer: {f.check}: {f.message}"

    def __str__(self) -> str:
        lines = []
        for layer in self.layers_run:
            found = self.layer(layer)
            status = worst(found) or "skip"
            lines.append(f"[{STATUS_MARK[status]}] {layer} ({self.timings.get(layer, 0.0):.2f}s)")
            for f in found:
                lines.append(f"    {STATUS_MARK[f.status]} {f.status:<4} {f.check}: {f.message}")
        for layer in self.layers_not_run:
            lines.append(f"[ ] {layer}: not run (an earlier layer failed)")
        for line in self.extras.get("notes", []):
            lines.append(line)
        lines.append(self.summary())
        return "\n".join(lines)


def _explains(check: str) -> tuple[str, ...]:
    declared = REGISTRY.get(check)
    return declared.explains if declared else ()


__getattr__ = deprecated_names("labcoat.doctor.result", {"Report": ("Diagnosis", Diagnosis)})
