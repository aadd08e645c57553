"""The issue's promise, end to end: a user runs the doctor, a watched training loop and a stats
comparison with one ledger, then ``labcoat report``, and the page shows all three."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

import labcoat
from labcoat import stats
from tests.doctor.helpers import digits, mlp


def test_doctor_watch_and_stats_all_reach_the_report(cli, tmp_path):
    path = tmp_path / "ledger.db"
    x, y = digits()
    model = mlp()
    with labcoat.Ledger(path) as ledger:
        labcoat.diagnose(
            model,
            (x, y),
            nn.CrossEntropyLoss(),
            torch.optim.Adam(model.parameters()),
            layers=("data", "model", "update"),
            ledger=ledger,
            progress=False,
        )
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        with labcoat.watch(model, optimizer, every=1, ledger=ledger) as w:
            for step in range(40):
                loss = nn.functional.cross_entropy(model(x[:64]), y[:64])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                w.observe(step=step, loss=loss)
        rng = np.random.default_rng(0)
        stats.compare((rng.random(200) < 0.7) * 1.0, (rng.random(200) < 0.6) * 1.0).record(
            ledger, name="A vs B"
        )
        runs = ledger.runs()
        assert [r.name for r in runs] == ["doctor", "watch", "stats"]
        assert runs[1].status == "ok" and len(ledger.events(run=runs[1].id, kind="series")) == 40
    out = tmp_path / "report.html"
    shown = cli("report", "--ledger", path, "-o", out)
    assert shown.code == 0, shown.err
    html = out.read_text()
    assert 'id="doctor-run-1"' in html and 'id="watch-run-2"' in html and 'id="stats-run-3"' in html
    assert 'data-chart="watch-loss"' in html and 'data-chart="stats-stats-run-3-0"' in html
