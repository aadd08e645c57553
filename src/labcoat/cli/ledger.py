"""``labcoat ledger …`` and ``labcoat run -- CMD …``: the lab notebook from the shell.

Every command takes ``--ledger PATH_OR_URL`` (default: ``$LABCOAT_LEDGER`` or
``.labcoat/ledger.db`` at the project root) and ``--json``. Only ``add`` and ``run`` create a
ledger; reading commands on a missing ledger say so instead of leaving an empty file behind.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from labcoat.cli.group import Group
from labcoat.cli.output import checked_output, emit_json, json_option, respond
from labcoat.engines import names as engine_names
from labcoat.errors import InputError
from labcoat.ledger import Ledger
from labcoat.ledger.records.entries import CLOSING_VERDICTS, VERDICTS

ledger_option = click.option(
    "--ledger",
    "location",
    metavar="PATH_OR_URL",
    default=None,
    help="Ledger file or postgresql:// URL (default: $LABCOAT_LEDGER or .labcoat/ledger.db at the "
    "project root).",
)


def _open(location: str | None, *, create: bool = False) -> Ledger:
    return Ledger(location, create=create)


@click.group("ledger", cls=Group, renamed={"diff": "provenance-diff"})
def ledger() -> None:
    """A lab notebook: hypotheses, predictions, results, runs and their provenance."""


def _plan_fields(fields: tuple[str, ...]) -> dict:
    from labcoat.verdicts.plan import parse_fields

    return parse_fields(fields)


def _plan_from(plan_file: str | None, fields: tuple[str, ...]):
    if plan_file is None and not fields:
        return None  # a hypothesis without a plan needs nothing of labcoat.verdicts
    from labcoat.verdicts.plan import plan_from

    return plan_from(plan_file, fields)


plan_options = [
    click.option(
        "--plan",
        "plan_file",
        type=click.Path(dir_okay=False),
        default=None,
        help="The analysis registered with the hypothesis: a TOML plan file (labcoat.Plan).",
    ),
    click.option(
        "--plan-field",
        "plan_fields",
        multiple=True,
        metavar="KEY=VALUE",
        help="A plan field instead of (or on top of) --plan, e.g. margin=0.02 (repeatable).",
    ),
    click.option("--pilot-a", default=None, help="Pilot results of arm A: variance, item set."),
    click.option("--pilot-b", default=None, help="Pilot results of arm B."),
]


def with_plan_options(command):
    for option in reversed(plan_options):
        command = option(command)
    return command


@ledger.command("add")
@click.argument("title")
@click.option(
    "--predict",
    "prediction",
    required=True,
    help="What you expect to observe, written before the experiment.",
)
@click.option("--experiment", default=None, help="How the prediction will be tested.")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@click.option(
    "--parent",
    "parents",
    type=int,
    multiple=True,
    help="Id of an entry this follows from (repeatable).",
)
@click.option(
    "--run", "runs", type=int, multiple=True, help="Id of a run this entry is about (repeatable)."
)
@with_plan_options
@ledger_option
@json_option
def add_command(
    title,
    prediction,
    experiment,
    tags,
    parents,
    runs,
    plan_file,
    plan_fields,
    pilot_a,
    pilot_b,
    location,
    as_json,
):
    """Record a hypothesis TITLE and its prediction now (with --plan: its registered analysis,
    reviewed and sealed; `labcoat verdict ID` judges it later)."""
    plan = _plan_from(plan_file, plan_fields)
    if plan is None and (pilot_a is not None or pilot_b is not None):
        raise InputError("--pilot-a/--pilot-b: a pilot is reviewed with a plan; give --plan too")
    fields = dict(predict=prediction, experiment=experiment, tags=tags, parents=parents, runs=runs)
    with _open(location, create=True) as book:
        if plan is None:
            from labcoat.ledger.answers import add_entry

            added = add_entry(book, title, **fields)
        else:
            from labcoat.verdicts.registration import register_entry

            added = register_entry(
                book, title, plan=plan, pilot_a=pilot_a, pilot_b=pilot_b, **fields
            )
        respond(as_json, added, lambda: added)


@ledger.command("plan")
@click.argument("entry_id", type=int)
@with_plan_options
@ledger_option
@json_option
def plan_command(entry_id, plan_file, plan_fields, pilot_a, pilot_b, location, as_json):
    """Show entry ENTRY_ID's registered plan, or seal a new revision of it (--plan or
    --plan-field). The registered plan stays the first revision: the verdict names what a
    revision changed, and when it followed the results."""
    from labcoat.verdicts.registration import show_plan

    plan = _plan_from(plan_file, plan_fields) if plan_file is not None else None
    changes = _plan_fields(plan_fields) if plan_file is None else {}
    with _open(location) as book:
        shown = show_plan(book, entry_id, plan, pilot_a=pilot_a, pilot_b=pilot_b, **changes)
    respond(as_json, shown, lambda: shown)


@ledger.command("resolve")
@click.argument("entry_id", type=int)
@click.option("--result", required=True, help="What was observed.")
@click.option(
    "--verdict",
    required=True,
    type=click.Choice(CLOSING_VERDICTS),
    help="The hypothesis was confirmed, refuted or neither.",
)
@click.option("--conclusion", default=None, help="What follows, and the next step.")
@click.option("--experiment", default=None, help="How it was tested, if not recorded before.")
@ledger_option
@json_option
def resolve_command(entry_id, result, verdict, conclusion, experiment, location, as_json):
    """Record the result and verdict of entry ENTRY_ID (a new revision)."""
    from labcoat.ledger.answers import resolve_entry

    with _open(location) as book:
        resolved = resolve_entry(
            book,
            entry_id,
            result=result,
            verdict=verdict,
            conclusion=conclusion,
            experiment=experiment,
        )
    respond(as_json, resolved, lambda: str(resolved))


@ledger.command("list")
@click.option(
    "--verdict",
    "verdicts",
    multiple=True,
    type=click.Choice(VERDICTS),
    help="Keep this verdict (repeat for OR).",
)
@click.option("--tag", "tags", multiple=True, help="Keep entries with this tag (repeat for OR).")
@click.option(
    "--text",
    "texts",
    multiple=True,
    help="Keep entries containing this text, any case (repeat for OR).",
)
@click.option(
    "--since", default=None, help="Created on or after this date/time (YYYY-MM-DD or ISO time)."
)
@click.option(
    "--until", default=None, help="Created on or before this date (or before this ISO time)."
)
@click.option(
    "--run",
    "runs",
    type=int,
    multiple=True,
    help="Keep entries linked to this run (repeat for OR).",
)
@click.option(
    "--any", "match_any", is_flag=True, help="Combine the different filters with OR instead of AND."
)
@click.option(
    "--checks", is_flag=True, help="Also list the entries labcoat 0.1 made for each doctor check."
)
@click.option(
    "--limit", type=click.IntRange(min=1), default=None, help="At most this many entries."
)
@ledger_option
@json_option
def list_command(
    verdicts, tags, texts, since, until, runs, match_any, checks, limit, location, as_json
):
    """List your entries. Repeating a filter means OR; different filters are ANDed unless --any.

    Doctor and watch sessions are runs with findings: see `labcoat ledger runs` and
    `labcoat ledger findings`."""
    from labcoat.ledger.answers import list_entries

    with _open(location) as book:
        listing = list_entries(
            book,
            verdict=verdicts or None,
            tag=tags or None,
            text=texts or None,
            since=since,
            until=until,
            run=runs or None,
            match="any" if match_any else "all",
            checks=checks,
            limit=limit,
        )
    respond(as_json, listing, lambda: listing)


@ledger.command("show")
@click.argument("entry_id", type=int, required=False)
@click.option(
    "--run",
    "run_id",
    type=int,
    default=None,
    help="Show this run (provenance, findings) instead of an entry.",
)
@click.option(
    "--diff", "show_diff", is_flag=True, help="With --run: print the run's uncommitted diff."
)
@click.option(
    "--output",
    "show_output",
    is_flag=True,
    help="With --run: print the output labcoat run captured.",
)
@ledger_option
@json_option
def show_command(entry_id, run_id, show_diff, show_output, location, as_json):
    """Show entry ENTRY_ID with its revisions and findings, or a run with --run ID."""
    if (entry_id is None) == (run_id is None):
        raise InputError("show: give an entry id, or --run RUN_ID, but not both")
    from labcoat.ledger.answers import show_entry, show_run

    with _open(location) as book:
        if run_id is None:
            shown = show_entry(book, entry_id)
        else:
            shown = show_run(book, run_id, diff=show_diff, output=show_output)
    respond(as_json, shown, lambda: shown)
    if run_id is not None and not as_json:  # the diff and the output as they are, unstyled
        for text in (shown.diff, shown.output):
            if text is not None:
                click.echo(text, nl=False)


@ledger.command("runs")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the latest N runs.")
@click.option(
    "--status",
    type=click.Choice(("running", "ok", "failed", "interrupted", "killed")),
    default=None,
    help="Only runs that ended this way.",
)
@ledger_option
@json_option
def runs_command(limit, status, location, as_json):
    """List recorded runs, oldest first."""
    from labcoat.ledger.answers import list_runs

    with _open(location) as book:
        listing = list_runs(book, limit=limit, status=status)
    respond(as_json, listing, lambda: listing)


@ledger.command("findings")
@click.option("--run", "run_id", type=int, default=None, help="Only this run's findings.")
@click.option(
    "--source",
    type=click.Choice(engine_names()),
    default=None,
    help="Only this engine's findings.",
)
@click.option(
    "--status",
    "statuses",
    multiple=True,
    type=click.Choice(("pass", "warn", "fail", "skip")),
    help="Keep this status (repeat for OR).",
)
@click.option("--check", "checks", multiple=True, help="Keep this check id (repeat for OR).")
@ledger_option
@json_option
def findings_command(run_id, source, statuses, checks, location, as_json):
    """List the findings every engine recorded, oldest first."""
    from labcoat.ledger.answers import list_findings

    with _open(location) as book:
        listing = list_findings(
            book, run=run_id, source=source, status=statuses or None, check=checks or None
        )
    respond(as_json, listing, lambda: listing)


@ledger.command("provenance-diff")
@click.argument("run_a", type=int)
@click.argument("run_b", type=int)
@ledger_option
@json_option
def diff_command(run_a, run_b, location, as_json):
    """What changed in code, config, data, environment and seeds from RUN_A to RUN_B."""
    with _open(location) as book:
        result = book.provenance_diff(run_a, run_b)
        respond(as_json, result, lambda: result)


@ledger.command("verify")
@ledger_option
@json_option
@click.pass_context
def verify_command(ctx, location, as_json):
    """Check that no row was changed behind the ledger's back; exit 1 when something was."""
    with _open(location) as book:
        result = book.verify()
    respond(as_json, result, lambda: result)
    if not result.ok:
        ctx.exit(1)


