"""The contract every check keeps: a planted bug it catches and a healthy twin it passes.

For every check registered in any engine (``labcoat.findings.registries()``), at least one test
of the fast tier (``make test``, ``-m "not slow"``) plants a bug the check must fail (or warn
on), and at least one gives it a healthy setup it must pass. Tests declare this with
``@pytest.mark.check(KEY, planted=True)`` / ``healthy=True`` markers, the one place a test says
which check it shows; the claims are gathered at collection (tests/conftest.py). Run alone, this
test collects the fast tier in a subprocess to see them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import _declared_claims, check_key, contract_gaps

ROOT = Path(__file__).resolve().parents[1]


def _whole_fast_tier_collected(config) -> bool:
    """True when this session collected every test file (as make test and make test-all do),
    so its claims (gathered from the tests not marked slow) are the fast tier's."""
    args = [Path(a.split("::", 1)[0]).resolve() for a in config.args] or [ROOT]
    tests = ROOT / "tests"
    whole = all(a in (ROOT, tests) for a in args)
    selection = config.getoption("markexpr", "") in ("", "not slow")
    return whole and selection and not config.getoption("keyword", "")


def fast_tier_claims(config, tmp_path: Path) -> dict[str, dict[str, list[str]]]:
    claims = getattr(config, "_check_claims", None)
    if claims is not None and _whole_fast_tier_collected(config):
        return claims
    dump = tmp_path / "claims.json"
    env = dict(os.environ, LABCOAT_CONTRACT_DUMP=str(dump))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "-m",
            "not slow",
            str(ROOT / "tests"),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(dump.read_text())


def test_every_registered_check_has_a_planted_bug_and_a_healthy_twin(request, tmp_path):
    gaps = contract_gaps(fast_tier_claims(request.config, tmp_path))
    assert not gaps, "checks without their tests:\n" + "\n".join(gaps)


def test_the_contract_sees_markers_and_their_cases_and_misses_gaps():
    """The machinery itself: a marker counts (its ``cases`` only), a missing kind is a gap."""

    class Item:
        def __init__(self, nodeid, marks=()):
            self.nodeid, self._marks = nodeid, list(marks)

        def iter_markers(self, name):
            return iter(m for m in self._marks if m.name == name)

    planted = pytest.mark.check("doctor.data.finite", planted=True).mark
    items = [Item("tests/x.py::test_nan", [planted]), Item("tests/x.py::test_case[a]")]
    claims = _declared_claims(items)
    assert claims["doctor.data.finite"]["planted"] == ["tests/x.py::test_nan"]
    assert not claims["doctor.data.finite"]["healthy"]
    gaps = contract_gaps(claims)
    assert "doctor.data.finite: no healthy test in the fast tier" in gaps
    assert check_key("audit", "audit.labels") == "audit.labels"
    assert check_key("watch", "desync") == "watch.desync"
    with pytest.raises(pytest.UsageError):
        _declared_claims([Item("tests/x.py::t", [pytest.mark.check("watch.desync").mark])])
    one_case = pytest.mark.check("watch.desync", healthy=True, cases=["a"]).mark
    cases = [
        Item("tests/x.py::test_case[a]", [one_case]),
        Item("tests/x.py::test_case[b]", [one_case]),
    ]
    assert _declared_claims(cases)["watch.desync"]["healthy"] == ["tests/x.py::test_case[a]"]


class _FakeItem:
    """Just what the tiering hook reads and writes of a pytest item."""

    def __init__(self, fixturenames=(), params=None, marks=()):
        self.fixturenames = list(fixturenames)
        self.marks = set(marks)
        if params is not None:
            self.callspec = type("CallSpec", (), {"params": params})()

    def get_closest_marker(self, name):
        return name if name in self.marks else None

    def add_marker(self, mark):
        self.marks.add(mark.name)


def test_a_test_that_needs_a_service_leaves_the_fast_tier_and_a_plain_one_stays():
    from tests.conftest import pytest_collection_modifyitems

    postgres = _FakeItem(["tmp_path", "pg_url"])
    browser = _FakeItem(["open_report"])
    sqlite_case = _FakeItem(["location"], params={"location": "sqlite"})
    postgres_case = _FakeItem(["location"], params={"location": "postgres"})
    ray = _FakeItem(marks={"ray"})
    plain = _FakeItem(["tmp_path"])
    pytest_collection_modifyitems(None, [postgres, browser, sqlite_case, postgres_case, ray, plain])
    assert postgres.marks == {"slow", "postgres"} and postgres_case.marks == {"slow", "postgres"}
    assert browser.marks == {"slow", "chromium"} and ray.marks == {"slow", "ray"}
    assert sqlite_case.marks == set() and plain.marks == set()
