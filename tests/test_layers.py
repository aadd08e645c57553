"""Layers point down only, and no module reaches its way back to itself.

Every module's edges are read with ``ast``: its imports (lazy imports inside functions included;
imports under ``if TYPE_CHECKING:`` are not, since they never run) and its references, the
``"labcoat.x"`` / ``"labcoat.x:y"`` strings that a lazy table (``lazy(...)``), a result's
``view``/``section`` or an engine's declaration resolves on use. An import may point to its own
layer or a lower one, never a higher one (but for :data:`ALLOWED_UP`). A reference may point up:
it names what a higher layer provides, and only that layer resolves it. Cycles are looked for
over every edge, imports, references and the allowed ones alike: a cycle through a lazy import
or a reference is no failure at import time, but the modules in it cannot be used, tested or
changed apart.
"""

from __future__ import annotations

import ast
import functools
import re
from collections import defaultdict
from pathlib import Path

import pytest

import labcoat

SRC = Path(labcoat.__file__).parent

#: lowest first; a name is a module or a package (its submodules inherit its layer)
LAYERS: list[tuple[str, ...]] = [
    (
        "labcoat.errors",
        "labcoat._version",
        "labcoat._jsonable",
        "labcoat._validation",
        "labcoat._groups",
        "labcoat._moved",
        "labcoat._lazy",
        "labcoat.extras",
        "labcoat.outputs",
        "labcoat.interval",
        "labcoat.findings",
        "labcoat.descriptor",
        "labcoat.result",
        "labcoat.view",
        "labcoat.modes",
        "labcoat.optim",
        "labcoat.params",
    ),
    ("labcoat.provenance",),
    ("labcoat.ledger",),
    ("labcoat.stats", "labcoat.scale", "labcoat.audit"),
    ("labcoat.doctor", "labcoat.watch", "labcoat.logs"),
    ("labcoat.replay", "labcoat.verdicts", "labcoat.evals", "labcoat.design"),
    ("labcoat.engines",),  # names every engine's declaration; no engine imports it
    ("labcoat.report",),
    ("labcoat.cli", "labcoat.__main__", "labcoat", "labcoat.dev"),
]

#: upward imports that are part of a protocol, each with its reason (kept lazy, inside the
#: method that needs it)
ALLOWED_UP = {
    ("labcoat.result", "labcoat.report.html"): "Result.to_html: every result draws a page",
    ("labcoat.result", "labcoat.ledger.persist"): (
        "Result.record: a one-line delegate to labcoat.ledger.record, the one persist path "
        "(which imports nothing of any engine, so no cycle runs through it)"
    ),
    ("labcoat.findings", "labcoat.engines"): (
        "deprecated: labcoat.findings.ENGINES/registries/catalogue answer from labcoat.engines "
        "for one release"
    ),
    ("labcoat.ledger.ledger", "labcoat.verdicts"): (
        "deprecated: Ledger.verdict, hypothesis(plan=) and the plan methods delegate to "
        "labcoat.verdicts for one release (the ledger itself judges nothing)"
    ),
}


def _modules() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


@functools.cache
def _trees() -> dict[str, ast.Module]:
    """Every module's syntax tree, parsed once for the tests that read them all."""
    return {name: ast.parse(path.read_text(), str(path)) for name, path in _modules().items()}


def _type_checking_only(tree: ast.AST) -> set[int]:
    """ids of the import nodes under ``if TYPE_CHECKING:``."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                skip.update(id(n) for n in ast.walk(child))
    return skip


def references(tree: ast.AST, modules) -> list[tuple[str, int]]:
    """(module, line) of every ``"labcoat.x:y"`` string naming a module, and of every
    ``"labcoat.x"`` in a lazy table (a logger's name is no reference)."""
    tables = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign) and "_LAZY" in ast.unparse(node)[:20]:
            tables.update(id(n) for n in ast.walk(node))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            m = REFERENCE.fullmatch(node.value)
            if m and m.group(1) in modules and (m.group(2) or id(node) in tables):
                found.append((m.group(1), node.lineno))
    return found


