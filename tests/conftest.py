"""Shared test helpers."""

from __future__ import annotations

import os
import shutil
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

# make test runs one pytest worker per core (xdist), and tests start subprocesses: one thread
# each for torch's and the BLAS libraries' pools (as the doctor and the watch tests already use),
# instead of every process starting one per core and the threads spinning against each other.
# Set before torch or numpy loads, and inherited by the workers and the subprocesses.
for _threads in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_threads, "1")


@dataclass
class CliResult:
    code: int
    out: str
    err: str


_SUMMARIES: list[str] = []
_CORPUS: Counter[str] = Counter()
#: "case: check: message" for every warning a healthy corpus setup gave (goal: none)
_CORPUS_WARNINGS: list[str] = []


def pytest_runtest_logreport(report):
    """Collect what tests file under the ``summary`` property and the corpus cases' outcomes
    (``corpus``: "healthy clean", "bug caught", ...); reports reach the main process from every
    xdist worker, so this sees them all."""
    if report.when == "call":
        for key, value in report.user_properties:
            if key == "summary":
                _SUMMARIES.append(str(value))
            elif key == "corpus":
                _CORPUS[str(value)] += 1
            elif key == "corpus_warning":
                _CORPUS_WARNINGS.append(str(value))


def corpus_summary(outcomes: Counter[str]) -> str | None:
    """The corpus's false-alarm and detection rates over the cases that ran, or None."""
    healthy = sum(n for k, n in outcomes.items() if k.startswith("healthy "))
    bugs = sum(n for k, n in outcomes.items() if k.startswith("bug "))
    if not healthy and not bugs:
        return None
    raised = outcomes["healthy raised"] + outcomes["bug raised"]
    return (
        f"corpus: false alarms {outcomes['healthy alarm']}/{healthy} healthy setups, warnings on "
        f"{outcomes['healthy warned']}/{healthy}; "
        f"detected {outcomes['bug caught']}/{bugs} real bugs at their layer"
        + (f"; {raised} cases raised" if raised else "")
    )


def pytest_terminal_summary(terminalreporter):
    corpus = corpus_summary(_CORPUS)
    for line in _SUMMARIES + ([corpus] if corpus else []):
        terminalreporter.write_line(line)
    for warning in sorted(_CORPUS_WARNINGS):
        terminalreporter.write_line(f"corpus warning: {warning}")


#: test files whose tests xdist may hand to different workers one by one: slow, independent
#: cases with no module-scoped state (every other file stays on one worker; see below)
SPREAD_ACROSS_WORKERS = frozenset(
    {"tests/corpus/test_corpus.py", "tests/watch/test_healthy_loops.py"}
)


