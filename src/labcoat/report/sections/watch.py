"""A watched run: its sampled curves per rank with every alert marked at its step, and its evals.

Reads the events a run wrote (``labcoat.watch(..., events=PATH)`` or the ledger's events):
alerts are events with a severity; every other numeric event is a point of a series named by
its kind (``loss``, ``grad_norm``…) or, for the watch's ``series`` records (one per sampled
step and rank), by the fields :data:`SERIES_FIELDS` names. Long runs are thinned per pixel
bucket (min and max), so spikes stay.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, Iterable, Mapping

from labcoat.report import charts
from labcoat.report.downsample import minmax
from labcoat.report.ladder import findings_list
from labcoat.report.page import Section

#: how series are titled and drawn, in display order; others follow alphabetically
KNOWN = {
    "loss": ("Loss", False),
    "grad_norm": ("Gradient norm", True),
    "update_ratio": ("Update / weight ratio", True),
    "lr": ("Learning rate", False),
}
#: the fields of a ``series`` record drawn as curves (the others summarise or repeat them)
SERIES_FIELDS = tuple(KNOWN)
SERIES_KIND = "series"
#: the per-item results of an evaluation (labcoat.watch.events.ITEM_KIND), left out of the curves
ITEM_KIND = "eval_item"


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str) and value in ("nan", "inf", "-inf"):
        return float(value)
    return float(value) if isinstance(value, (int, float)) else None


def as_events(events: Iterable[Any]) -> list[dict]:
    """Event dicts from dicts or objects with ``to_dict()`` (the ledger's :class:`Event`)."""
    out = []
    for e in events:
        d = e.to_dict() if hasattr(e, "to_dict") else dict(e)
        data = d.pop("data", None)
        if isinstance(data, Mapping):  # the ledger keeps extra fields under data
            d = {**data, **d}
        out.append(d)
    return out


def split(
    events: list[dict],
) -> tuple[list[dict], dict[str, dict[int, list[tuple[float, float]]]], list[dict]]:
    """(alerts, series name → rank → [(step, value)], evals)."""
    from labcoat.watch.alerts import Alert

    alerts, evals = [], []
    series: dict[str, dict[int, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    for e in events:
        if Alert.is_alert_event(e):
            alerts.append(e)
            continue
        if e.get("kind") == "eval":
            evals.append(e)
            continue
        if e.get("kind") == ITEM_KIND:  # an eval's per-item results: not a curve
            continue
        step, rank = e.get("step"), e.get("rank") or 0
        if step is None:
            continue
        if e.get("kind") == SERIES_KIND:
            values = {k: e.get(k) for k in SERIES_FIELDS}
        else:
            values = {e.get("kind"): e.get("value")}
        for name, value in values.items():
            v = _number(value)
            if v is not None:
                series[str(name)][int(rank)].append((float(step), v))
    return alerts, series, evals


def _order(names: Iterable[str]) -> list[str]:
    known = [n for n in KNOWN if n in names]
    return known + sorted(n for n in names if n not in KNOWN)


def watch_section(events: Iterable[Any], *, title: str = "Watch", id: str = "watch") -> Section:
    """Curves with alerts marked, the alert list (evidence on click), and the evals."""
    from labcoat.watch.alerts import Alert, merge_alerts

    evs = as_events(events)
    raw_alerts, series, evals = split(evs)
    alerts = merge_alerts(Alert.from_event(e) for e in raw_alerts)
    marks = [(float(a.step), a.check) for a in alerts if a.step is not None]
    ranks = sorted({r for per in series.values() for r in per})
    head = (
        f'<p class="meta">{len(evs)} events · {len(alerts)} alert{"s" if len(alerts) != 1 else ""}'
        f"{f' · {len(ranks)} ranks' if len(ranks) > 1 else ''}</p>"
    )
    body = [head]
    plots = []
    for name in _order(series):
        label, logy = KNOWN.get(name, (name.replace("_", " "), False))
        lines = {}
        for rank, points in sorted(series[name].items()):
            points.sort()
            x, y = minmax([p[0] for p in points], [p[1] for p in points])
            lines[f"rank {rank}" if len(series[name]) > 1 else name] = (x, y)
        positive = all((y > 0).all() for _, y in lines.values() if len(y))
        plots.append(
            charts.line_chart(
                f"watch-{name}",
                lines,
                title=label,
                ylabel=name,
                alerts=marks,
                logy=logy and positive,
            )
        )
    if plots:
        body.append('<div class="grid">' + "".join(plots) + "</div>")
    elif alerts:
        body.append('<p class="muted">This events file holds alerts only (no sampled series).</p>')
    if alerts:
        body.append("<h3>Alerts</h3>" + findings_list(a.to_finding().to_dict() for a in alerts))
    if evals:
        rows = []
        for e in evals:
            ev = e.get("evidence") or {}
            low, high = (ev.get("interval") or [math.nan, math.nan])[:2]
            rows.append(
                (
                    f"{ev.get('name', 'eval')} @ {e.get('step')}",
                    float(e.get("value")),
                    float(low),
                    float(high),
                )
            )
        body.append(
            charts.forest(
                "watch-evals",
                rows,
                title="Evaluations (anytime-valid intervals; a planned one's: the plan's)",
                xlabel="score",
            )
        )
        for i, e in enumerate(evals):
            path = (e.get("evidence") or {}).get("path") or []
            if len(path) >= 2:
                n, mean, low, high = (list(col) for col in zip(*path))
                ev = e.get("evidence") or {}
                stop = (
                    "stopped early: tight enough"
                    if ev.get("stopped_early")
                    else "ran out of batches"
                )
                body.append(
                    charts.band_chart(
                        f"watch-eval-path-{i}",
                        n,
                        mean,
                        low,
                        high,
                        points={},
                        logx=False,
                        title=f"{ev.get('name', 'eval')} at step {e.get('step')}: "
                        "the interval narrowing",
                        xlabel="items scored",
                        ylabel="score",
                        label="mean so far",
                        caption=f"{len(path)} points; {stop} after {ev.get('n')} items",
                    )
                )
    return Section(title, "\n".join(body), id=id)


def result_section(result: Any, *, title: str = "Watch", id: str = "watch") -> Section:
    """A watch result's section: the events it raised (a watcher) or read (a report); a
    report's stored record keeps its alerts and other events, not the sampled series."""
    events = getattr(result, "raw", None) or result.events
    if not isinstance(events, list):  # a report's count of events: draw what it kept
        kept = [a if isinstance(a, Mapping) else a.to_event() for a in result.alerts]
        events = kept + list(result.other_events)
    return watch_section(events, title=title, id=id)


def stored_run(run: Any, findings: list, events: list, results: list, **options: Any) -> Section:
    """One ledger run's watch events as curves and alerts (the watch's descriptor names this),
    then each stored result through its own section; a session's events are the run's own,
    drawn once."""
    from labcoat.report.html import stored_sections

    parts = [watch_section(events, **options).body] if events or not results else []
    if events:  # a session's events are the ones drawn above
        results = [(n, r) for n, r in results if not isinstance(getattr(r, "events", 0), list)]
    parts.append(stored_sections(results, id=options.get("id", "watch")))
    return Section(options.get("title", "Watch"), "\n".join(parts), id=options.get("id", "watch"))
