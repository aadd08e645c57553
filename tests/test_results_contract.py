"""One result protocol: every engine's result subclasses :class:`labcoat.result.Result`, names its
``kind`` and ``version`` in ``to_dict()``, reads back through ``from_dict``, declares its views on
the type, records through ``labcoat.ledger.record`` (``result.record(ledger)``), and every finding
it stores names a registered check.

The classes are found by subclass after importing every engine through its descriptor
(:func:`labcoat.engines.result_classes`), never from a hand-kept list; each has a small factory
here, and a class without one fails :func:`test_every_result_class_has_a_factory`.
"""

from __future__ import annotations

import functools
import importlib
import json

import numpy as np
import pytest

import labcoat
from labcoat import engines
from labcoat.result import Result, from_dict, load


def _scores(seed=0, n=80, p=0.7):
    return (np.random.default_rng(seed).random(n) < p) * 1.0


def _history():
    from labcoat.evals import History

    rng = np.random.default_rng(1)
    y = (rng.random((120, 6)) < np.linspace(0.3, 0.8, 6)).astype(float)
    return y, History.from_matrix(y, [f"q{i}" for i in range(120)], [f"m{j}" for j in range(6)])


def _plan():
    from labcoat.evals import plan_subset

    y, history = _history()
    return y, plan_subset(history, 40, n_resamples=2)


def _estimate():
    from labcoat.evals import estimate

    y, plan = _plan()
    index = plan.index()
    return estimate({k: float(y[index[k], 3]) for k in plan.subset}, plan), plan, y, index


def _verdicts_plan():
    from labcoat.verdicts import Plan

    return Plan(metric="accuracy", column="correct", id="qid", comparison="superiority", items=80)


def _verdict():
    from labcoat.verdicts import analyse

    a, b = _scores(0), _scores(1, p=0.6)
    ids = [f"q{i}" for i in range(len(a))]
    return analyse(
        _verdicts_plan(), {"qid": ids, "correct": list(a)}, {"qid": ids, "correct": list(b)}
    )


def _curve_points():
    x = np.logspace(6, 9, 10)
    return x, 1.7 + 300 * x**-0.3


def _fit():
    from labcoat import scale

    x, loss = _curve_points()
    return scale.fit(x, None, loss, form="curve", n_resamples=4, ledger=False)


def _prediction():
    import warnings

    with warnings.catch_warnings():  # beyond the runs on purpose
        warnings.simplefilter("ignore")
        return build("scale.fit").predict([1e10])


def _allocation():
    from labcoat import scale

    N = np.logspace(7, 9, 8).repeat(2)
    D = N * np.tile([10.0, 40.0], 8)
    L = 1.7 + 400 * N**-0.34 + 410 * D**-0.28
    return scale.fit(N, D, L, n_resamples=4, ledger=False).optimal([1e20])


def _backtest():
    from labcoat import scale

    x, loss = _curve_points()
    return scale.backtest(x, None, loss, form="curve", holdout="n", top=3, n_resamples=4)


def _backtest_set():
    from labcoat.scale.backtest import BacktestSet

    one = build("scale.backtest")
    return BacktestSet({"a": one}, {}, one.level, one.interval)


def _downstream():
    from labcoat.scale.downstream import fit_downstream

    rng = np.random.default_rng(0)
    N = 10 ** rng.uniform(7, 9.5, 24)
    D = N * 10 ** rng.uniform(1, 2, 24)
    L = 1.7 + 400 * N**-0.34 + 410 * D**-0.28
    err = np.clip(0.9 - 3.0 * np.exp(-1.5 * L) + rng.normal(0, 0.005, L.size), 0, 1)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit_downstream(N, D, L, 1 - err, target="accuracy")


def _report():
    from labcoat.doctor.result import Diagnosis
    from labcoat.findings import Finding

    found = [Finding("data.finite", "data", "pass", "every input is finite")]
    return Diagnosis(findings=found, layers_run=("data",))