@ledger.command("export")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(("md", "json")),
    default="md",
    show_default=True,
    help="md: a dated chronicle; json: everything, for other tools.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write to this file instead of stdout.",
    callback=checked_output(),
)
@click.option("--since", default=None, help="Only entries created on or after this date.")
@click.option("--until", default=None, help="Only entries created on or before this date.")
@ledger_option
@json_option
def export_command(fmt, output, since, until, location, as_json):
    """Export a dated Markdown chronicle (md) or everything as JSON."""
    from labcoat.ledger.answers import export_to

    with _open(location) as book:
        exported = export_to(book, fmt, output, since=since, until=until)
    if as_json:
        emit_json(exported.to_dict())
    else:  # the text itself on stdout, or where it went on stderr
        click.echo(str(exported), nl=bool(output), err=bool(output))


@ledger.command("sql")
@click.argument("query")
@click.option(
    "--param", "params", multiple=True, help="A value for a ? placeholder (repeatable, in order)."
)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=0.001),
    default=30.0,
    show_default=True,
    help="Seconds before the query is stopped.",
)
@ledger_option
@json_option
def sql_command(query, params, timeout_s, location, as_json):
    """Run one read-only SQL statement on the ledger (writes are refused)."""
    with _open(location) as book:
        result = book.sql(query, params, timeout_s=timeout_s)
    respond(as_json, result, lambda: result)