#: files that run long on few tests, sent out first, in this order: xdist sends the files with the
#: most tests first, which left these to start last and one worker idle while they finished
#: (their durations are those of ``pytest --durations``; keep the list short, the heaviest only)
HEAVY_FIRST = (
    "tests/test_docs.py",  # each document is one test; README.md alone ~50 s
    "tests/scale/test_cli.py",
    "tests/doctor_controls/test_shuffle.py",
    "tests/doctor_controls/test_healthy.py",
    "tests/logs/test_steps.py",
    "tests/doctor/test_padded_lm_controls.py",
    "tests/doctor/test_cli.py",
    "tests/logs/test_why.py",
    "tests/scale/test_downstream.py",
    "tests/ledger/test_concurrency.py",
    "tests/scale/test_replication.py",
    "tests/report/test_stored_results.py",
)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``make test`` runs ``--dist loadfile``: each test file on one worker, so its module- and
    session-scoped fixtures (a Ray cluster, a browser, the documents' runs) are built once. The
    files in SPREAD_ACROSS_WORKERS are the exception: their tests are work units of their own,
    which xdist hands out last (it sends files with the most tests first), so the corpus's
    cases and the watch's healthy loops fill the workers evenly instead of running one after
    another on one of them. The files in HEAVY_FIRST go out before all others."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class LoadFileSpreading(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return nodeid if path in SPREAD_ACROSS_WORKERS else path

        def _assign_work_unit(self, node) -> None:
            for scope in reversed(HEAVY_FIRST):
                if scope in self.workqueue:
                    self.workqueue.move_to_end(scope, last=False)
            super()._assign_work_unit(node)

    return LoadFileSpreading(config, log)


@pytest.fixture(autouse=True)
def no_project_ledger(monkeypatch, tmp_path_factory):
    """Code that records only where a ledger exists (the doctor, the watch, stats) finds none:
    a test never writes into a ledger the developer keeps in this checkout."""
    monkeypatch.setenv(
        "LABCOAT_LEDGER", str(tmp_path_factory.getbasetemp() / "absent" / "ledger.db")
    )


@pytest.fixture
def cli(capsys):
    """Run ``labcoat ARGS...`` in-process; returns exit code, stdout and stderr."""
    from labcoat.cli.main import main

    def run(*args: str) -> CliResult:
        code = main([str(a) for a in args])
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


@pytest.fixture
def subprocess_env():
    """Environment for running ``python -m labcoat`` from this checkout's sources."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


@pytest.fixture
def python() -> str:
    return sys.executable


# -- which checks each test saw (a tool for keeping the check markers honest) --------
#: set LABCOAT_FINDINGS_LOG=DIR and every test's findings (check id, status) and watch alerts
#: (kind, severity) are appended to DIR/<pid>.jsonl, one line per test: the evidence for which
#: test plants a bug a check must catch and which is its healthy twin
_FINDINGS_LOG = os.environ.get("LABCOAT_FINDINGS_LOG")
_SEEN: set[tuple[str, str]] = set()
if _FINDINGS_LOG:
    sys.path.insert(0, str(SRC))
    import labcoat.findings as _findings
    import labcoat.watch.alerts as _alerts

    _finding_init = _findings.Finding.__init__
    _alert_init = _alerts.Alert.__init__

    def _record_finding(self, *args, **kwargs):
        _finding_init(self, *args, **kwargs)
        _SEEN.add((self.check, self.status))

    def _record_alert(self, *args, **kwargs):
        _alert_init(self, *args, **kwargs)
        _SEEN.add((self.kind, self.severity))

    _findings.Finding.__init__ = _record_finding
    _alerts.Alert.__init__ = _record_alert

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(item):
        _SEEN.clear()
        yield
        import json

        Path(_FINDINGS_LOG).mkdir(parents=True, exist_ok=True)
        with open(Path(_FINDINGS_LOG) / f"{os.getpid()}.jsonl", "a") as fh:
            fh.write(json.dumps({"test": item.nodeid, "seen": sorted(_SEEN, key=str)}) + "\n")


# -- the check contract: every registered check has a planted bug and a healthy twin -----------
# A test declares what it shows with a marker, and only with a marker, e.g.
#     @pytest.mark.check("doctor.data.signal.baseline", planted=True)   # it must fail (or warn)
#     @pytest.mark.check("doctor.data.signal.baseline", healthy=True)   # it must pass
#     @pytest.mark.check("doctor.update.ratio", planted=True, cases=["sgd-5"])  # these cases only
# (the key is "<engine>.<check id>", written once when the id already starts with the engine's
# name: "audit.labels", "watch.desync"). At collection every selected test's claims are gathered;
# tests/test_contract.py asserts that every registered check has both kinds among the fast tier's
# tests, and `python -m labcoat.dev checks-map` prints them.


def check_key(engine: str, check_id: str) -> str:
    return check_id if check_id.startswith(engine + ".") else f"{engine}.{check_id}"


def _declared_claims(items) -> dict[str, dict[str, list[str]]]:
    """check key -> {"planted": [nodeid, ...], "healthy": [...]}, from the ``check`` markers
    of the tests that were selected (``cases=``: only those parametrized cases)."""
    claims: dict[str, dict[str, list[str]]] = {}
    for item in items:
        case = item.nodeid.partition("[")[2][:-1]
        for mark in item.iter_markers("check"):
            kinds = [k for k in ("planted", "healthy") if mark.kwargs.get(k)]
            if not mark.args or not kinds:
                raise pytest.UsageError(
                    f"{item.nodeid}: @pytest.mark.check needs check keys and planted=True or "
                    "healthy=True"
                )
            cases = mark.kwargs.get("cases")
            if cases is not None and case not in cases:
                continue
            for key in mark.args:
                for kind in kinds:
                    claims.setdefault(key, {"planted": [], "healthy": []})[kind].append(item.nodeid)
    return claims


def contract_gaps(claims: dict[str, dict[str, list[str]]]) -> list[str]:
    """One line per registered check that lacks a planted bug or a healthy twin."""
    sys.path.insert(0, str(SRC))
    from labcoat.engines import registries

    gaps = []
    for registry in registries():
        for check in registry:
            key = check_key(registry.engine, check.id)
            have = claims.get(key, {})
            missing = [k for k in ("planted", "healthy") if not have.get(k)]
            if missing:
                gaps.append(f"{key}: no {' and no '.join(missing)} test in the fast tier")
    return gaps


def pytest_collection_finish(session):
    """Gather the fast tier's check claims (the selected tests not marked slow) once
    collection and ``-m`` are done."""
    fast = [item for item in session.items if not item.get_closest_marker("slow")]
    session.config._check_claims = _declared_claims(fast)
    dump = os.environ.get("LABCOAT_CONTRACT_DUMP")
    if dump:
        import json

        Path(dump).write_text(json.dumps(session.config._check_claims))


def pytest_configure(config):
    for service in SERVICES:
        config.addinivalue_line(
            "markers", f"{service}: needs {service} (slow: only in make test-all)"
        )
    config.addinivalue_line(
        "markers",
        "check(*keys, planted=False, healthy=False, cases=None): the test plants a bug the named "
        "checks must catch (planted) or is a healthy setup they must pass (healthy); cases: only "
        "these parametrized cases; see tests/conftest.py",
    )


# -- the slow tier: services and long runs (make test-all; make test runs -m "not slow") --------
#: fixture -> the service marker a test using it gets (besides ``slow``): PostgreSQL starts a
#: server, Chromium a browser; tests/audit/test_ray.py and tests/watch/test_distributed.py mark
#: themselves (``ray``, ``distributed``)
SERVICE_FIXTURES = {
    "postgres_server": "postgres",
    "pg_database": "postgres",
    "pg_url": "postgres",
    "browser": "chromium",
    "open_report": "chromium",
}
SERVICES = ("postgres", "chromium", "ray", "distributed")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Before ``-m`` selects: a test that needs a service is ``slow`` and carries the service's
    marker (``-m postgres`` runs only those). A ledger test parametrized over backends is
    slow only in its PostgreSQL case."""
    for item in items:
        services = {SERVICE_FIXTURES[f] for f in item.fixturenames if f in SERVICE_FIXTURES}
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("location") == "postgres":
            services.add("postgres")
        services |= {s for s in SERVICES if item.get_closest_marker(s)}
        for service in sorted(services):
            item.add_marker(getattr(pytest.mark, service))
        if services and not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow)


