"""Every corpus case once, then the rates: the false-alarm rate must be 0.

The cases are independent, so under xdist they spread over the workers one by one
(tests/conftest.py's SPREAD_ACROSS_WORKERS; every other file stays on one worker). Each case
files its outcome under the ``corpus`` property, and tests/conftest.py adds the outcomes up in
the main process into the false-alarm and detection rates it prints in pytest's summary.
"""

from __future__ import annotations

import pytest

from tests.corpus import bugs as _bugs  # noqa: F401 - registers the bug cases
from tests.corpus import healthy as _healthy  # noqa: F401 - registers the healthy cases
from tests.corpus import sequences as _sequences  # noqa: F401 - issue 35's bugs and twins
from tests.corpus.registry import BUGS, HEALTHY, CorpusCase, Verdict


def _verdict(case: CorpusCase, record_property) -> Verdict:
    """Run the case and file its outcome (before any assertion, so failures count too)."""
    try:
        verdict = case.run()
    except BaseException:
        record_property("corpus", f"{case.kind} raised")
        raise
    if case.kind == "healthy":
        outcome = "alarm" if verdict.broken else "warned" if verdict.warnings else "clean"
        for warning in verdict.warnings:
            record_property("corpus_warning", f"{case.name}: {warning}")
    else:
        outcome = "caught" if verdict.broken and verdict.where == case.expect else "missed"
    record_property("corpus", f"{case.kind} {outcome}")
    return verdict


@pytest.mark.slow  # a full ladder per case, 90 of them: make test-all
@pytest.mark.parametrize("name", sorted(HEALTHY))
def test_healthy_setup_is_not_flagged(name, record_property):
    verdict = _verdict(HEALTHY[name], record_property)
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


@pytest.mark.slow  # a ladder per case, 59 of them: make test-all
@pytest.mark.parametrize("name", _bug_params())
def test_real_bug_is_caught_at_its_layer(name, record_property):
    case = BUGS[name]
    verdict = _verdict(case, record_property)
    assert verdict.broken, f"missed ({case.source})"
    assert verdict.where == case.expect, (
        f"caught at {verdict.where}, expected {case.expect}: {verdict.detail}"
    )


def test_corpus_is_large_enough_for_its_rates():
    """The rates are worth printing only over enough cases of each kind."""
    assert len(HEALTHY) >= 40 and len(BUGS) >= 40, (len(HEALTHY), len(BUGS))


def test_rates_line_counts_every_outcome_filed_by_the_cases():
    from collections import Counter

    from tests.conftest import corpus_summary

    assert corpus_summary(Counter()) is None
    filed = Counter({"healthy clean": 50, "healthy alarm": 2, "bug caught": 47, "bug missed": 2})
    assert corpus_summary(filed) == (
        "corpus: false alarms 2/52 healthy setups, warnings on 0/52; detected 47/49 real bugs "
        "at their layer"
    )
    filed["healthy warned"] += 1
    assert "false alarms 2/53 healthy setups, warnings on 1/53;" in corpus_summary(filed)
    filed["bug raised"] += 1
    assert corpus_summary(filed).endswith("detected 47/50 real bugs at their layer; 1 cases raised")