# ---- labcoat run -- CMD ----------------------------------------------------------------


def _parse_seeds(values: tuple[str, ...]) -> dict[str, Any]:
    seeds: dict[str, Any] = {}
    for item in values:
        name, sep, raw = item.partition("=")
        if not sep or not name:
            raise InputError(f"--seed: expected NAME=VALUE (e.g. --seed torch=0); got {item!r}")
        seeds[name] = int(raw) if raw.lstrip("-").isdigit() else raw
    return seeds


def _parse_factors(values: tuple[str, ...]) -> dict[str, Any]:
    """``--factor NAME=LEVEL``: each LEVEL read as a TOML value (``lr=3e-3``), else as text
    (``lr=high``)."""
    import tomllib

    factors: dict[str, Any] = {}
    for item in values:
        name, sep, raw = item.partition("=")
        if not sep or not name.strip() or not raw.strip():
            raise InputError(f"--factor: expected NAME=LEVEL (e.g. --factor lr=high); got {item!r}")
        try:
            level = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            level = raw
        if name.strip() in factors:
            raise InputError(f"--factor: {name.strip()} is given twice")
        factors[name.strip()] = level if isinstance(level, (str, int, float, bool)) else raw
    return factors


def _log_capture():
    """The capture of the command's logs, or None (with a note) when drain3 is missing."""
    from labcoat.extras import available, install_hint

    if not available("drain3"):
        click.echo(
            "labcoat: note: the command's logs are not captured as records (`labcoat logs`): "
            f"drain3 is not installed; {install_hint('logs')}",
            err=True,
        )
        return None
    from labcoat.logs.api import CommandCapture

    return CommandCapture()


