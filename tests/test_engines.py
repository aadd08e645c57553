"""The engines are declared once (``labcoat/<engine>/_engine.py``, listed in labcoat.engines) and
every consumer iterates that list: no other engine list may be written out in the source."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import labcoat
from labcoat import engines
from labcoat.descriptor import Engine

SRC = Path(labcoat.__file__).parent


def engine_lists(sources: dict[str, str], names: set[str]) -> list[str]:
    """``path:line`` of every tuple, list or set literal, and every dict's keys, holding three
    or more engine names: a hand-kept engine list that will drift from the descriptors."""
    found = []
    for path, text in sources.items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Tuple | ast.List | ast.Set):
                items = node.elts
            elif isinstance(node, ast.Dict):
                items = [k for k in node.keys if k is not None]
            else:
                continue
            held = {i.value for i in items if isinstance(i, ast.Constant)} & names
            if len(held) >= 3:
                found.append(f"{path}:{node.lineno} lists {sorted(held)}")
    return found


#: tables whose keys are other names that happen to be spelled like engines, each with why
NOT_ENGINE_LISTS = {
    "__init__.py": "labcoat's lazy attributes: labcoat.watch, labcoat.scale, ... are packages",
    "cli/main.py": "COMMANDS: command name -> click command; the engines' commands and their help "
    "come from the descriptors (test below)",
    "extras.py": "EXTRAS/PURPOSES: pip extras (pyproject's optional-dependencies), some named "
    "after the engine they install libraries for",
}


def test_no_engine_list_is_written_out_anywhere_in_the_source():
    sources = {str(p.relative_to(SRC)): p.read_text() for p in SRC.rglob("*.py")}
    found = engine_lists(sources, set(engines.names()))
    assert [f for f in found if f.partition(":")[0] not in NOT_ENGINE_LISTS] == []
    assert {f.partition(":")[0] for f in found} == set(NOT_ENGINE_LISTS), "a stale exemption"


def test_the_scan_catches_a_planted_list_and_passes_two_names():
    names = {"doctor", "watch", "stats", "audit"}
    planted = {
        "a.py": 'SOURCES = ("doctor", "watch", "stats")\n',
        "b.py": 'SECTIONS = {"doctor": 1, "watch": 2, "audit": 3}\n',
        "c.py": 'click.Choice(["doctor", "watch"])\n',
    }
    assert engine_lists(planted, names) == [
        "a.py:1 lists ['doctor', 'stats', 'watch']",
        "b.py:1 lists ['audit', 'doctor', 'watch']",
    ]


def test_every_engine_declares_itself_and_its_registry_agrees():
    found = engines.engines()
    assert [e.name for e in found] == list(engines.names()) and len(found) >= 8
    for engine, registry in zip(found, engines.registries()):
        assert isinstance(engine, Engine) and engine.summary and engine.results
        assert registry.engine == engine.name, f"{engine.registry} registers {registry.engine}"
    assert "ledger" not in engines.names() and "report" not in engines.names()


def test_an_engines_commands_are_cli_commands_and_their_help_comes_from_the_descriptor():
    from labcoat.cli import main

    for engine in engines.engines():
        for name, help in engine.commands.items():
            assert name in main.COMMANDS, f"{engine.name} declares a command the CLI lacks"
            assert main.summaries()[name] == help


def test_a_declaration_imports_only_the_descriptor():
    for path in SRC.glob("*/_engine.py"):
        tree = ast.parse(path.read_text())
        imported = [
            n.module if isinstance(n, ast.ImportFrom) else a.name
            for n in ast.walk(tree)
            if isinstance(n, ast.Import | ast.ImportFrom)
            for a in n.names
        ]
        assert set(imported) <= {"labcoat.descriptor", "__future__"}, path


def test_reading_the_declarations_imports_no_engine(subprocess_env):
    code = (
        "import sys\nfrom labcoat import engines\nengines.engines()\n"
        "heavy = [m for m in ('numpy', 'scipy', 'torch', 'labcoat.stats', 'labcoat.scale') "
        "if m in sys.modules]\nprint(heavy)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=subprocess_env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_an_unknown_engine_is_refused_in_one_line():
    from labcoat.errors import InputError

    with pytest.raises(InputError, match="engine: expected one of doctor, watch"):
        engines.get("nope")
    with pytest.raises(ValueError, match="'registry' must not be empty"):
        Engine("x", "summary", "", ())


def test_the_checks_map_lists_each_checks_planted_and_healthy_tests():
    from labcoat.dev import checks_map

    claims = {"doctor.data.finite": {"planted": ["t::nan"], "healthy": ["t::ok"]}}
    rows = {r["check"]: r for r in checks_map(claims)}
    assert rows["doctor.data.finite"]["planted"] == ["t::nan"]
    assert rows["doctor.data.finite"]["healthy"] == ["t::ok"]
    assert rows["watch.nonfinite"] == {
        "engine": "watch",
        "check": "watch.nonfinite",
        "planted": [],
        "healthy": [],
    }
    assert len(rows) == len(engines.catalogue())


def test_the_checks_map_outside_a_clone_says_so(tmp_path, monkeypatch, capsys):
    from labcoat.dev import main

    monkeypatch.chdir(tmp_path)
    assert main(["checks-map"]) == 2
    assert "no labcoat clone here" in capsys.readouterr().err


def test_the_cli_options_that_name_an_engine_offer_every_engine():
    from labcoat.cli.doctor import checks
    from labcoat.cli.ledger import findings_command

    for command, option in ((findings_command, "source"), (checks, "engine")):
        (param,) = [p for p in command.params if p.name == option]
        assert tuple(param.type.choices) == engines.names(), command.name
