"""What a watched run's event files say, read back as one result: ``labcoat watch report``.

:func:`report` merges the alerts every rank wrote (one desync is one alert, listing the ranks
that saw it), keeps the other events (evaluations), counts the evaluations' per-item results
and summarises the sampled series; the result is plain data with ``to_dict()`` and a rich view.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Iterable

from labcoat.errors import InputError
from labcoat.findings import Finding
from labcoat.result import Result
from labcoat.watch.alerts import Alert, Findings, merge_alerts
from labcoat.watch.events import ITEM_KIND, SERIES_KIND, read_events

SERIES_FIELDS = ("step", "rank", "loss", "grad_norm", "update_ratio")


@dataclass
class WatchReport(Result):
    """The alerts, other events, ranks and series summary of a run's event files."""

    KIND = "watch.report"

    engine = "watch"
    view = "labcoat.watch.view:report_view"
    section = "labcoat.report.sections.watch:result_section"
    title = "Watch"

    alerts: list[Alert]
    other_events: list[dict[str, Any]]
    events: int
    ranks: list[int]
    series: dict[str, Any] = field(default_factory=lambda: {"records": 0})
    #: the events as read, for the HTML page's curves; not part of :meth:`to_dict`
    raw: list[dict[str, Any]] = field(default_factory=list, repr=False)
    sources: list[str] = field(default_factory=list)
    #: per-item eval results the files hold (``eval_item`` events: counted, not listed)
    eval_items: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "alerts": [a.to_event() for a in self.alerts],
            "other_events": self.other_events,
            "events": self.events,
            "ranks": self.ranks,
            "series": self.series,
            "eval_items": self.eval_items,
        }

    def to_html(self, path: str | os.PathLike[str] | None = None, **options: Any) -> str:
        """The curves, with every alert marked, as a self-contained HTML page (written to
        ``path`` when given)."""
        options.setdefault("title", "labcoat watch")
        options.setdefault("subtitle", ", ".join(self.sources))
        return super().to_html(path, **options)

    @property
    def findings(self) -> list[Finding]:
        """One finding per merged alert; the message names the ranks that saw it."""
        out = Findings()
        for alert in self.alerts:
            finding = alert.to_finding()
            if len(alert.ranks) > 1:
                finding.message += f" (seen by ranks {', '.join(map(str, alert.ranks))})"
            out.append(finding)
        return out


def report(paths: Iterable[str | os.PathLike[str]]) -> WatchReport:
    """Read a run's JSON-lines event files (one per rank) into a :class:`WatchReport`."""
    paths = list(paths)
    if not paths:
        raise InputError(
            "`labcoat watch report` needs at least one events file; pass the files written by "
            "labcoat.watch(..., events=PATH), e.g. runs/42/events*.jsonl."
        )
    events = list(read_events(paths))
    alerts = merge_alerts(Alert.from_event(e) for e in events if Alert.is_alert_event(e))
    series = [e for e in events if e["kind"] == SERIES_KIND]
    items = sum(e["kind"] == ITEM_KIND for e in events)
    others = [
        e
        for e in events
        if not Alert.is_alert_event(e) and e["kind"] not in (SERIES_KIND, ITEM_KIND)
    ]
    ranks = sorted({e["rank"] for e in events if e.get("rank") is not None})
    return WatchReport(
        alerts,
        others,
        len(events),
        ranks,
        _series_summary(series),
        events,
        list(map(str, paths)),
        items,
    )


def _series_summary(series: list[dict]) -> dict:
    """How much of the sampled series the files hold, and its last values (rank 0's)."""
    if not series:
        return {"records": 0}
    last = max(series, key=lambda e: (e["step"], -(e.get("rank") or 0)))
    return {
        "records": len(series),
        "first_step": min(e["step"] for e in series),
        "last_step": last["step"],
        "last": {k: last.get(k) for k in SERIES_FIELDS},
    }
