"""Load ``FILE.py[:NAME]``: a Python file whose function returns a :class:`labcoat.Experiment`.

The file is looked over before anything runs: that it exists, that it parses, and that it binds
``NAME`` at its top level (read from its syntax tree, so a file without the function says so
without running its top-level code, and without importing torch). Only then is it imported, with
``sys.argv`` set to ``[FILE.py, *args]`` as ``python FILE.py ARGS`` would set it, never to
labcoat's own command line.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from labcoat._validation import article
from labcoat.errors import InputError

if TYPE_CHECKING:
    from labcoat.doctor.api import Experiment
    from labcoat.doctor.result import Diagnosis

DEFAULT_FUNCTION = "experiment"

#: calls through which a module can bind names its syntax tree does not show
_DYNAMIC_CALLS = frozenset({"globals", "vars", "locals", "exec", "setattr", "__import__"})


def split_target(spec: str) -> tuple[Path, str]:
    """``FILE.py[:NAME]`` as (path, function name); a Windows drive letter is not a NAME."""
    path_text, _, name = spec.partition(":")
    if len(path_text) == 1 and name and name[:1] in "\\/":  # C:\\dir\\file.py[:NAME]
        path_text, _, name = spec[2:].partition(":")
        path_text = spec[:2] + path_text
    return Path(path_text), name or DEFAULT_FUNCTION


@dataclass(frozen=True)
class TopLevel:
    """What a file's syntax tree says its module binds, without running it."""

    names: frozenset[str]  # every name bound at module level (defs, imports, assignments)
    functions: tuple[str, ...]  # public functions defined there, sorted
    dynamic: bool  # a star import or globals()/exec/setattr: the tree cannot tell every name


def read_top_level(tree: ast.Module) -> TopLevel:
    names: set[str] = set()
    functions: list[str] = []
    dynamic = False
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            if not isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                functions.append(node.name)
            stack.extend(node.decorator_list)  # decorators run at import; bodies do not
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    dynamic = True
                else:
                    names.add(alias.asname or alias.name.partition(".")[0])
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _DYNAMIC_CALLS
        ):
            dynamic = True
        stack.extend(ast.iter_child_nodes(node))
    return TopLevel(frozenset(names), tuple(sorted(set(functions))), dynamic)


def check_file(spec: str) -> tuple[Path, str, ast.Module]:
    """The file and function ``spec`` names, looked over without running anything: an
    InputError when the file is missing, does not parse, or plainly lacks the function."""
    path, name = split_target(spec)
    if not path.is_file():
        found = "is a directory" if path.is_dir() else "no such file"
        raise InputError(
            f"{path}: {found}; pass a Python file defining {name}() -> labcoat.Experiment"
        )
    try:
        source = path.read_bytes()
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise InputError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from exc
    except (OSError, ValueError) as exc:  # unreadable, or a NUL byte in it
        raise InputError(f"{path}: cannot be read as Python source ({exc})") from exc
    top = read_top_level(tree)
    if name not in top.names and not top.dynamic:
        raise InputError(f"{path}: no function {name!r}{_defined_hint(top.functions)}")
    return path, name, tree


def _defined_hint(functions: Sequence[str]) -> str:
    return f"; functions defined there: {', '.join(functions)}" if functions else ""


@contextlib.contextmanager
def own_argv(argv: Sequence[str]) -> Iterator[None]:
    """``sys.argv`` as the file would see it run as a script, restored afterwards."""
    before = sys.argv
    sys.argv = list(argv)
    try:
        yield
    finally:
        sys.argv = before


def load_experiment(spec: str, args: Sequence[str] = ()) -> "Experiment":
    """Look the file over, import it with ``sys.argv = [FILE, *args]``, call the named function
    (default ``experiment``) and check what it returns."""
    path, name, tree = check_file(spec)
    from labcoat.doctor.api import Experiment  # torch: only once the file is worth importing

    with own_argv([str(path), *args]):
        module = _import(path)
        fn = getattr(module, name, None)
        if not callable(fn):
            found = read_top_level(tree).functions
            what = (
                "no function" if fn is None else f"{name!r} is {article(type(fn).__name__)}, not a"
            )
            label = f" {name!r}" if fn is None else " function"
            raise InputError(f"{path}: {what}{label}{_defined_hint(found)}")
        try:
            experiment = fn()
        except SystemExit as exc:  # would end labcoat with the user's exit code and no report
            raise InputError(
                f"{path}:{name}() called sys.exit({exc.code!r}); it must return "
                "labcoat.Experiment(...)"
            ) from exc
        except InputError as exc:  # labcoat.Experiment(...) refused one of its fields
            raise InputError(f"{path}:{name}(): {exc}") from exc
        except Exception as exc:  # noqa: BLE001 - the user's function failed
            raise InputError(f"{path}:{name}() raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(experiment, Experiment):
        raise InputError(
            f"{path}:{name}() returned {type(experiment).__name__}; it must return "
            "labcoat.Experiment(...)"
        )
    experiment.name = f"{path}:{name}"
    return experiment


def diagnose_file(spec: str, args: Sequence[str] = (), **overrides: Any) -> "Diagnosis":
    """What ``labcoat doctor FILE.py[:NAME] -- ARGS`` answers: the experiment ``spec`` names,
    loaded (:func:`load_experiment`) and diagnosed with ``overrides`` (the fields of
    :func:`labcoat.diagnose`: effort, seed, run_all, progress, ledger) in place of its own."""
    report = load_experiment(spec, args).diagnose(**overrides)
    report.target = spec
    return report


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
    except SystemExit as exc:  # a script's top-level sys.exit()
        raise InputError(
            f"{path}: importing it called sys.exit({exc.code!r}); put the script's top-level code "
            'under `if __name__ == "__main__":`'
        ) from exc
    except Exception as exc:  # noqa: BLE001
        raise InputError(f"{path}: importing it raised {type(exc).__name__}: {exc}") from exc
    finally:
        try:
            sys.path.remove(directory)
        except ValueError:
            pass
    return module
