"""Rich views of the watch's results: what ``labcoat watch report`` prints."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType

from labcoat.view import findings_table


def report_view(report: Any) -> RenderableType:
    """A :class:`~labcoat.watch.result.WatchReport`: its alerts as a table, the other events
    and how much of the sampled series the files hold."""
    where = f" from {len(report.ranks)} ranks" if len(report.ranks) > 1 else ""
    n = len(report.alerts)
    parts: list[Any] = [
        findings_table(report.findings, title=f"watch: {n} alert{'s' if n != 1 else ''}{where}")
        if n
        else f"watch: no alerts in {report.events} events{where}"
    ]
    parts += [f"step {e['step']}: {e['kind']}: {e.get('message', '')}" for e in report.other_events]
    if report.series["records"]:
        s, last = report.series, report.series["last"]
        parts.append(
            f"series: {s['records']} sampled steps ({s['first_step']}-{s['last_step']}); last "
            f"loss {_num(last['loss'])}, gradient norm {_num(last['grad_norm'])}, "
            f"update/weight {_num(last['update_ratio'])}"
        )
    return Group(*parts)


def _num(value) -> str:
    return "-" if value is None else value if isinstance(value, str) else f"{value:.4g}"
