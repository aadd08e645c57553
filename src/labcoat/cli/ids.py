"""``--duplicates error|mean`` on every command that reads tables of items (``labcoat stats``):
what the readers do with an id found on more than one row (:func:`labcoat.stats.readers.check_ids`).

The option is added to a group's commands in one place (:func:`add_duplicates_option`) and read
back by :func:`reading`, with the id column the command names (``--on``, ``--id``), so a command
passes both to the reader without a parameter of its own."""

from __future__ import annotations

from typing import Any

import click

_KEY = "labcoat.duplicates"
#: the command options that name a table's id column
ID_OPTIONS = ("on", "id_col")


def _store(ctx: click.Context, param: click.Parameter, value: str) -> str:
    ctx.meta[_KEY] = value
    return value


def duplicates_option() -> click.Option:
    return click.Option(
        ["--duplicates"],
        type=click.Choice(["error", "mean"]),
        default="error",
        show_default=True,
        expose_value=False,
        callback=_store,
        help="An id on more than one row: error (naming them), or mean (average its rows).",
    )


def add_duplicates_option(group: click.Group) -> None:
    """Give every command of ``group`` the ``--duplicates`` option."""
    for command in group.commands.values():
        if not any(p.name == "duplicates" for p in command.params):
            command.params.append(duplicates_option())


def reading() -> dict[str, Any]:
    """The reader's ``id_column`` and ``duplicates`` for the command running now."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return {}
    id_column = next((ctx.params[o] for o in ID_OPTIONS if ctx.params.get(o)), None)
    return {"id_column": id_column, "duplicates": ctx.meta.get(_KEY, "error")}
