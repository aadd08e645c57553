"""Progress bars while the controls train: on for a terminal, off otherwise or when asked."""

from __future__ import annotations

import io

from rich.console import Console
from torch import nn

import labcoat
from labcoat.doctor.progress import ControlProgress
from tests.doctor_controls import setups as s


def test_bars_follow_the_terminal_unless_told():
    assert ControlProgress.resolve(None).enabled is False  # pytest captures stdout: not a TTY
    assert ControlProgress.resolve(True).enabled is True
    assert ControlProgress.resolve(False).enabled is False


def test_an_enabled_bar_draws_its_description_and_count():
    out = io.StringIO()
    progress = ControlProgress(True, Console(file=out, force_terminal=True, width=100))
    with progress.task("shuffle: training 3 copies", total=3) as advance:
        for _ in range(3):
            advance()
    assert "shuffle: training 3 copies" in out.getvalue() and "3/3" in out.getvalue()


def test_a_disabled_bar_draws_nothing():
    out = io.StringIO()
    with ControlProgress(False, Console(file=out, force_terminal=True)).task(
        "overfit", total=2
    ) as advance:
        advance()
    assert out.getvalue() == ""


def test_diagnose_shows_bars_for_each_control_only_when_asked(monkeypatch):
    opened: list[str] = []
    original = ControlProgress.task

    def record(self, description, total):
        if self.enabled:
            opened.append(description)
        return original(self, description, total)

    monkeypatch.setattr(ControlProgress, "task", record)
    for progress in (None, True):  # None: stdout is not a terminal under pytest, so no bars
        model = s.mlp()
        labcoat.diagnose(
            model,
            s.digits(),
            nn.CrossEntropyLoss(),
            s.adam(model),
            layers=("overfit", "shuffle"),
            progress=progress,
            ledger=False,
        )
    assert opened == ["overfit: memorising 20 examples", "shuffle: training 20 copies"]
