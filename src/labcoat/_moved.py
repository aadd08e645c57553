"""Modules that moved keep their old path for one release: the old module's ``__getattr__``
finds each name in the new module and says, in a :class:`DeprecationWarning`, where it lives
now."""

from __future__ import annotations

import importlib
import warnings
from typing import Any, Callable


def moved(old: str, new: str) -> Callable[[str], Any]:
    """The ``__getattr__`` of module ``old``, whose contents moved to module ``new``."""

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        warnings.warn(
            f"{old} moved to {new}; import {name} from {new} (the old path goes in the next "
            "release)",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(new), name)

    return __getattr__
