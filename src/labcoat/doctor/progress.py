"""Progress bars for the controls, which train copies for seconds rather than milliseconds.

Bars go to stderr so ``--json`` output on stdout stays clean, vanish when a run finishes, and
stay off when asked or when stdout is not a terminal (logs, pipes, CI).
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Any, Callable, Iterator

Advance = Callable[..., None]


class ControlProgress:
    """Hands out one bar per training run; a disabled instance does nothing at all."""

    def __init__(self, enabled: bool, console: Any = None):
        self.enabled = enabled
        self.console = console  # a rich Console; None: a new one on stderr

    @classmethod
    def resolve(cls, progress: bool | None) -> "ControlProgress":
        """``None`` means: show bars only when stdout is an interactive terminal."""
        if progress is None:
            progress = bool(getattr(sys.stdout, "isatty", lambda: False)())
        return cls(bool(progress))

    @contextmanager
    def task(self, description: str, total: int) -> Iterator[Advance]:
        """A bar for ``total`` units of work; the yielded function advances it (by 1 by default)."""
        if not self.enabled:
            yield _nothing
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        bar = Progress(
            TextColumn("[cyan]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.console or Console(stderr=True),
            transient=True,
        )
        with bar:
            task_id = bar.add_task(description, total=total)
            yield lambda n=1: bar.advance(task_id, n)


def _nothing(n: int = 1) -> None:
    return None