REFERENCE = re.compile(r"(labcoat(?:\.\w+)+)(:\w+)?")


@functools.cache
def reference_edges() -> tuple[tuple[str, str, int], ...]:
    """(holder, referenced labcoat module, line) for every reference a lazy table, a result's
    views or an engine's declaration holds."""
    modules = _modules()
    return tuple(
        (name, target, line)
        for name, tree in _trees().items()
        for target, line in references(tree, modules)
        if target != name
    )


@functools.cache
def import_edges() -> tuple[tuple[str, str, int], ...]:
    """(importer, imported labcoat module, line) for every import that can run."""
    modules = _modules()
    edges = []
    for name, tree in _trees().items():
        path = modules[name]
        skip = _type_checking_only(tree)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(tree):
            if id(node) in skip or not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                targets = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                    for a in node.names
                ]
            for target in targets:
                while target not in modules and "." in target:
                    target = target.rpartition(".")[0]
                if target in modules and target != name and target.startswith("labcoat"):
                    edges.append((name, target, node.lineno))
    return tuple(edges)


def layer_of(module: str) -> int:
    best = None
    for i, names in enumerate(LAYERS):
        for n in names:
            if (module == n or module.startswith(n + ".")) and (best is None or len(n) > best[1]):
                best = (i, len(n))
    assert best is not None, f"{module} is in no declared layer; add it to LAYERS"
    return best[0]


def _allowed(a: str, b: str) -> bool:
    return any(
        (a == x or a.startswith(x + ".")) and (b == y or b.startswith(y + "."))
        for x, y in ALLOWED_UP
    )


def upward(edges) -> list[str]:
    return [
        f"{a}:{line} imports {b} (layer {layer_of(a)} -> {layer_of(b)})"
        for a, b, line in edges
        if layer_of(b) > layer_of(a) and not _allowed(a, b)
    ]


#: edges kept out of the cycle search until they are gone, each with when it goes: a deprecated
#: alias runs only for code that still calls the old name
PENDING = {
    ("labcoat.findings", "labcoat.engines"): "the deprecated aliases go in the next release",
    ("labcoat.ledger.ledger", "labcoat.verdicts"): "the deprecated delegates go next release",
}


def _pending(a: str, b: str) -> bool:
    return any(
        (a == x or a.startswith(x + ".")) and (b == y or b.startswith(y + ".")) for x, y in PENDING
    )


