"""The corpus contract: healthy setups that must pass clean and real bugs that must be caught.

A case is a name, a ``run`` that returns a :class:`Verdict`, and what it expects. Healthy cases
expect ``broken=False`` from every layer (controls included); bug cases name the layer (doctor)
or alert kind (watch) where the verdict must land, and cite the public report they reduce.
``test_corpus.py`` runs every case once and prints the false-alarm and detection rates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Literal


@dataclass(frozen=True)
class Verdict:
    """What an engine concluded about one setup."""

    broken: bool
    #: doctor: the failing layer; watch: the first alert kind; None when healthy
    where: str | None = None
    #: the failing check id (doctor) or alert kinds (watch), for the assertion message
    detail: str = ""
    #: doctor: the checks that warned; a healthy setup should give none (a warning is something
    #: a user must act on, and ``--strict`` fails on it)
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class CorpusCase:
    name: str
    kind: Literal["healthy", "bug"]
    run: Callable[[], Verdict]
    #: bugs: the layer (doctor) or alert kind (watch) the verdict must name
    expect: str | None = None
    #: bugs: the public report this case is reduced from (URL); healthy: what people train like it
    source: str = ""
    engine: Literal["doctor", "watch"] = "doctor"
    tags: tuple[str, ...] = field(default_factory=tuple)
    #: bugs not caught yet: why, honestly; the test is a strict xfail and counts as missed
    known_miss: str = ""


HEALTHY: dict[str, CorpusCase] = {}
BUGS: dict[str, CorpusCase] = {}


def healthy(name: str, *, source: str = "", engine: str = "doctor", tags: tuple[str, ...] = ()):
    """Register ``fn() -> Verdict`` as a healthy setup that must come out clean."""

    def register(fn: Callable[[], Verdict]) -> Callable[[], Verdict]:
        if name in HEALTHY:
            raise ValueError(f"healthy case {name!r} is registered twice")
        HEALTHY[name] = CorpusCase(name, "healthy", fn, None, source, engine, tags)
        return fn

    return register


def bug(
    name: str,
    *,
    expect: str,
    source: str,
    engine: str = "doctor",
    tags: tuple[str, ...] = (),
    known_miss: str = "",
):
    """Register ``fn() -> Verdict`` as a reduced real bug that must be caught at ``expect``."""
    if not source:
        raise ValueError(f"bug case {name!r} needs the public report it reduces (source=URL)")

    def register(fn: Callable[[], Verdict]) -> Callable[[], Verdict]:
        if name in BUGS:
            raise ValueError(f"bug case {name!r} is registered twice")
        BUGS[name] = CorpusCase(name, "bug", fn, expect, source, engine, tags, known_miss)
        return fn

    return register


def doctor_verdict(model, data, loss_fn, optimizer, *, run_all: bool = True, **kwargs) -> Verdict:
    """Run the ladder with no ledger and no progress bars: every layer (``run_all``, for healthy
    setups), or up to the first failing layer (bugs, which stop where they are caught)."""
    import labcoat

    report = labcoat.diagnose(
        model, data, loss_fn, optimizer, ledger=False, progress=False, run_all=run_all, **kwargs
    )
    failing = [f.check for f in report.findings if f.failed]
    if report.selftest_failed:
        failing.append("selftest")
    warned = tuple(f"{f.check}: {f.message}" for f in report.findings if f.status == "warn")
    return Verdict(not report.ok, report.failed_layer, ", ".join(failing), warned)
