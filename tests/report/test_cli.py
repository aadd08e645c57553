"""``labcoat report``: a page from everything a ledger holds, and one-line errors for bad input."""

from __future__ import annotations

import json

from labcoat.findings import Finding
from tests.report import samples


def test_report_shows_each_recorded_run_and_the_notebook(cli, tmp_path, monkeypatch):
    from labcoat.ledger import Ledger

    monkeypatch.chdir(tmp_path)
    path = tmp_path / "ledger.db"
    with Ledger(path) as ledger:
        ledger.record_findings(samples.ladder("update").findings, source="doctor")
        ledger.record_findings(
            [Finding("spike", "watch", "warn", "loss spiked", step=12)], source="watch"
        )
        ledger.hypothesis("the warm-up is too short", predict="a longer warm-up removes the spike")
    out = tmp_path / "r.html"
    result = cli("report", "--ledger", path, "-o", out, "--json")
    assert result.code == 0, result.err
    summary = json.loads(result.out)
    assert summary["path"] == str(out) and summary["bytes"] == out.stat().st_size
    assert [s.split("-run-")[0] for s in summary["sections"]] == ["doctor", "watch", "ledger"]
    html = out.read_text()
    assert 'data-layer="update" open' in html and "the warm-up is too short" in html
    only = cli("report", "--ledger", path, "--run", "1", "-o", out, "--json")
    assert [s.split("-run-")[0] for s in json.loads(only.out)["sections"]] == ["doctor", "ledger"]


def test_report_bad_input_is_one_line_exit_2(cli, tmp_path):
    missing = cli("report", "--ledger", tmp_path / "none.db", "-o", tmp_path / "r.html")
    assert (
        missing.code == 2
        and "no ledger at" in missing.err
        and len(missing.err.strip().splitlines()) == 1
    )
    from labcoat.ledger import Ledger

    with Ledger(tmp_path / "l.db") as ledger:
        ledger.hypothesis("h", predict=None)
    for args, words in (
        (("--run", "7"), "no run 7"),
        (("--since", "yesterday"), "--since"),
        (("-o", tmp_path / "no" / "r.html"), "does not exist"),
    ):
        bad = cli("report", "--ledger", tmp_path / "l.db", "-o", tmp_path / "r.html", *args)
        assert bad.code == 2 and words in bad.err, bad.err


def test_doctor_and_watch_commands_write_html(cli, tmp_path):
    import json as _json

    events = tmp_path / "events.jsonl"
    events.write_text(
        "".join(_json.dumps(e) + "\n" for e in samples.watch_events(300, alerts_at=(40,)))
    )
    page = tmp_path / "watch.html"
    done = cli("watch", "report", events, "--html", page, "--json")
    assert done.code == 0, done.err
    assert page.read_text().count('g id="alert-0"') == 3  # loss, gradient norm, learning rate
    doctor_page = tmp_path / "doctor.html"
    run = cli(
        "doctor",
        "examples/digits_bugs.py:head_not_in_optimizer",
        "--no-ledger",
        "--json",
        "--html",
        doctor_page,
    )
    assert run.code == 1, run.err
    assert 'data-layer="update" open' in doctor_page.read_text()
