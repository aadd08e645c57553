"""Files labcoat writes (``--html``, ``-o``/``--output``): checked before any work starts.

A long diagnosis must not be lost to a typo in an output path, so every command that writes a
file calls :func:`check_writable` first, and writes the file after printing its result. The
check changes nothing on disk: it creates no file and no folder.
"""

from __future__ import annotations

import os
from pathlib import Path

from labcoat.errors import InputError


def check_writable(path: str | os.PathLike[str], name: str = "output") -> Path:
    """``path`` as a :class:`~pathlib.Path` if a file can be written there, else an
    :class:`~labcoat.errors.InputError` naming ``name`` (the option), the problem and the fix."""
    target = Path(os.fspath(path)).expanduser()
    shown = os.fspath(path)
    if str(path) == "":
        raise InputError(f"{name}: needs a file path; got an empty string")
    if target.is_dir():
        raise InputError(f"{name} {shown}: is a folder; give a file path such as {shown}/out.html")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.exists():
        raise InputError(
            f"{name} {shown}: the folder {parent} does not exist; create it first "
            f"(mkdir -p {parent}) or give a path in an existing folder"
        )
    if not parent.is_dir():
        raise InputError(f"{name} {shown}: {parent} is a file, not a folder")
    if target.exists() and not os.access(target, os.W_OK):
        raise InputError(f"{name} {shown}: the file exists and is not writable")
    if not target.exists() and not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(
            f"{name} {shown}: the folder {parent} is not writable; give a path in a folder "
            "you can write to"
        )
    return target


__all__ = ["check_writable"]
