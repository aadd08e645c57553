"""Every result draws itself (``to_html``, Jupyter's ``_repr_html_``), stats commands write
``--html`` and keep their results in the ledger, and ``labcoat report`` then shows them."""

from __future__ import annotations

import json

import numpy as np
import pytest

from labcoat import stats


def _scores(seed=0, n=120):
    rng = np.random.default_rng(seed)
    return (rng.random(n) < 0.7).astype(float), (rng.random(n) < 0.55).astype(float)


@pytest.mark.parametrize(
    "make",
    [
        lambda: stats.mean(_scores()[0]),
        lambda: stats.compare(*_scores()),
        lambda: stats.gate(*_scores(), margin=0.02),
        lambda: stats.leaderboard(dict(zip("ab", _scores())), n_resamples=100),
    ],
    ids=["mean", "compare", "gate", "leaderboard"],
)
def test_stats_results_draw_themselves(make, tmp_path):
    result = make()
    html = result.to_html(tmp_path / "r.html")
    assert (tmp_path / "r.html").read_text() == html
    assert result._repr_html_().count("<svg") == html.count("<svg") >= 1


def test_an_object_with_no_section_is_refused_by_name():
    from labcoat.report.html import to_html

    with pytest.raises(TypeError, match="no report section draws a dict"):
        to_html({"mean": 1})


def _csv(path, ids, scores):
    path.write_text("id,correct\n" + "".join(f"{i},{s:g}\n" for i, s in zip(ids, scores)))
    return path


def test_stats_compare_writes_html_records_it_and_the_report_shows_it(cli, tmp_path):
    a, b = _scores(1)
    ids = [f"q{i}" for i in range(len(a))]
    fa, fb = _csv(tmp_path / "new.csv", ids, a), _csv(tmp_path / "old.csv", ids, b)
    ledger = tmp_path / "l.db"
    page = tmp_path / "cmp.html"
    done = cli(
        "stats",
        "compare",
        fa,
        fb,
        "--on",
        "id",
        "--score",
        "correct",
        "--html",
        page,
        "--ledger",
        ledger,
        "--json",
    )
    assert done.code == 0, done.err
    assert json.loads(done.out)["diff"] == pytest.approx(a.mean() - b.mean())
    assert 'data-chart="stats-new vs old"' in page.read_text()
    gate = cli(
        "stats",
        "gate",
        fa,
        fb,
        "--on",
        "id",
        "--score",
        "correct",
        "--margin",
        "0.05",
        "--ledger",
        ledger,
        "--json",
    )
    assert gate.code in (0, 1, 4), gate.err
    from labcoat.ledger import Ledger

    with Ledger(ledger) as notebook:
        kept = notebook.findings(source="stats")
    assert [f.check for f in kept] == ["stats.compare", "stats.gate"]
    assert kept[0].message.startswith("new vs old: difference")
    out = tmp_path / "report.html"
    shown = cli("report", "--ledger", ledger, "-o", out, "--json")
    assert shown.code == 0, shown.err
    html = out.read_text()
    assert html.count('data-chart="stats-') == 1 and html.count('data-chart="gate-') == 1
    nothing = cli(
        "stats", "compare", fa, fb, "--on", "id", "--score", "correct", "--no-ledger", "--json"
    )
    assert nothing.code == 0
    with Ledger(ledger) as notebook:
        assert len(notebook.findings(source="stats")) == 2
