"""``labcoat watch``: read back what a watched run recorded."""

from __future__ import annotations

from pathlib import Path

import click

from labcoat.cli.group import Group
from labcoat.cli.output import console, emit_json, json_option
from labcoat.errors import InputError
from labcoat.watch.alerts import Alert, merge_alerts
from labcoat.watch.events import SERIES_KIND, read_events


@click.group("watch", cls=Group)
def watch_group() -> None:
    """Training-watch events: alerts raised while a run trained."""


@watch_group.command("report")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@json_option
@click.option("--html", "html", default=None, metavar="PATH",
              help="Also write the curves, with every alert marked, as an HTML page.")
def report(paths: tuple[Path, ...], as_json: bool, html: str | None) -> None:
    """Alerts from the JSON-lines event files of a run (one per rank), one row per event.

    The same desync seen by every rank is shown once, with the ranks that saw it. The
    sampled series (loss, gradient norm, update/weight ratio) is summarised, not listed.

    \b
    Example:
      labcoat watch report runs/42/events*.jsonl
    """
    if not paths:
        raise InputError(
            "`labcoat watch report` needs at least one events file; pass the files written by "
            "labcoat.watch(..., events=PATH), e.g. runs/42/events*.jsonl."
        )
    events = list(read_events(paths))
    alerts = merge_alerts(Alert.from_event(e) for e in events if Alert.is_alert_event(e))
    series = [e for e in events if e["kind"] == SERIES_KIND]
    others = [e for e in events if not Alert.is_alert_event(e) and e["kind"] != SERIES_KIND]
    ranks = sorted({e["rank"] for e in events if e.get("rank") is not None})
    summary = _series_summary(series)
    if html is not None:
        from labcoat.report import Page
        from labcoat.report.sections.watch import watch_section

        Page("labcoat watch", subtitle=", ".join(map(str, paths))).add(watch_section(events)).save(html)
    if as_json:
        emit_json(
            {"alerts": [a.to_event() for a in alerts], "other_events": others,
             "events": len(events), "ranks": ranks, "series": summary}
        )
        return
    from labcoat.render import findings_table

    out = console()
    where = f" from {len(ranks)} ranks" if len(ranks) > 1 else ""
    if alerts:
        out.print(findings_table([_row(a) for a in alerts], title=f"watch: {len(alerts)} alert{'s' if len(alerts) != 1 else ''}{where}"))
    else:
        out.print(f"watch: no alerts in {len(events)} events{where}")
    for e in others:
        out.print(f"step {e['step']}: {e['kind']}: {e.get('message', '')}")
    if summary["records"]:
        last = summary["last"]
        out.print(
            f"series: {summary['records']} sampled steps ({summary['first_step']}-"
            f"{summary['last_step']}); last loss {_num(last['loss'])}, gradient norm "
            f"{_num(last['grad_norm'])}, update/weight {_num(last['update_ratio'])}"
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
        "last": {k: last.get(k) for k in ("step", "rank", "loss", "grad_norm", "update_ratio")},
    }


def _num(value) -> str:
    return "-" if value is None else value if isinstance(value, str) else f"{value:.4g}"


def _row(alert: Alert):
    finding = alert.to_finding()
    if alert.ranks and len(alert.ranks) > 1:
        finding.message += f" (seen by ranks {', '.join(map(str, alert.ranks))})"
    return finding
