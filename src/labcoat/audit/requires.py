"""Optional libraries of the audit, imported when an audit needs them, with the install hint
instead of a bare ImportError."""

from __future__ import annotations

import importlib
from types import ModuleType

from labcoat.errors import LabcoatError


def require(module: str, extra: str, purpose: str) -> ModuleType:
    """Import ``module`` or fail with one line naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        top = module.partition(".")[0]
        raise LabcoatError(
            f"{purpose} needs {top}; install it with `pip install 'labcoat[{extra}]'`"
        ) from None
