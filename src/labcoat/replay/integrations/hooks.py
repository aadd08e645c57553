"""What the trainer integrations share: their warnings and a class attribute patched for the
length of a ``labcoat.replayable`` block."""

from __future__ import annotations

import warnings
from typing import Any, Callable


class NothingRecorded(UserWarning):
    """A ``labcoat.replayable`` block ended with no step recorded."""


class NotHooked(UserWarning):
    """A trainer that ``labcoat.replayable`` cannot hook (its training loop is its own)."""


class Patch:
    """A class attribute replaced for the length of a block, put back by :meth:`undo`."""

    def __init__(self, owner: Any, name: str, make: Callable[[Any], Any]):
        self.owner, self.name = owner, name
        self.original = owner.__dict__[name]
        setattr(owner, name, make(self.original))

    def undo(self) -> None:
        setattr(self.owner, self.name, self.original)


def not_hooked(what: str, why: str) -> None:
    warnings.warn(f"labcoat.replayable: {what} {why}", NotHooked, stacklevel=4)
