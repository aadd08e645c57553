"""Shared output helpers for commands: one JSON object with --json, rich otherwise."""

from __future__ import annotations

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


def console(*, stderr: bool = False) -> Console:
    return Console(stderr=stderr, highlight=False, soft_wrap=False)


def emit_json(obj: Any) -> None:
    """Print ``obj`` as one line of strict JSON on stdout."""
    sys.stdout.write(json.dumps(jsonable(obj), allow_nan=False) + "\n")
    sys.stdout.flush()


def respond(as_json: bool, data: Any, render: Callable[[], Any]) -> None:
    """The one way a command answers: ``data`` (a result with ``to_dict`` or a dict) as JSON
    with ``--json``, else the rich renderable ``render()`` builds (called only then, so a
    command's rendering imports stay off the JSON path)."""
    if as_json:
        emit_json(data.to_dict() if hasattr(data, "to_dict") else data)
    else:
        console().print(render())
