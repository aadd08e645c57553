"""Shared output helpers for commands: one JSON object with --json, rich otherwise."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any

import click
from rich.console import Console

from labcoat._jsonable import jsonable

json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON object instead of a table."
)


def renamed_option(
    new: str, old: str, name: str, *, default: Any, short: str | None = None, **option: Any
) -> Callable[[Any], Any]:
    """``new`` (e.g. ``--level``) as the option, and ``old`` (``--confidence``) still accepted,
    hidden, for one release: it says on stderr which option replaces it. ``name`` is the
    command function's parameter; ``option`` goes to :func:`click.option` for ``new``."""
    hidden = f"_deprecated_{name}"

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(command)
        def accepting(*args: Any, **kwargs: Any) -> Any:
            given = kwargs.pop(hidden)
            if given is not None:
                click.echo(f"warning: {old} is deprecated; use {new}", err=True)
                kwargs[name] = given
            return command(*args, **kwargs)

        accepting = click.option(
            old,
            hidden,
            default=None,
            hidden=True,
            type=option.get("type"),
            help=f"Deprecated: use {new}.",
        )(accepting)
        flags = (new, short) if short else (new,)
        return click.option(*flags, name, default=default, **option)(accepting)

    return decorate


#: the one default confidence level and bootstrap seed, the library's: a CLI run and the same
#: Python call give the same numbers (tests/test_cli_options.py holds every command to it)
DEFAULT_LEVEL = 0.95
DEFAULT_SEED = 0


def level_options(
    default: float | None = DEFAULT_LEVEL,
    help: str = "Confidence level of the intervals.",
) -> Callable[[Any], Any]:
    """``--level`` (``--confidence`` kept one release), in (0, 1). ``default`` is the library
    call's: :data:`DEFAULT_LEVEL`, or None where the library's level comes from elsewhere
    (an evals plan's own level)."""
    return renamed_option(
        "--level",
        "--confidence",
        "level",
        default=default,
        type=click.FloatRange(0, 1, min_open=True, max_open=True),
        show_default=default is not None,
        help=help,
    )


def seed_options(
    default: int | None = DEFAULT_SEED, help: str = "Random seed of the bootstrap."
) -> Callable[[Any], Any]:
    """``--seed``, a non-negative integer; ``default`` is the library call's
    (:data:`DEFAULT_SEED`, or None where the seed comes from an experiment file)."""
    return click.option(
        "--seed",
        type=click.IntRange(min=0),
        default=default,
        show_default=default is not None,
        help=help,
    )


#: ``--level`` at the library's default
level_option = level_options()
#: ``--seed`` at the library's default
seed_option = seed_options()


def recording_options(what: str = "the findings") -> Callable[[Any], Any]:
    """``--ledger PATH_OR_URL`` and ``--no-ledger`` for a command whose result is recorded;
    :func:`ledger_target` turns the two into the library's ``ledger=`` argument."""
    ledger = click.option(
        "--ledger",
        "ledger",
        default=None,
        metavar="PATH_OR_URL",
        help=f"Record {what} in this ledger (default: the project's ledger, if one exists).",
    )
    no_ledger = click.option("--no-ledger", is_flag=True, help="Record nothing.")
    return lambda command: ledger(no_ledger(command))


def checked_output(*, extra: str | None = None, purpose: str | None = None):
    """A click callback for an option naming a file to write: before any work starts, the
    path must be writable (:func:`labcoat.outputs.check_writable`) and the optional
    dependency that writes it (``extra``) installed (:func:`labcoat.extras.require`)."""

    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is None:
            return value
        if extra is not None:
            from labcoat.extras import require

            require(extra, purpose)
        from labcoat.outputs import check_writable

        check_writable(value, param.opts[-1] if param.opts else param.name or "output")
        return value

    return callback


def html_option(help: str = "Also write the result as an HTML page.") -> Callable[[Any], Any]:
    """``--html PATH``: checked (matplotlib installed, PATH writable) before the command runs;
    the command writes the page after printing its result."""
    return click.option(
        "--html",
        "html",
        default=None,
        metavar="PATH",
        help=help,
        callback=checked_output(extra="report", purpose="--html"),
    )


def ledger_target(ledger: str | None, no_ledger: bool) -> Any:
    """The ``ledger=`` argument of labcoat's functions: False records nowhere, None the
    project's ledger if it exists, else the given path or URL."""
    return False if no_ledger else ledger


def console(*, stderr: bool = False) -> Console:
    return Console(stderr=stderr, highlight=False, soft_wrap=False)


def emit_json(obj: Any, *, max_items: int = 1000) -> None:
    """Print ``obj`` as one line of strict JSON on stdout (lists cut at ``max_items``)."""
    sys.stdout.write(json.dumps(jsonable(obj, max_items=max_items), allow_nan=False) + "\n")
    sys.stdout.flush()


def respond(as_json: bool, data: Any, render: Callable[[], Any], *, max_items: int = 1000) -> None:
    """The one way a command answers: ``data`` (a result with ``to_dict`` or a dict) as JSON
    with ``--json``, else the rich renderable ``render()`` builds (called only then, so a
    command's rendering imports stay off the JSON path). ``max_items``: where JSON lists are
    cut (``sys.maxsize``: every row, as when the user asked for the indices)."""
    if as_json:
        emit_json(data.to_dict() if hasattr(data, "to_dict") else data, max_items=max_items)
    else:
        console().print(render())


def titled(title: str, renderable: Any) -> Any:
    """``renderable`` under a rule naming the command and its target."""
    from rich.console import Group
    from rich.rule import Rule

    return Group(Rule(title), renderable)