# Reports are opened in headless Chromium (Debian's ``chromium``) through Playwright, one
# browser per test process for every test folder (a second Playwright in one process fails);
# the browser tests skip cleanly where either is missing.
CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)


@dataclass
class Opened:
    """A report as the browser shows it, with what it asked for and complained about."""

    page: object
    requests: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)


@pytest.fixture(scope="session")
def browser():
    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


@pytest.fixture
def open_report(browser, tmp_path):
    """``open_report(path, width=..., dark=...)`` → :class:`Opened`; a screenshot lands in
    tmp_path."""
    contexts = []

    def open_(path, *, width: int = 1100, height: int = 800, dark: bool = False) -> Opened:
        ctx = browser.new_context(
            viewport={"width": width, "height": height}, color_scheme="dark" if dark else "light"
        )
        contexts.append(ctx)
        page = ctx.new_page()
        opened = Opened(page)
        page.on("request", lambda r: opened.requests.append(r.url))
        page.on(
            "console", lambda m: opened.console_errors.append(m.text) if m.type == "error" else None
        )
        page.on("pageerror", lambda e: opened.console_errors.append(str(e)))
        page.goto(path.resolve().as_uri())
        page.wait_for_load_state("load")
        page.screenshot(
            path=str(tmp_path / f"{path.stem}-{width}{'-dark' if dark else ''}.png"), full_page=True
        )
        opened.requests = [u for u in opened.requests if u != path.resolve().as_uri()]
        return opened

    yield open_
    for ctx in contexts:
        ctx.close()