def _ingest_logs(capture, book: Ledger, run_id: int) -> None:
    """Store the captured lines with the run; a failure here never changes the run's exit."""
    try:
        capture.ingest(book, run_id)
        report = capture.conclude(book, run_id)
    except Exception as exc:  # noqa: BLE001 - the run is recorded; its logs are extra
        click.echo(f"labcoat: note: run {run_id}'s logs were not stored: {exc}", err=True)
        return
    first = report.first
    if first is not None:
        who = "the launcher" if first["rank"] is None else f"rank {first['rank']}"
        step = "" if first["step"] is None else f" step {first['step']}"
        click.echo(
            f"labcoat: logs: {who}{step}: {first['line'][:120]} (`labcoat logs {run_id} --why`)",
            err=True,
        )


@click.command(
    "run",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@click.option("--config", default=None, help="Config to record: a JSON/TOML file or inline JSON.")
@click.option(
    "--data",
    "data",
    multiple=True,
    type=click.Path(exists=True),
    help="Data file or directory to fingerprint (repeatable).",
)
@click.option("--seed", "seeds", multiple=True, help="NAME=VALUE seed to record (repeatable).")
@click.option("--name", default=None, help="A short name for the run.")
@click.option(
    "--factor",
    "factors",
    multiple=True,
    metavar="NAME=LEVEL",
    help="A factor level of a designed experiment (e.g. lr=high; repeatable).",
)
@click.option(
    "--for",
    "entries",
    type=int,
    multiple=True,
    metavar="ENTRY_ID",
    help="Link the run to this hypothesis (repeatable).",
)
@click.option(
    "--full-hash", is_flag=True, help="Hash data files in full instead of sampling large ones."
)
@click.option("--no-git", is_flag=True, help="Do not record the git state.")
@click.option(
    "--max-output-mb",
    type=click.FloatRange(min=0),
    default=16.0,
    show_default=True,
    help="Keep at most this much of the end of the output.",
)
@click.option(
    "--no-logs",
    is_flag=True,
    help="Do not capture the command's lines as log records (`labcoat logs`).",
)
@ledger_option
@json_option
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@click.pass_context
def run_command(
    ctx,
    config,
    data,
    seeds,
    name,
    factors,
    entries,
    full_hash,
    no_git,
    max_output_mb,
    no_logs,
    location,
    as_json,
    command,
):
    """Run COMMAND as a recorded run: provenance, teed output, exit status.

    labcoat exits with the command's exit code. With --json the command's stdout goes to
    stderr and stdout carries one JSON object about the run.

    \b
    Example:
      labcoat run --config cfg.json --data data/ -- python train.py --lr 0.1
      labcoat run --for 3 -- python train.py --eps 1e-6    # a run testing entry 3
      labcoat run --for 4 --factor lr=high --factor seed=1 -- python train.py
    """
    from labcoat.ledger.wrap import run_wrapped
    from labcoat.provenance.config_file import read_config

    # bad options stop here: before a note is printed or a ledger is created
    seeds, factors = _parse_seeds(seeds) or None, _parse_factors(factors) or None
    logs = None if no_logs else _log_capture()
    with _open(location, create=True) as book:
        try:
            result = run_wrapped(
                book,
                list(command),
                stdout=sys.stderr if as_json else sys.stdout,
                stderr=sys.stderr,
                config=read_config(config),
                data=list(data) or None,
                seeds=seeds,
                name=name,
                factors=factors,
                entries=[book.entry(e) for e in entries],  # an unknown id stops here
                full_hash=full_hash,
                git=not no_git,
                max_output_bytes=int(max_output_mb * (1 << 20)),
                env=None if logs is None else logs.env(),
                tap=None if logs is None else logs.tap,
            )
            if logs is not None:
                _ingest_logs(logs, book, result.run_id)
        finally:
            if logs is not None:
                logs.close()
    if as_json:
        emit_json(result.to_dict())
    else:
        click.echo(f"labcoat: {result}", err=True)
    ctx.exit(result.exit_status)
