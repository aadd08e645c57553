"""Load ``FILE.py[:NAME]``: a Python file whose function returns a :class:`labcoat.Experiment`."""

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path

from labcoat.doctor.api import Experiment
from labcoat.errors import InputError

DEFAULT_FUNCTION = "experiment"


def load_experiment(spec: str) -> Experiment:
    """Import the file, call the named function (default ``experiment``), check what it returns."""
    path_text, _, name = spec.partition(":")
    if len(path_text) == 1 and name and name[:1] in "\\/":  # a Windows drive letter, not FILE:NAME
        path_text, _, name = spec[2:].partition(":")
        path_text = spec[:2] + path_text
    name = name or DEFAULT_FUNCTION
    path = Path(path_text)
    if not path.is_file():
        found = "is a directory" if path.is_dir() else "no such file"
        raise InputError(
            f"{path_text}: {found}; pass a Python file defining {name}() -> labcoat.Experiment"
        )
    module = _import(path)
    fn = getattr(module, name, None)
    if not callable(fn):
        found = sorted(
            n
            for n, v in vars(module).items()
            if inspect.isfunction(v) and v.__module__ == module.__name__ and not n.startswith("_")
        )
        hint = f"; functions defined there: {', '.join(found)}" if found else ""
        raise InputError(f"{path}: no function {name!r}{hint}")
    try:
        experiment = fn()
    except SystemExit as exc:  # would otherwise end labcoat with the user's exit code and no report
        raise InputError(
            f"{path}:{name}() called sys.exit({exc.code!r}); it must return labcoat.Experiment(...)"
        ) from exc
    except Exception as exc:  # noqa: BLE001 - the user's function failed
        raise InputError(f"{path}:{name}() raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(experiment, Experiment):
        raise InputError(
            f"{path}:{name}() returned {type(experiment).__name__}; it must return "
            "labcoat.Experiment(...)"
        )
    experiment.name = f"{path}:{name}"
    return experiment


def _import(path: Path):
    directory = str(path.resolve().parent)
    module_name = f"labcoat_experiment_{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise InputError(f"{path}: not an importable Python file")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, directory)  # so the file can import its neighbours
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        raise InputError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from exc
    except (
        SystemExit
    ) as exc:  # a script's top-level sys.exit(); keep its work under `if __name__ == "__main__":`
        raise InputError(
            f"{path}: importing it called sys.exit({exc.code!r}); put the script's "
            "top-level code under "
            '`if __name__ == "__main__":`'
        ) from exc
    except Exception as exc:  # noqa: BLE001
        raise InputError(f"{path}: importing it raised {type(exc).__name__}: {exc}") from exc
    finally:
        try:
            sys.path.remove(directory)
        except ValueError:
            pass
    return module
