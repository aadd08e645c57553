"""Pages as files: self-contained, the right sections and marks, spikes kept when thinned."""

from __future__ import annotations

import re

import numpy as np
import pytest

from labcoat.report import Page
from labcoat.report.downsample import minmax
from labcoat.report.sections.doctor import doctor_section
from labcoat.report.sections.watch import watch_section
from tests.report import samples

EXTERNAL = re.compile(
    r"""(?:src|href)\s*=\s*["'](?!#|data:)|url\(\s*["']?(?!#|data:)|@import|<script""", re.I
)


def test_a_page_fetches_nothing_and_declares_so():
    html = (
        Page("t")
        .add(doctor_section(samples.ladder()))
        .add(watch_section(samples.watch_events()))
        .to_html()
    )
    assert not EXTERNAL.search(html), EXTERNAL.search(html).group(0)
    assert "default-src 'none'" in html  # the browser itself refuses any fetch
    assert html.count("<svg") >= 4  # overfit curve, shuffle strip, loss and gradient norm


def test_failing_ladder_opens_its_failing_layer_and_names_the_verdict():
    html = doctor_section(samples.ladder("update")).to_html()
    assert re.search(r'<details class="layer failed" data-layer="update" open>', html)
    assert 'data-verdict="broken"' in html and "update.optimizer.coverage" in html
    assert "overfit: not run" in html
    healthy = doctor_section(samples.ladder()).to_html()
    assert "layer failed" not in healthy and 'data-verdict="healthy"' in healthy


def test_watch_marks_one_line_per_alert():
    html = watch_section(samples.watch_events(alerts_at=(100, 2000, 4000))).to_html()
    loss_chart = html[
        html.index('data-chart="watch-loss"') : html.index('data-chart="watch-grad_norm"')
    ]
    assert len(re.findall(r'<g id="alert-\d+"', loss_chart)) == 3


def test_minmax_thinning_keeps_a_one_step_spike():
    x = np.arange(100_000, dtype=float)
    y = np.ones_like(x)
    y[73_421] = 50.0
    tx, ty = minmax(x, y, buckets=300)
    assert len(tx) <= 600 and ty.max() == 50.0 and 73_421 in tx
    assert np.all(np.diff(tx) > 0)  # still in step order


def test_minmax_leaves_short_series_alone_and_drops_non_finite():
    tx, ty = minmax([0, 1, 2], [1.0, float("nan"), 3.0])
    assert list(tx) == [0, 2] and list(ty) == [1.0, 3.0]
    with pytest.raises(ValueError):
        minmax([0, 1], [1.0])


def test_page_renders_inline_in_jupyter_and_refuses_a_missing_folder(tmp_path):
    from labcoat.errors import InputError

    page = Page("t").add(doctor_section(samples.ladder()))
    assert page._repr_html_().startswith("<!DOCTYPE html>")
    with pytest.raises(InputError, match="does not exist"):
        page.save(tmp_path / "nope" / "r.html")


def test_an_evaluation_shows_its_interval_narrowing_until_it_stopped():
    import torch
    from torch import nn

    from labcoat.watch.evaluation import evaluate

    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    batches = [(torch.randn(50, 4), torch.randint(2, (50,))) for _ in range(40)]
    result = evaluate(
        model, batches, lambda b: (model(b[0]).argmax(1) == b[1]).float(), width=0.3, step=7
    )
    lows = [p[2] for p in result.path]
    assert result.stopped_early and len(result.path) == result.batches >= 2
    assert lows[-1] > lows[0]  # the interval narrowed from below
    html = watch_section([result.to_event(rank=0)]).to_html()
    assert 'data-chart="watch-eval-path-0"' in html and "stopped early" in html
