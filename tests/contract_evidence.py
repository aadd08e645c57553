"""Which tests show each check failing and passing: evidence for the tests' check markers.

Run the suite with ``LABCOAT_FINDINGS_LOG=DIR`` (tests/conftest.py then logs, per test, every
finding's check and status and every watch alert's kind and severity), then

    python tests/contract_evidence.py DIR [--fast FAST.txt]

prints, for every registered check, the tests that saw it fail or warn (planted candidates) and
pass (healthy candidates), those whose source names the check first. ``FAST.txt`` (the output
of ``pytest --collect-only -q -m "not slow"``) keeps only fast-tier tests. A candidate is not
proof: read the test before declaring it, as it must assert what the check concluded.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _function_source(nodeid: str, cache: dict[str, str]) -> str:
    path, _, rest = nodeid.partition("::")
    name = rest.split("[")[0].split("::")[-1]
    if path not in cache:
        cache[path] = (ROOT / path).read_text(encoding="utf-8")
    text = cache[path]
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return ast.get_source_segment(text, node) or ""
    return ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log_dir", type=Path)
    parser.add_argument("--fast", type=Path, default=None)
    parser.add_argument("--top", type=int, default=3)
    args = parser.parse_args()
    sys.path[:0] = [str(ROOT / "src"), str(ROOT)]
    from labcoat.engines import registries
    from tests.conftest import check_key

    seen: dict[str, list[tuple[str, str]]] = {}
    for log in args.log_dir.glob("*.jsonl"):
        for line in log.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            seen[row["test"]] = [tuple(x) for x in row["seen"]]
    fast = None
    if args.fast:
        fast = {ln.strip() for ln in args.fast.read_text().splitlines() if "::" in ln}
    keys = {c.id: check_key(r.engine, c.id) for r in registries() for c in r}
    candidates: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for test, items in seen.items():
        if fast is not None and test not in fast:
            continue
        for check, status in items:
            if check in keys and status != "skip":
                kind = "healthy" if status == "pass" else "planted"
                candidates[keys[check]][kind].append(test)
    sources: dict[str, str] = {}
    for raw, key in keys.items():
        print(key)
        for kind in ("planted", "healthy"):
            tests = sorted(
                set(candidates[key][kind]),
                key=lambda t: (raw not in _function_source(t, sources), t),
            )
            for test in tests[: args.top] or ["(none)"]:
                print(f"  {kind:8s} {test}")


if __name__ == "__main__":
    main()
