"""Entry point of the ``labcoat`` command.

Commands are loaded lazily (``labcoat --help`` does not import torch). Errors caused by the
user's input become one line on stderr and exit code 2; ``--debug`` (anywhere before ``--``)
shows the traceback instead.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
import warnings
from typing import Sequence

import click

from labcoat.cli.group import Group
from labcoat.errors import LabcoatError, LabcoatNote

#: command name -> "module:attribute" of its click command; a new command is one line here.
COMMANDS: dict[str, str] = {
    "doctor": "labcoat.cli.doctor:doctor",
    "checks": "labcoat.cli.doctor:checks",
    "stats": "labcoat.cli.stats:stats",
    "ledger": "labcoat.cli.ledger:ledger",
    "run": "labcoat.cli.ledger:run_command",
    "watch": "labcoat.cli.watch:watch_group",
    "scale": "labcoat.cli.scale:scale",
    "report": "labcoat.cli.report:report",
    "audit": "labcoat.cli.audit:audit",
    "verdict": "labcoat.cli.verdict:verdict",
    "evals": "labcoat.cli.evals:evals",
    "replay": "labcoat.cli.replay:replay_command",
    "divergence": "labcoat.cli.replay:divergence_command",
    "design": "labcoat.cli.design:design_command",
    "logs": "labcoat.cli.logs:logs_command",
}

#: the help of the commands no engine declares, as ``labcoat --help`` lists it
OWN_SUMMARIES: dict[str, str] = {
    "checks": "List every declared check of every engine: what each falsifies and what a "
    "healthy setup predicts.",
    "ledger": "A lab notebook: hypotheses, predictions, results, runs and their provenance.",
    "run": "Run COMMAND as a recorded run: provenance, teed output, exit status.",
    "report": "Write one HTML page with every recorded doctor run, watched run and result, then "
    "the notebook's chronicle. The page opens offline: nothing in it is fetched.",
}


def summaries() -> dict[str, str]:
    """Each command's help as ``labcoat --help`` lists it: an engine's commands from its
    descriptor (:mod:`labcoat.engines`), the others from :data:`OWN_SUMMARIES`, so listing them
    imports no command module (those import numpy, rich and the engines);
    tests/test_cli_main.py keeps it equal to the commands' own help."""
    from labcoat.engines import engines

    found = dict(OWN_SUMMARIES)
    for engine in engines():
        found.update(engine.commands)
    return found


class LazyGroup(Group):
    """A click group whose subcommands are imported only when used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(COMMANDS))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in COMMANDS:
            module, attr = COMMANDS[name].split(":")
            return getattr(importlib.import_module(module), attr)
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's command list, with the help of a lazy command read from summaries() (a stand-in
        command carrying that help, so click shortens it as it does the command's own)."""
        rows: list[tuple[str, click.Command]] = []
        shown = summaries()
        for name in self.list_commands(ctx):
            if name in COMMANDS and name in shown:
                rows.append((name, click.Command(name, help=shown[name])))
                continue
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command))
        if not rows:
            return
        limit = formatter.width - 6 - max(len(name) for name, _ in rows)
        with formatter.section("Commands"):
            formatter.write_dl([(name, c.get_short_help_str(limit)) for name, c in rows])


#: commands renamed for one name per idea: the old name runs the new command for one release
RENAMED = {"diff": "divergence"}


@click.group(
    cls=LazyGroup, renamed=RENAMED, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.version_option(package_name="labcoat", prog_name="labcoat")
def cli() -> None:
    """labcoat: lab discipline for machine-learning experiments.

    Every command takes --json (one JSON object on stdout) and --help. Bad input
    exits 2 with one line on stderr; add --debug anywhere for the traceback.
    """


def _split_debug(args: list[str]) -> tuple[list[str], bool]:
    """Remove ``--debug`` from the arguments before ``--`` (what follows ``--`` is not ours)."""
    if "--" in args:
        cut = args.index("--")
        head, tail = args[:cut], args[cut:]
    else:
        head, tail = args, []
    debug = "--debug" in head
    return [a for a in head if a != "--debug"] + tail, debug


def _show_note(message, category, filename, lineno, file=None, line=None) -> None:
    """labcoat's notes (:class:`labcoat.errors.LabcoatNote`) as one line on stderr; other
    warnings as Python shows them."""
    if issubclass(category, LabcoatNote):
        click.echo(f"labcoat: note: {message}", err=True)
    else:
        _python_showwarning(message, category, filename, lineno, file, line)


_python_showwarning = warnings.showwarning


def main(argv: Sequence[str] | None = None) -> int:
    args, debug = _split_debug(list(sys.argv[1:] if argv is None else argv))
    debug = debug or os.environ.get("LABCOAT_DEBUG", "") not in ("", "0")
    with warnings.catch_warnings():
        warnings.showwarning = _show_note
        return _main(args, debug)


def _main(args: list[str], debug: bool) -> int:
    try:
        code = cli.main(args=args, prog_name="labcoat", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("labcoat: aborted", err=True)
        return 130
    except click.ClickException as exc:  # usage errors: bad options, missing arguments
        click.echo(usage_error_line(exc), err=True)
        return 2
    except LabcoatError as exc:
        if debug:
            traceback.print_exc()
        click.echo(f"labcoat: error: {exc}", err=True)
        return exc.exit_code
    except KeyboardInterrupt:
        click.echo("labcoat: interrupted", err=True)
        return 130
    except Exception as exc:  # a labcoat bug: still one line unless --debug
        if debug:
            traceback.print_exc()
        click.echo(
            f"labcoat: internal error: {type(exc).__name__}: {exc} (rerun with --debug for the "
            "traceback)",
            err=True,
        )
        return 3
    # without standalone mode click returns a command's exit code instead of raising Exit
    return code if isinstance(code, int) and not isinstance(code, bool) else 0


def usage_error_line(exc: click.ClickException) -> str:
    """click's usage error as one line, with the command it concerns and where its help is."""
    message = " ".join(exc.format_message().split()).rstrip(".")
    message = message[:1].lower() + message[1:]
    ctx = getattr(exc, "ctx", None)
    if ctx is None:
        return f"labcoat: error: {message}"
    path = ctx.command_path
    command = path.partition(" ")[2]
    return f"labcoat: error: {command + ': ' if command else ''}{message}; see '{path} --help'"


def run() -> None:
    sys.exit(main())
