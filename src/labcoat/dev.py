"""Tools for working on labcoat itself, run from a clone: ``python -m labcoat.dev checks-map``.

``checks-map`` prints, for every check every engine declares, the tests that plant the bug it
must catch and the healthy twins it must pass: the ``@pytest.mark.check`` markers on the tests,
gathered by collecting the fast tier (``pytest --collect-only``), so the map cannot drift from
the tests. ``--json`` prints the same as one object.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Sequence

from labcoat.errors import InputError


def _root(start: Path) -> Path:
    for folder in (start, *start.parents):
        if (folder / "tests" / "conftest.py").is_file() and (folder / "pyproject.toml").is_file():
            return folder
    raise InputError(
        "checks-map: no labcoat clone here (a folder with pyproject.toml and tests/conftest.py); "
        "run it from the repository"
    )


def collected_claims(root: Path) -> dict[str, dict[str, list[str]]]:
    """check key -> {"planted": [test ids], "healthy": [...]}, from the fast tier's markers."""
    with tempfile.TemporaryDirectory() as tmp:
        dump = Path(tmp) / "claims.json"
        env = dict(os.environ, LABCOAT_CONTRACT_DUMP=str(dump))
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(root / "src"), env.get("PYTHONPATH", "")) if p
        )
        command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:xdist"]
        proc = subprocess.run(
            [*command, "-p", "no:cacheprovider", "-m", "not slow", "tests"],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0 or not dump.is_file():
            raise InputError(f"checks-map: collecting the tests failed:\n{proc.stdout[-2000:]}")
        return json.loads(dump.read_text())


def checks_map(claims: dict[str, dict[str, list[str]]]) -> list[dict[str, Any]]:
    """One row per declared check (engine order): its key and its planted and healthy tests."""
    from labcoat.engines import registries

    rows = []
    for registry in registries():
        for check in registry:
            key = (
                check.id
                if check.id.startswith(registry.engine + ".")
                else (f"{registry.engine}.{check.id}")
            )
            have = claims.get(key, {})
            rows.append(
                {
                    "engine": registry.engine,
                    "check": key,
                    "planted": sorted(have.get("planted", [])),
                    "healthy": sorted(have.get("healthy", [])),
                }
            )
    return rows


def _print_map(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        print(row["check"])
        for kind in ("planted", "healthy"):
            tests = row[kind] or ["MISSING"]
            for test in tests:
                print(f"  {kind:8s} {test}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m labcoat.dev", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    mapping = commands.add_parser("checks-map", help="each check's planted and healthy tests")
    mapping.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args(argv)
    try:
        rows = checks_map(collected_claims(_root(Path.cwd())))
    except InputError as exc:
        print(f"labcoat.dev: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"checks": rows}, indent=2))
    else:
        _print_map(rows)
    missing = [r["check"] for r in rows if not (r["planted"] and r["healthy"])]
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