def _watch_report():
    from labcoat.watch.result import WatchReport

    return WatchReport([], [], 0, [], {}, [], [], 0)


def _watcher():
    import torch
    from torch import nn

    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with labcoat.watch(model, optimizer, every=1, ledger=False) as w:
        for step in range(3):
            loss = model(torch.ones(2, 4)).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            w.observe(step=step, loss=loss)
    return w


def _eval_result():
    from labcoat.watch.evaluation import EvalResult

    return EvalResult("acc", 10, 50, 0.6, 0.45, 0.74, 0.95, False, 5, 0.1)


def _seeds():
    from labcoat import stats

    return stats.aggregate(np.random.default_rng(0).random((5, 3)), n_resamples=50)


def _methods():
    from labcoat import stats

    rng = np.random.default_rng(0)
    return stats.summarize_runs(
        rng.random(12), tasks=["t1", "t2"] * 6, methods=["a"] * 6 + ["b"] * 6, n_resamples=50
    )


def _stats(name, *args, **kwargs):
    def build():
        from labcoat import stats

        return getattr(stats, name)(*args, **kwargs)

    return build


def _replay():
    from labcoat.replay.results import ReplayResult

    row = {"step": 0, "recorded": {"loss": 1.0}, "replayed": {"loss": 1.0}}
    return ReplayResult("r", 0, 0, 0, [row], None, {}, {})


def _group():
    from labcoat.replay.results import GroupReplayResult

    return GroupReplayResult("r", [_replay(), _replay()])


def _ranks():
    from labcoat.replay.results import RankDiffResult

    first = {"step": 3, "rank": 1, "agree": [0], "majority": False, "tensor": "w"}
    return RankDiffResult("r", 2, 4, [0, 4], None, first)


def _diff():
    from labcoat.replay.results import DiffResult

    return DiffResult("a", "b", [], None)


def _audit(name, *args, **kwargs):
    def build():
        from labcoat import audit

        return getattr(audit, name)(*args, ledger=False, **kwargs)

    return build


def _contamination():
    from labcoat.audit.benchmark_contamination import Contamination

    return Contamination(items=[], method="13-gram", n=13, max_docs=None)


_rng = np.random.default_rng(0)
#: kind -> a small factory of one instance; every result class found needs one
FACTORIES = {
    "doctor.report": _report,
    "watch.report": _watch_report,
    "watch.session": _watcher,
    "watch.eval": _eval_result,
    "stats.mean": _stats("mean", _scores()),
    "stats.compare": _stats("compare", _scores(0), _scores(1, p=0.6)),
    "stats.compare.exclude": _stats(
        "compare_excluding",
        _scores(0),
        _scores(1, p=0.6),
        [1, 2],
        ids_a=np.arange(80),
        ids_b=np.arange(80),
    ),
    "stats.gate": _stats("gate", _scores(0), _scores(1, p=0.6), margin=0.05),
    "stats.leaderboard": _stats(
        "leaderboard", {"a": _scores(0), "b": _scores(1, p=0.6)}, n_resamples=50
    ),
    "stats.bootstrap": _stats(
        "bootstrap_metric", np.column_stack([_scores(), np.ones(80)]), "mean", n_resamples=50
    ),
    "stats.power": _stats("sample_size", 0.05, 0.01, sigma2_a=0.2, sigma2_b=0.2),
    "stats.proportion": _stats("proportion", 30, 50),
    "stats.mcnemar": _stats("mcnemar", _scores(0), _scores(1, p=0.6)),
    "stats.sequential": _stats("replay", _scores(), threshold=0.5),
    "stats.permutation": _stats("paired_permutation_test", _scores(0), _scores(1, p=0.6)),
    "stats.multiple": _stats("adjust_pvalues", [0.01, 0.04, 0.3]),
    "stats.seeds": _seeds,
    "stats.methods": _methods,
    "audit.labels": _audit(
        "label_issues", _rng.integers(0, 3, 60), _rng.dirichlet(np.ones(3), size=60)
    ),
    "audit.groups": _audit("groups", ["g1", "g2"], ["g2", "g3"]),
    "audit.duplicates": _audit("duplicates", np.eye(6)[:4], np.eye(6)[2:]),
    "audit.contamination": _contamination,
    "scale.fit": _fit,
    "scale.prediction": _prediction,
    "scale.allocation": _allocation,
    "scale.backtest": _backtest,
    "scale.backtest_set": _backtest_set,
    "scale.downstream": _downstream,
    "replay.replay": _replay,
    "replay.diff": _diff,
    "replay.group": _group,
    "replay.ranks": _ranks,
    "verdicts.review": lambda: __import__("labcoat.verdicts", fromlist=["review"]).review(
        _verdicts_plan()
    ),
    "verdicts.verdict": _verdict,
    "evals.plan": lambda: _plan()[1],
    "evals.estimate": lambda: _estimate()[0],
    "evals.compare": lambda: _evals_compare(),
    "evals.sequential": lambda: _evals_sequential(),
    "logs.report": lambda: _logs_report(),
    "design.design": lambda: _design(),
    "design.analysis": lambda: _design().analyse(
        [
            {**r, "metric": float(r["a"]) + 0.1 * r["seed"] + 0.01 * i}
            for i, r in enumerate(_design().runs)
        ]
    ),
    "design.verdict": lambda: _design_verdict(),
}


