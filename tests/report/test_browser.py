"""Reports as a person sees them, in headless Chromium: charts drawn, nothing fetched, no console
errors, the failing layer in view without scrolling, readable at phone width and in dark mode."""

from __future__ import annotations

import pytest

from labcoat.report import Page
from labcoat.report.sections.doctor import doctor_section
from labcoat.report.sections.watch import watch_section
from tests.report import samples


def _write(tmp_path, name, *sections):
    page = Page(name)
    for s in sections:
        page.add(s)
    return page.save(tmp_path / f"{name}.html")


def test_failing_layer_is_visible_without_scrolling(tmp_path, open_report):
    path = _write(tmp_path, "doctor-broken", doctor_section(samples.ladder("update")))
    shown = open_report(path, width=1100, height=800)
    failed = shown.page.locator("details.layer.failed")
    assert failed.is_visible()
    box = failed.bounding_box()
    assert box["y"] + 40 < 800, box  # its summary line is on the first screen
    assert shown.page.locator("details.layer.failed .finding[data-status=fail]").first.is_visible()
    assert not shown.requests and not shown.console_errors


def test_doctor_charts_draw_their_marks(tmp_path, open_report):
    path = _write(tmp_path, "doctor-healthy", doctor_section(samples.ladder()))
    shown = open_report(path)
    page = shown.page
    curve = page.locator('[data-chart="overfit-curve"] svg')
    assert curve.is_visible() and curve.bounding_box()["height"] > 100
    assert page.locator('[data-chart="overfit-curve"] g#series-0 path').count() == 1
    # one dot per shuffled copy, the real score and chance as lines
    assert page.locator('[data-chart="shuffle-null"] g#values use').count() == 19
    assert page.locator('[data-chart="shuffle-null"] g[id^="mark-"]').count() == 2
    assert not shown.requests and not shown.console_errors


def test_watch_page_marks_every_alert_and_stays_light(tmp_path, open_report):
    events = samples.watch_events(steps=20_000, alerts_at=(1200, 3400, 15000))
    path = _write(tmp_path, "watch", watch_section(events))
    assert path.stat().st_size < 5 * 1024 * 1024
    shown = open_report(path)
    loss = shown.page.locator('[data-chart="watch-loss"]')
    assert loss.locator('g[id^="alert-"]').count() == 3
    assert shown.page.locator(".finding[data-check=spike]").count() == 3
    assert not shown.requests and not shown.console_errors


@pytest.mark.parametrize("dark", [False, True])
def test_phone_width_has_no_sideways_scroll_and_dark_mode_changes_colours(
    tmp_path, open_report, dark
):
    path = _write(
        tmp_path,
        "phone",
        doctor_section(samples.ladder("update")),
        watch_section(samples.watch_events(500)),
    )
    shown = open_report(path, width=390, height=844, dark=dark)
    page = shown.page
    assert page.evaluate("document.documentElement.scrollWidth") <= 390 + 1
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == ("rgb(13, 17, 23)" if dark else "rgb(255, 255, 255)")
    # chart text follows the page's colour (currentColor), so it stays readable in both modes
    ink = page.evaluate("getComputedStyle(document.querySelector('.chart')).color")
    assert ink == ("rgb(230, 237, 243)" if dark else "rgb(27, 31, 36)")


def test_scale_page_draws_the_band_and_the_held_out_runs(tmp_path, open_report):
    from labcoat.report.sections.scale import scale_section

    fit, held = samples.learning_curve()
    path = _write(
        tmp_path, "scale", scale_section(fit), scale_section(held, title="Backtest", id="bt")
    )
    shown = open_report(path)
    page = shown.page
    first = page.locator('#scale [data-chart="scale-fit"]')
    assert (
        first.locator("g#band path").count() == 1 and first.locator("g#points-0 use").count() == 12
    )
    backtest = page.locator('#bt [data-chart="scale-fit"]')
    held_marks = (
        backtest.locator("g#points-1 use").count() + backtest.locator("g#points-2 use").count()
    )
    assert held_marks == 4 and backtest.locator("g#points-0 use").count() == 8
    assert "MAPE" in page.locator("#bt .verdict").inner_text()
    assert not shown.requests and not shown.console_errors


def test_audit_page_shows_flagged_examples_as_thumbnails(tmp_path, open_report):
    from labcoat.report.sections.audit import audit_section

    X, y, issues, a, b, dups = samples.digits_audit()
    path = _write(
        tmp_path,
        "audit",
        audit_section(issues, examples=X, labels=y),
        audit_section(dups, examples=a, other=b, title="Duplicates", id="dups"),
    )
    shown = open_report(path)
    page = shown.page
    rows = page.locator('table[data-table="labels"] tr').count() - 1
    assert rows == min(issues.count, 30) and issues.count >= 6
    thumbs = page.locator('table[data-table="labels"] img.thumb')
    assert thumbs.count() == rows
    assert page.evaluate(
        "[...document.querySelectorAll('img.thumb')].every(i => i.naturalWidth == 8)"
    )
    assert page.locator('table[data-table="duplicates"] img.thumb').count() == 2 * min(
        len(dups.pairs), 30
    )
    assert not shown.requests and not shown.console_errors


def test_stats_pages_draw_intervals_ranks_and_power(tmp_path, open_report):
    import numpy as np

    from labcoat import stats
    from labcoat.report.sections.stats import stats_section

    rng = np.random.default_rng(0)
    scores = {
        m: (rng.random(300) < p).astype(float) for m, p in (("a", 0.72), ("b", 0.70), ("c", 0.5))
    }
    board = stats.leaderboard(scores, n_resamples=300)
    compare = stats.compare(scores["a"], scores["c"])
    gate = stats.gate(scores["b"], scores["a"], margin=0.02)
    path = _write(
        tmp_path,
        "stats",
        stats_section(board, title="Leaderboard", id="lb"),
        stats_section(compare, title="a vs c", name="avc", id="cmp"),
        stats_section(gate, title="Gate", name="gate", id="gate"),
    )
    shown = open_report(path)
    page = shown.page
    assert page.locator('#lb [data-chart] g[id^="interval-"]').count() == 3
    assert page.locator('#lb table[data-table="leaderboard"] tr').count() == 4
    assert page.locator('#cmp [data-chart="power-avc"] g#series-0 path').count() == 1
    assert page.locator('#cmp [data-chart="stats-avc"] g#reference').count() == 1
    assert page.locator("#gate .verdict").get_attribute("data-decision") == gate.decision
    assert not shown.requests and not shown.console_errors
