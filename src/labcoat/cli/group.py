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
    """A click group whose missing subcommand is a one-line usage error naming the choices.
    ``renamed`` (old subcommand name -> its new name): the old name still runs the command for
    one release, unlisted, saying on stderr which command replaces it."""

    def __init__(self, *args, renamed: dict[str, str] | None = None, **kwargs) -> None:
        kwargs.setdefault("no_args_is_help", False)
        super().__init__(*args, **kwargs)
        self.renamed = dict(renamed or {})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.renamed:
            command = self.get_command(ctx, self.renamed[name])
            path = ctx.command_path
            return (
                None
                if command is None
                else _alias(command, f"{path} {name}", f"{path} {command.name}")
            )
        return super().get_command(ctx, name)

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


def _alias(command: click.Command, old: str, new: str) -> click.Command:
    """``command`` under its old name, hidden: it warns on stderr, then does the same."""

    def callback(*args, **kwargs):
        click.echo(f"warning: {old} is deprecated; use {new}", err=True)
        return command.callback(*args, **kwargs)

    return click.Command(
        old.rsplit(" ", 1)[-1],
        callback=callback,
        params=command.params,
        help=f"Deprecated: use {new}.",
        hidden=True,
        context_settings=command.context_settings,
    )


def suggestion(name: str, choices: list[str]) -> str:
    """`` (did you mean 'doctor'?)`` for the closest of ``choices``, else the choices."""
    close = difflib.get_close_matches(name.lower(), choices, n=2, cutoff=0.6)
    if close:
        return f" (did you mean {' or '.join(repr(c) for c in close)}?)"
    return f"; choose one of: {', '.join(choices)}"
