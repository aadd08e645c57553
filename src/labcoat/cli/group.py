"""The click group every labcoat command group uses.

A group called without a subcommand is a usage error that lists the subcommands, so it gets the
same one-line ``labcoat: error: …`` and exit code 2 as any other bad input (click's own behaviour
differs between versions: help and exit 0 before 8.2, help on stderr and exit 2 after). A
mistyped subcommand names the closest one (``labcoat doctr``: did you mean 'doctor'?), in every
group, including those whose commands load lazily.
"""

from __future__ import annotations

import difflib

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

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = str(args[0]) if args else ""
        if (
            name
            and not name.startswith("-")
            and not ctx.resilient_parsing
            and self.get_command(ctx, name) is None
        ):
            ctx.fail(f"no such command {name!r}{suggestion(name, self.list_commands(ctx))}")
        return super().resolve_command(ctx, args)


def suggestion(name: str, choices: list[str]) -> str:
    """`` (did you mean 'doctor'?)`` for the closest of ``choices``, else the choices."""
    close = difflib.get_close_matches(name.lower(), choices, n=2, cutoff=0.6)
    if close:
        return f" (did you mean {' or '.join(repr(c) for c in close)}?)"
    return f"; choose one of: {', '.join(choices)}"
