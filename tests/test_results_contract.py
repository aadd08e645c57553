"""One result protocol: every engine's result subclasses :class:`labcoat.result.Result`, declares
its views on the type, records through ``result.record(ledger)``, and every finding it stores
names a registered check."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch
from torch import nn

import labcoat
from labcoat.findings import ENGINES, registries
from labcoat.result import Result, load

#: every engine's result class, as "module:Class"
RESULTS = [
    "labcoat.doctor.result:Report",
    "labcoat.stats.mean:MeanResult",
    "labcoat.stats.compare:CompareResult",
    "labcoat.stats.compare:ExclusionResult",
    "labcoat.stats.gate:GateResult",
    "labcoat.stats.leaderboard:LeaderboardResult",
    "labcoat.scale.result:ScalingFit",
    "labcoat.scale.backtest:BacktestResult",
    "labcoat.audit.label_errors:LabelIssues",
    "labcoat.audit.near_duplicates:Duplicates",
    "labcoat.audit.benchmark_contamination:Contamination",
    "labcoat.audit.group_leakage:SharedGroups",
    "labcoat.watch.result:WatchReport",
    "labcoat.watch.watcher:Watcher",
    "labcoat.logs.result:LogsReport",
]


@pytest.mark.parametrize("ref", RESULTS)
def test_every_engines_result_is_a_result_with_its_views_on_the_type(ref):
    cls = load(ref)
    assert issubclass(cls, Result)
    assert cls.engine in ENGINES, f"{ref} records under an engine no registry lists"
    assert isinstance(cls.section, str) and callable(load(cls.section))
    assert cls.view is None or callable(load(cls.view))


def test_no_class_name_table_or_mixin_is_left():
    html = importlib.import_module("labcoat.report.html")
    assert not hasattr(html, "SECTION_FOR") and not hasattr(html, "TITLES")
    assert not hasattr(html, "HtmlMixin")


def _registered() -> dict[str, set[str]]:
    return {r.engine: set(r.ids()) for r in registries()}


def _digits_like(n=96, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 8, generator=g)
    return x, (x[:, 0] > 0).long()


def _logs_recorded(ledger, tmp_path):
    """A folder of per-rank log files read for its failure, recorded like every result."""
    from labcoat.logs import ingest_folder, why

    for rank in (0, 1):
        (tmp_path / f"rank{rank}.log").write_text(f"step 0 loss 0.5\nstep 1 loss 0.{rank}\n")
    return why(ingest_folder(ledger, tmp_path), ledger=ledger).record(ledger)


def _newer_engines_recorded(ledger, a, b) -> list:
    """A verdict, a subset estimate and a replay, each recorded like every other result."""
    from labcoat.evals import History, estimate, plan_subset
    from labcoat.replay.results import DiffResult, ReplayResult
    from labcoat.verdicts import Plan, analyse

    ids = [f"q{i}" for i in range(len(a))]
    plan = Plan(metric="accuracy", column="correct", id="qid", comparison="superiority", items=80)
    verdict = analyse(plan, {"qid": ids, "correct": list(a)}, {"qid": ids, "correct": list(b)})
    rng = np.random.default_rng(1)
    y = (rng.random((120, 6)) < np.linspace(0.3, 0.8, 6)).astype(float)
    history = History.from_matrix(y, [f"q{i}" for i in range(120)], [f"m{j}" for j in range(6)])
    subset = plan_subset(history, 40, reps=2)
    index = subset.index()
    est = estimate({k: float(y[index[k], 3]) for k in subset.subset}, subset)
    row = {"step": 0, "recorded": {"loss": 1.0}, "replayed": {"loss": 1.0}}
    replayed = ReplayResult("r", 0, 0, 0, [row], None, {}, {})
    return [
        verdict.record(ledger),
        est.record(ledger),
        replayed.record(ledger),
        DiffResult("a", "b", [], None).record(ledger),
    ]


@pytest.mark.slow
def test_every_stored_finding_names_a_registered_check(tmp_path):
    """Each engine's results go through ``record`` into one ledger; every stored finding's
    check must be in the registry of the engine that stored it (a fallback ``Check(..., run=
    None)`` would not be)."""
    from labcoat import audit, scale, stats

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    a, b = (rng.random(80) < 0.7) * 1.0, (rng.random(80) < 0.6) * 1.0
    ids = np.arange(80)
    with labcoat.Ledger(tmp_path / "l.db") as ledger:
        stored = [
            stats.mean(a).record(ledger),
            stats.compare(a, b).record(ledger, name="a vs b"),
            stats.gate(a, b, margin=0.05).record(ledger),
            stats.leaderboard({"a": a, "b": b}, n_resamples=50).record(ledger),
            stats.compare_excluding(a, b, [1, 2], ids_a=ids, ids_b=ids).record(ledger),
        ]
        x = np.logspace(6, 9, 10)
        fit = scale.fit(x, None, 1.7 + 300 * x**-0.3, form="curve", bootstrap=4, ledger=ledger)
        assert fit.ledger["findings"]
        probs = rng.dirichlet(np.ones(3), size=60)
        stored.append(
            audit.label_issues(rng.integers(0, 3, 60), probs, ledger=False).record(ledger)
        )
        stored.append(audit.groups(["g1", "g2"], ["g2", "g3"], ledger=False).record(ledger))
        model = nn.Linear(8, 2)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        x, y = _digits_like()
        with labcoat.watch(model, optimizer, every=1, ledger=ledger) as w:
            for step in range(6):
                loss = nn.functional.cross_entropy(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                w.observe(step=step, loss=loss)
        report = labcoat.diagnose(
            model,
            (x, y),
            nn.CrossEntropyLoss(),
            torch.optim.SGD(model.parameters(), lr=0.1),
            layers=("data", "model"),
            ledger=ledger,
            progress=False,
        )
        assert report.extras["ledger"]["findings"]
        stored += _newer_engines_recorded(ledger, a, b)
        stored.append(_logs_recorded(ledger, tmp_path))
        assert all(stored)
        registered = _registered()
        unregistered = []
        for engine in ENGINES:
            found = ledger.findings(source=engine)
            assert found, f"no {engine} findings were stored"
            unregistered += [(engine, f.check) for f in found if f.check not in registered[engine]]
    assert unregistered == []


def test_a_findings_property_still_answers_the_old_call_with_a_warning():
    model = nn.Linear(8, 2)
    with labcoat.watch(model, torch.optim.SGD(model.parameters(), lr=0.1)) as w:
        pass
    assert isinstance(w.findings, list)
    with pytest.warns(DeprecationWarning, match="findings is a property"):
        assert w.findings() == w.findings


def test_the_old_persist_functions_warn_and_still_record(tmp_path):
    from labcoat import stats
    from labcoat.scale.record import record_fit
    from labcoat.stats.record import record

    result = stats.mean(np.arange(10.0) % 2)
    with labcoat.Ledger(tmp_path / "l.db") as ledger:
        with pytest.warns(DeprecationWarning, match=r"result.record\(ledger\)"):
            assert record(result, ledger=ledger, name="m")
        from labcoat import scale

        x = np.logspace(6, 9, 10)
        fit = scale.fit(x, None, 1.7 + 300 * x**-0.3, form="curve", bootstrap=0, ledger=False)
        with pytest.warns(DeprecationWarning, match=r"fit.record\(ledger\)"):
            record_fit(fit, ledger)
        assert ledger.findings(source="stats") and ledger.findings(source="scale")
