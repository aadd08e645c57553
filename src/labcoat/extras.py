"""Optional dependencies, by the extra that installs them (``pip install "labcoat[report]"``).

labcoat's core needs numpy, scipy, torch, rich and click; everything else is an extra. Code that
needs one calls :func:`require` *before* it starts any work, so a missing library is one line
naming the install command (exit 2 on the command line), never an ``ImportError`` after a long
run. :func:`import_module` imports one module of an extra with the same message.

Whether a module is there is asked of the import system (``importlib.util.find_spec``), which
loads nothing: checking for matplotlib does not import it.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType

from labcoat.errors import LabcoatError

#: extra -> the top-level modules it installs (pyproject.toml's [project.optional-dependencies])
EXTRAS: dict[str, tuple[str, ...]] = {
    "report": ("matplotlib",),
    "audit": ("cleanlab", "datasketch"),
    "parquet": ("pyarrow",),
    "postgres": ("psycopg",),
    "ray": ("ray",),
    "lightning": ("lightning",),
    "huggingface": ("transformers",),
    "design": ("pydoe", "statsmodels"),
    "logs": ("drain3",),
}

#: what each extra is for, when the caller does not say
PURPOSES: dict[str, str] = {
    "report": "an HTML page",
    "audit": "this audit",
    "parquet": "reading Parquet",
    "postgres": "a PostgreSQL ledger",
    "ray": "engine='ray'",
    "lightning": "the Lightning callback",
    "huggingface": "the Hugging Face callback",
    "design": "labcoat.design",
    "logs": "labcoat logs (log templates)",
}


class MissingExtraError(LabcoatError, ImportError):
    """An optional library is not installed; the message names the ``pip install`` that fixes it.

    Also an ``ImportError``, so callers' ``except ImportError`` clauses keep working."""

    def __init__(self, message: str, extra: str) -> None:
        super().__init__(message)
        self.extra = extra


def install_hint(extra: str) -> str:
    return f'pip install "labcoat[{extra}]"'


def available(module: str) -> bool:
    """Whether ``module`` (a top-level name) can be imported, without importing it."""
    top = module.partition(".")[0]
    if top in sys.modules:  # imported already (or set to None: made unimportable)
        return sys.modules[top] is not None
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):  # a broken parent, or a module whose __spec__ is None
        return False


def missing(extra: str, modules: tuple[str, ...] | None = None) -> list[str]:
    """The modules of ``extra`` (or only ``modules`` of it) that are not installed."""
    if extra not in EXTRAS:
        raise KeyError(f"unknown extra {extra!r}; known: {', '.join(EXTRAS)}")
    return [m for m in (modules or EXTRAS[extra]) if not available(m)]


def _error(extra: str, names: list[str], purpose: str | None) -> MissingExtraError:
    what = purpose or PURPOSES.get(extra, f"labcoat[{extra}]")
    libs = " and ".join(names)
    verb = "is" if len(names) == 1 else "are"
    return MissingExtraError(
        f"{what} needs {libs}, which {verb} not installed; install it with: {install_hint(extra)}",
        extra,
    )


def require(extra: str, purpose: str | None = None, *, modules: tuple[str, ...] | None = None):
    """Raise :class:`MissingExtraError` (one line with the install command) unless every module
    of ``extra`` (or only ``modules`` of it) is installed. Loads nothing; call it before the
    work that will need the extra."""
    absent = missing(extra, modules)
    if absent:
        raise _error(extra, absent, purpose)


def import_module(module: str, extra: str, purpose: str | None = None) -> ModuleType:
    """Import ``module`` (which ``extra`` installs) or raise :class:`MissingExtraError`."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if isinstance(exc, MissingExtraError):
            raise
        top = module.partition(".")[0]
        # a missing dependency of the library itself is not the user's extra missing
        if exc.name is not None and exc.name.partition(".")[0] != top and available(top):
            raise
        raise _error(extra, [top], purpose) from None


__all__ = [
    "EXTRAS",
    "MissingExtraError",
    "available",
    "import_module",
    "install_hint",
    "missing",
    "require",
]
