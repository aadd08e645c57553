"""The package's import structure: no import-time cycle, and nothing heavy behind ``--help``.

A cycle is found two ways. Statically, from every module's top-level imports (the imports that
run when the module loads; those inside functions and ``TYPE_CHECKING`` blocks are lazy), as a
strongly connected component of the import graph: exhaustive and fast. Dynamically, each
top-level package's modules are imported leaves first with no labcoat module loaded (a forked
child per package, see tests/fresh_imports.py), where a cycle that a package ``__init__``'s
import order hides shows up as an ImportError.
"""

from __future__ import annotations

import ast
import functools
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fresh_imports import import_fresh

SRC = Path(__file__).resolve().parents[1] / "src"
HEAVY = ("torch", "scipy", "matplotlib", "ray")


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted((SRC / "labcoat").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _top_level_imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The labcoat modules ``name`` imports while it loads."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    todo = list(ast.parse(path.read_text()).body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.If):
            if not _is_type_checking(node):
                todo += node.body + node.orelse
        elif isinstance(node, ast.Try):
            todo += node.body + node.orelse + node.finalbody
            for handler in node.handlers:
                todo += handler.body
        elif isinstance(node, ast.Import):
            targets |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                targets.add(sub if sub in modules else base)
    return {t for t in targets if t in modules and t != name}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


@functools.cache  # parsed once for both tests; callers copy before planting an edge
def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph = {name: _top_level_imports(name, path, modules) for name, path in modules.items()}
    # a submodule may import from its own package's __init__ only for names the __init__ has
    # bound already; importing a sibling through the package is not a cycle through the parent
    for name in graph:
        graph[name] = {t for t in graph[name] if not name.startswith(t + ".")}
    return graph


def test_the_package_has_no_import_time_cycle():
    graph = _graph()
    assert len(graph) > 150
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_planted_cycle():
    graph = dict(_graph())
    graph["labcoat.findings"] = graph["labcoat.findings"] | {"labcoat.watch.alerts"}
    (cycle,) = _cycles(graph)
    assert {"labcoat.findings", "labcoat.watch.alerts"} <= set(cycle)


def _top_level_packages() -> list[str]:
    """The packages (folders) under labcoat; a single-file module is covered by the graph."""
    return sorted({n.split(".")[1] for n in _modules() if n.count(".") >= 2})


@pytest.fixture(scope="module")
def imported_leaves_first() -> dict[str, str]:
    """Package -> the error its modules raised when imported leaves first ('' when none)."""
    plan = {}
    for package in _top_level_packages():
        name = f"labcoat.{package}"
        mine = [n for n in _modules() if n == name or n.startswith(name + ".")]
        plan[package] = sorted(mine, key=lambda n: (-n.count("."), n))  # leaves first
    return import_fresh(plan)


# slow: the fresh interpreter loads every library labcoat's modules use (lightning, transformers,
# torch: ~10 s idle, ~19 s on a loaded machine); the fast tier keeps the static cycle check above
@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.parametrize("package", _top_level_packages())
def test_every_module_of_a_package_imports_leaves_first_in_a_fresh_interpreter(
    package, imported_leaves_first
):
    assert imported_leaves_first[package] == "", imported_leaves_first[package]


def test_import_and_help_load_no_heavy_library(subprocess_env):
    code = (
        "import contextlib, io, sys\n"
        "import labcoat\n"
        "from labcoat.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main(['--help']) == 0\n"
        f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", code],
        env=subprocess_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == []
