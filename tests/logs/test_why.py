"""``labcoat logs --why`` on real multi-process runs recorded by ``labcoat run``: each planted
fault names the right rank, step and line first, and its healthy twin names nothing."""

from __future__ import annotations

import pytest

from tests.logs.conftest import why

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


def _status(report, check):
    return next(f.status for f in report.findings if f.check == check)


@pytest.mark.check("logs.first_error", healthy=True)
@pytest.mark.check("logs.silent_rank", healthy=True)
@pytest.mark.check("logs.rate_change", healthy=True)
def test_a_healthy_run_with_chatter_and_warnings_names_nothing(job):
    ledger, done = job("healthy")
    assert done.returncode == 0, done.stderr
    report = why(ledger)
    assert report.first is None and report.ok
    assert report.consequences == [] and report.silent_ranks == [] and report.changes == []
    assert report.ranks == [0, 1] and report.lines >= 40
    for check in ("logs.first_error", "logs.silent_rank", "logs.rate_change"):
        assert _status(report, check) == "pass"
    assert _status(report, "logs.new_template") == "skip"  # no earlier run to compare with


@pytest.mark.check("logs.first_error", planted=True)
def test_a_rank_that_raises_is_named_first_and_the_launcher_follows(job):
    ledger, done = job("raise")
    assert done.returncode == 1
    assert "labcoat: logs: rank 1 step 8: RuntimeError" in done.stderr
    report = why(ledger)
    first = report.first
    assert (first["rank"], first["step"]) == (1, 8)
    assert first["line"] == "RuntimeError: planted failure in the loss at step 8"
    assert first["template"] == "RuntimeError: planted failure in the loss at step <*>"
    assert first["node"]
    assert [c["rank"] for c in report.consequences] == [None]  # the launcher's report
    assert "after rank 1's failure" in report.consequences[0]["because"]
    assert _status(report, "logs.first_error") == "fail" and not report.ok


@pytest.mark.check("logs.first_error", planted=True)
def test_a_nan_on_one_rank_is_named_at_its_step(job):
    ledger, done = job("nan")
    assert done.returncode == 0  # nothing crashed: only the log says so
    first = why(ledger).first
    assert (first["rank"], first["step"], first["line"]) == (1, 8, "step 8 loss nan")


@pytest.mark.check("logs.first_error", planted=True)
def test_an_out_of_memory_on_one_rank_is_named(job):
    ledger, _ = job("oom")
    first = why(ledger).first
    assert (first["rank"], first["step"]) == (1, 8)
    assert "can't allocate memory" in first["line"] and "out-of-memory" in first["why"]


@pytest.mark.check("logs.silent_rank", planted=True)
def test_a_rank_that_hangs_is_the_cause_and_the_timeouts_are_consequences(job):
    ledger, done = job("hang", PROC_JOB_TIMEOUT="4")
    assert done.returncode == 1
    report = why(ledger, min_silence_s=1.0)
    first = report.first
    assert (first["rank"], first["step"]) == (1, 8)  # it hung in step 8, after its step 7 line
    assert first["line"] == "step 7 loss 0.8609" and "silent" in first["why"]
    assert [s["rank"] for s in report.silent_ranks] == [1]
    timeouts = [c for c in report.consequences if c["rank"] == 0]
    assert timeouts and timeouts[0]["line"].startswith("TimeoutError: Timed out")
    assert "went away" in timeouts[0]["because"]
    assert _status(report, "logs.silent_rank") == "fail"


@pytest.mark.check("logs.rate_change", planted=True)
def test_a_rank_that_slows_is_named_at_the_step_it_slowed(job):
    ledger, done = job("slow")
    assert done.returncode == 0
    report = why(ledger)
    assert [(c["rank"], c["step"]) for c in report.changes] == [(1, 8)]
    assert report.first["rank"] == 1 and report.first["step"] == 8
    assert _status(report, "logs.rate_change") == "warn" and not report.ok


@pytest.mark.check("logs.new_template", planted=True)
def test_a_warning_no_earlier_healthy_run_wrote_is_new(job):
    ledger, _ = job("healthy")
    _, done = job("newwarn", ledger=ledger)
    report = why(ledger)
    assert report.first is None  # a new warning is worth a look, not a failure
    finding = next(f for f in report.findings if f.check == "logs.new_template")
    assert finding.status == "warn"
    assert finding.evidence["new"] == ["WARNING train: gradient accumulation buffer resized to <*>"]


@pytest.mark.check("logs.new_template", healthy=True)
def test_a_rerun_of_a_healthy_run_writes_nothing_new(job):
    ledger, _ = job("healthy")
    job("healthy", ledger=ledger)
    report = why(ledger)
    assert _status(report, "logs.new_template") == "pass" and report.first is None