def _logs_report():
    """A folder of per-rank log files where rank 1 raised, read for its failure."""
    import tempfile
    from pathlib import Path

    from labcoat.ledger import Ledger
    from labcoat.logs import ingest_folder, why

    folder = Path(tempfile.mkdtemp())
    (folder / "rank0.log").write_text("step 0 loss 0.5\nstep 1 loss 0.4\n")
    (folder / "rank1.log").write_text("step 0 loss 0.5\nRuntimeError: boom\n")
    ledger = Ledger(folder / "ledger.db")
    return why(ingest_folder(ledger, folder), ledger=ledger)


def _design():
    import labcoat.design

    return labcoat.design({"a": [0, 1], "b": [0, 1]}, seeds=2, noise=0.5, effect_size=1.0)


def _design_verdict():
    from labcoat.design.judge import judge

    d = _design()
    rows = [{**r, "m": float(r["a"]) + 0.1 * r["seed"] + 0.01 * i} for i, r in enumerate(d.runs)]
    return judge(d.to_plan("m"), rows)


def _evals_compare():
    from labcoat.evals import compare

    y, plan = _plan()
    index = plan.index()
    a = {k: float(y[index[k], 2]) for k in plan.subset}
    b = {k: float(y[index[k], 4]) for k in plan.subset}
    return compare(a, b, plan)


def _evals_sequential():
    from labcoat.evals import sequential

    y, plan = _plan()
    index = plan.index()
    return sequential(lambda item: float(y[index[item], 3]), plan, threshold=0.3, batch=5)


CLASSES = engines.result_classes()


def _timeless(data):
    """``data`` without the findings' durations (a result that runs its checks again when asked
    times them again)."""
    if isinstance(data, dict):
        return {k: _timeless(v) for k, v in data.items() if k != "duration_s"}
    if isinstance(data, list):
        return [_timeless(v) for v in data]
    return data


def test_every_result_class_has_a_factory():
    """Found by subclass after importing every engine; a new result class needs a factory."""
    missing = sorted(set(CLASSES) - set(FACTORIES))
    assert not missing, f"result kinds without a factory here: {missing}"
    assert not sorted(set(FACTORIES) - set(CLASSES)), "factories for kinds no class declares"


def test_plain_results_are_results_too():
    """The results that were plain dataclasses are Results now (found, not listed)."""
    for kind in ("stats.bootstrap", "stats.power", "stats.sequential", "watch.eval"):
        assert issubclass(CLASSES[kind], Result)


#: kinds whose factory fits a scaling law several times (seconds each): checked in the slow tier
SLOW = {"scale.backtest", "scale.backtest_set", "scale.downstream"}