def cycles(edges) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), over every edge (but
    the :data:`PENDING` ones)."""
    graph = defaultdict(set)
    for a, b, _ in edges:
        if not _pending(a, b):
            graph[a].add(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_every_module_is_in_a_declared_layer():
    for module in _modules():
        layer_of(module)


def test_no_import_points_up_the_layers():
    assert upward(import_edges()) == []


def test_no_cycles_over_imports_lazy_imports_and_references():
    assert cycles(import_edges() + reference_edges()) == []


def test_references_are_read_from_lazy_tables_views_and_declarations():
    tree = ast.parse(
        '_LAZY = {"mean": "labcoat.stats.mean:mean"}\n'
        'class R:\n    section = "labcoat.report.sections.stats:stats_section"\n'
        'DECLARED = ("labcoat.doctor._engine:ENGINE",)\nlog = "labcoat.watch"\n'
    )
    found = [m for m, _ in references(tree, _modules())]
    assert found == [
        "labcoat.stats.mean",
        "labcoat.report.sections.stats",
        "labcoat.doctor._engine",
    ]


def test_the_only_upward_imports_left_are_the_declared_ones():
    """Every allowed upward import still exists (a stale allowance would hide a new one)."""
    edges = import_edges()
    for x, y in ALLOWED_UP:
        assert any(
            (a == x or a.startswith(x + ".")) and (b == y or b.startswith(y + "."))
            for a, b, _ in edges
        ), f"ALLOWED_UP names {x} -> {y}, which no module imports any more: remove it"


def test_the_checks_catch_a_planted_upward_import_and_a_planted_cycle():
    """The healthy graph passes above; these planted edges must fail."""
    planted_up = [("labcoat.stats.mean", "labcoat.doctor.api", 1)]
    assert upward(planted_up) == ["labcoat.stats.mean:1 imports labcoat.doctor.api (layer 3 -> 4)"]
    assert upward([("labcoat.doctor.api", "labcoat.stats.mean", 1)]) == []
    planted_cycle = [("labcoat.a", "labcoat.b", 1), ("labcoat.b", "labcoat.c", 2)]
    assert cycles(planted_cycle) == []
    assert cycles([*planted_cycle, ("labcoat.c", "labcoat.a", 3)]) == [
        ["labcoat.a", "labcoat.b", "labcoat.c"]
    ]


def test_lazy_imports_count_and_type_checking_imports_do_not(tmp_path):
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from labcoat.doctor import api\n"
        "def f():\n    from labcoat.report import html\n"
    )
    skip = _type_checking_only(tree)
    imports = [
        n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and id(n) not in skip
    ]
    assert imports == ["typing", "labcoat.report"]


MOVED = {
    "labcoat.render": ("labcoat.view", "findings_table"),
    "labcoat.stats.render": ("labcoat.stats.view", "mean_view"),
    "labcoat.scale.render": ("labcoat.scale.view", "fit_view"),
    "labcoat.ledger.views": ("labcoat.ledger.view", "entry_view"),
    "labcoat.doctor.report": ("labcoat.doctor.result", "Report"),
    "labcoat.watch.report": ("labcoat.watch.result", "WatchReport"),
    "labcoat.doctor.setup": ("labcoat.doctor.copies", "Blueprint"),
    "labcoat.doctor.loader": ("labcoat.doctor.experiment_file", "load_experiment"),
    "labcoat.doctor.dataloader": ("labcoat.doctor.loader_batches", "uses_workers"),
    "labcoat.doctor.checks.loader": ("labcoat.doctor.checks.dataloader", "Outcome"),
}


@pytest.mark.slow  # imports the doctor (torch)
def test_a_moved_module_keeps_its_old_path_one_release_and_says_where_it_went():
    import importlib

    for old, (new, name) in MOVED.items():
        module = importlib.import_module(old)
        with pytest.warns(DeprecationWarning, match=f"{old} moved to {new}"):
            found = getattr(module, name)
        assert found is getattr(importlib.import_module(new), name)


def private_imports(sources: dict[str, str | ast.AST]) -> list[str]:
    """``from labcoat.x import _helper`` where ``x`` is not itself a private shared module: a
    module reaching into another's private helpers (share them from one ``_module`` instead).
    ``sources``: module name -> its text or its parsed tree."""
    found = []
    for name, text in sources.items():
        tree = text if isinstance(text, ast.AST) else ast.parse(text)
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith(
                "labcoat"
            ):
                continue
            if node.module.rpartition(".")[2].startswith("_"):
                continue
            found += [
                f"{name}:{node.lineno} imports {node.module}.{a.name}"
                for a in node.names
                if a.name.startswith("_")
                and not a.name.startswith("__")
                and f"{node.module}.{a.name}" not in sources  # a package's own private module
            ]
    return found


def test_no_module_imports_another_modules_private_helpers():
    assert private_imports(_trees()) == []
    planted = {"labcoat.stats.effects": "from labcoat.stats.compare import _paired_iv\n"}
    assert private_imports(planted) == [
        "labcoat.stats.effects:1 imports labcoat.stats.compare._paired_iv"
    ]
    shared = {"labcoat.stats.effects": "from labcoat.stats._questions import paired_questions\n"}
    assert private_imports(shared) == []
    module = {
        "labcoat.evals.compare": "from labcoat.evals import _design\n",
        "labcoat.evals._design": "",
    }
    assert private_imports(module) == []
