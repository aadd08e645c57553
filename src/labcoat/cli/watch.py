"""``labcoat watch``: read back what a watched run recorded."""

from __future__ import annotations

from pathlib import Path

import click

from labcoat.cli.group import Group
from labcoat.cli.output import console, emit_json, json_option
from labcoat.errors import InputError
from labcoat.watch.alerts import Alert, merge_alerts
from labcoat.watch.events import read_events


@click.group("watch", cls=Group)
def watch_group() -> None:
    """Training-watch events: alerts raised while a run trained."""


@watch_group.command("report")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@json_option
def report(paths: tuple[Path, ...], as_json: bool) -> None:
    """Alerts from the JSON-lines event files of a run (one per rank), one row per event.

    The same desync seen by every rank is shown once, with the ranks that saw it.

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
    others = [e for e in events if not Alert.is_alert_event(e)]
    ranks = sorted({e["rank"] for e in events if e.get("rank") is not None})
    if as_json:
        emit_json(
            {"alerts": [a.to_event() for a in alerts], "other_events": others, "events": len(events), "ranks": ranks}
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


def _row(alert: Alert):
    finding = alert.to_finding()
    if alert.ranks and len(alert.ranks) > 1:
        finding.message += f" (seen by ranks {', '.join(map(str, alert.ranks))})"
    return finding
