"""Where the ledger lives when nobody says: ``.labcoat/ledger.db`` at the project root.

The project root is the nearest enclosing git work tree (found by looking for ``.git``, which is
a file in worktrees and submodules), or the current directory outside git. ``LABCOAT_LEDGER``
overrides it with another file or a ``postgresql://`` URL.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_LEDGER = "LABCOAT_LEDGER"
#: set by ``labcoat run`` for the wrapped command, so what it records joins that run
ENV_RUN_ID = "LABCOAT_RUN_ID"
DEFAULT_RELATIVE = Path(".labcoat") / "ledger.db"


def project_root(start: str | os.PathLike[str] | None = None) -> Path:
    here = Path(start or os.getcwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return here


def default_location(cwd: str | os.PathLike[str] | None = None) -> str:
    """``$LABCOAT_LEDGER`` if set, else ``<project root>/.labcoat/ledger.db``."""
    configured = os.environ.get(ENV_LEDGER, "").strip()
    if configured:
        return configured
    return str(project_root(cwd) / DEFAULT_RELATIVE)


def resolve_location(path_or_url: str | os.PathLike[str] | None) -> str:
    if path_or_url is None:
        return default_location()
    return os.fspath(path_or_url)