@functools.cache
def build(kind: str):
    return FACTORIES[kind]()


@pytest.mark.parametrize(
    "kind",
    [pytest.param(k, marks=pytest.mark.slow) if k in SLOW else k for k in sorted(CLASSES)],
)
def test_every_result_says_what_it_is_and_reads_back(kind):
    cls = CLASSES[kind]
    result = build(kind)
    assert type(result) is cls
    assert cls.engine in engines.names(), f"{kind} records under an engine no descriptor names"
    assert isinstance(cls.section, str) and callable(load(cls.section))
    assert cls.view is None or callable(load(cls.view))
    data = result.to_dict()
    assert data["kind"] == kind and isinstance(data["version"], int)
    json.dumps(data, allow_nan=True)  # JSON-able
    back = from_dict(json.loads(json.dumps(data)))
    assert isinstance(back, cls) and type(back).section == cls.section
    assert _timeless(back.to_dict()) == _timeless(json.loads(json.dumps(data)))
    assert [f.check for f in back.findings] == [f.check for f in result.findings]
    assert back.ok == result.ok


def test_from_dict_refuses_another_kind_and_a_newer_version():
    from labcoat.errors import InputError

    data = FACTORIES["stats.mean"]().to_dict()
    with pytest.raises(InputError, match="expected kind 'stats.compare'"):
        CLASSES["stats.compare"].from_dict(data)
    with pytest.raises(InputError, match="newer than this labcoat reads"):
        from_dict({**data, "version": 99})
    with pytest.raises(InputError, match="no result of kind 'nope'"):
        from_dict({**data, "kind": "nope"})


def test_no_class_name_table_or_mixin_is_left():
    html = importlib.import_module("labcoat.report.html")
    assert not hasattr(html, "SECTION_FOR") and not hasattr(html, "TITLES")
    assert not hasattr(html, "HtmlMixin")


def test_no_engine_overrides_the_one_persist_path():
    """``record`` is defined once, on Result (a delegate to labcoat.ledger.record)."""
    overriding = [k for k, cls in CLASSES.items() if "record" in vars(cls)]
    parents = {c for cls in CLASSES.values() for c in cls.__mro__ if "record" in vars(c)}
    assert overriding == [] and parents == {Result}


def test_a_findings_property_still_answers_the_old_call_with_a_warning():
    import torch
    from torch import nn

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
        fit = scale.fit(x, None, 1.7 + 300 * x**-0.3, form="curve", n_resamples=0, ledger=False)
        with pytest.warns(DeprecationWarning, match=r"fit.record\(ledger\)"):
            record_fit(fit, ledger)
        assert ledger.findings(source="stats") and ledger.findings(source="scale")


def test_a_ledger_holding_every_engines_results_gets_a_section_for_each_in_the_report(tmp_path):
    """Done-when of issue 32: one result of every engine recorded into one ledger (each in a
    run of its own), ``labcoat report`` draws one section per engine, and every stored finding
    names a registered check of the engine that stored it."""
    from labcoat.report.build import from_ledger

    one_per_engine = {}
    for kind, cls in sorted(CLASSES.items()):
        if kind not in SLOW:
            one_per_engine.setdefault(cls.engine, kind)
    registered = {r.engine: set(r.ids()) for r in engines.registries()}
    with labcoat.Ledger(tmp_path / "l.db") as ledger:
        for engine, kind in one_per_engine.items():
            assert labcoat.ledger.record(build(kind), ledger, name=kind) is not None
        page = from_ledger(ledger)
        unregistered = [
            (e, f.check)
            for e in engines.names()
            for f in ledger.findings(source=e)
            if f.check not in registered[e]
        ]
    ids = [s.id for s in page.sections]
    assert set(one_per_engine) == set(engines.names())
    for engine in engines.names():
        assert [i for i in ids if i.startswith(f"{engine}-run-")], f"no {engine} section: {ids}"
    assert unregistered == []
