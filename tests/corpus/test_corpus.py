"""Every corpus case once, then the rates: the false-alarm rate must be 0."""

from __future__ import annotations

import pytest

from tests.corpus import bugs as _bugs  # noqa: F401 - registers the bug cases
from tests.corpus import healthy as _healthy  # noqa: F401 - registers the healthy cases
from tests.corpus.registry import BUGS, HEALTHY, CorpusCase, Verdict

_RESULTS: dict[str, Verdict] = {}


def _verdict(case: CorpusCase) -> Verdict:
    if case.name not in _RESULTS:
        _RESULTS[case.name] = case.run()
    return _RESULTS[case.name]


@pytest.mark.parametrize("name", sorted(HEALTHY))
def test_healthy_setup_is_not_flagged(name):
    verdict = _verdict(HEALTHY[name])
    assert not verdict.broken, f"false alarm at {verdict.where}: {verdict.detail}"


def _bug_params():
    """Known misses run as strict xfails: catching one fails the test until known_miss goes."""

    def param(name):
        reason = BUGS[name].known_miss
        return (
            pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=reason))
            if reason
            else name
        )

    return [param(n) for n in sorted(BUGS)]


@pytest.mark.parametrize("name", _bug_params())
def test_real_bug_is_caught_at_its_layer(name):
    case = BUGS[name]
    verdict = _verdict(case)
    assert verdict.broken, f"missed ({case.source})"
    assert verdict.where == case.expect, (
        f"caught at {verdict.where}, expected {case.expect}: {verdict.detail}"
    )


def test_corpus_rates(record_property):
    """Reports the false-alarm and detection rates over the whole corpus (tests/conftest.py
    prints them in pytest's summary, also when the tests run in several processes)."""
    assert len(HEALTHY) >= 40 and len(BUGS) >= 40, (len(HEALTHY), len(BUGS))
    alarms = [n for n, c in HEALTHY.items() if _verdict(c).broken]
    caught = [n for n, c in BUGS.items() if _verdict(c).broken and _verdict(c).where == c.expect]
    record_property(
        "summary",
        f"corpus: false alarms {len(alarms)}/{len(HEALTHY)} healthy setups; "
        f"detected {len(caught)}/{len(BUGS)} real bugs at their layer",
    )
    assert not alarms, alarms
