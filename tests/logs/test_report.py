"""The per-rank timeline as a person sees it, in headless Chromium: on the ledger's report page
(``labcoat report``, from what ``labcoat run`` stored) and on a live report's page."""

from __future__ import annotations

import pytest

from labcoat.ledger import Ledger
from labcoat.report.build import from_ledger
from tests.logs.conftest import why

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


def test_the_ledger_report_draws_each_runs_timeline_with_its_first_line_in_red(
    tmp_path,
    job,
    open_report,  # noqa: F811
):
    ledger, healthy = job("healthy")
    _, failed = job("raise", ledger=ledger)
    assert (healthy.returncode, failed.returncode) == (0, 1)
    with Ledger(ledger, create=False) as book:
        path = from_ledger(book).save(tmp_path / "report.html")
    shown = open_report(path)
    page = shown.page
    ok, bad = page.locator("#logs-run-1"), page.locator("#logs-run-2")
    assert ok.locator('[data-chart="logs-timeline"] svg').is_visible()
    assert ok.locator(".rank").count() == 2  # a row per rank
    assert ok.locator(".mark").count() == 0  # the healthy run: nothing marked
    timeline = bad.locator('[data-chart="logs-timeline"]')
    assert timeline.is_visible() and timeline.bounding_box()["height"] > 40
    first = timeline.locator('[data-rank="rank 1"] .mark.first')
    assert first.count() == 1 and first.is_visible()
    assert "planted failure in the loss at step 8" in first.locator("title").text_content()
    assert timeline.locator('[data-rank="launcher"] .mark.later').count() == 1
    assert timeline.locator('[data-rank="rank 0"] .mark').count() == 0
    assert not shown.requests and not shown.console_errors


def test_a_hung_rank_is_drawn_silent_on_the_live_page(tmp_path, job, open_report):  # noqa: F811
    ledger, _ = job("hang")
    path = tmp_path / "why.html"
    why(ledger).to_html(path)
    shown = open_report(path)
    silent = shown.page.locator('[data-chart="logs-timeline"] .mark.silent')
    assert silent.count() == 1 and silent.is_visible()
    assert "went silent" in silent.locator("title").text_content()
    assert not shown.requests and not shown.console_errors
