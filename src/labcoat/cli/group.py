"""The click group every labcoat command group uses.

A group called without a subcommand is a usage error that lists the subcommands, so it gets the
same one-line ``labcoat: error: …`` and exit code 2 as any other bad input (click's own behaviour
differs between versions: help and exit 0 before 8.2, help on stderr and exit 2 after).
"""

from __future__ import annotations

import click


class Group(click.Group):
    """A click group whose missing subcommand is a one-line usage error naming the choices."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("no_args_is_help", False)
        super().__init__(*args, **kwargs)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args and not ctx.resilient_parsing:
            choices = ", ".join(self.list_commands(ctx))
            raise click.UsageError(f"missing command; choose one of: {choices}", ctx=ctx)
        return super().parse_args(ctx, args)
