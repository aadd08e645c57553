"""The CLI maps options onto one library call per command.

Walking the click tree from ``labcoat.cli.main``: every ``--level`` and ``--seed`` is the one
shared definition (``labcoat.cli.output.level_options``/``seed_options``) with the library's
default, and a command's ``--json`` equals its library call's ``to_dict()`` at default options.
A command with ``--json`` that is in neither table below fails the test, so a new command is
held to it from its first day.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import click
import numpy as np
import pytest

from labcoat._jsonable import jsonable
from labcoat.cli.main import cli as root
from labcoat.cli.output import DEFAULT_LEVEL, DEFAULT_SEED


def walk(command: click.Command, path: tuple[str, ...] = ()):
    """(path, command) for every leaf command under ``command``."""
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            yield from walk(command.get_command(ctx, name), (*path, name))
    else:
        yield path, command


COMMANDS = dict(walk(root))


def _param(command: click.Command, flag: str) -> click.Parameter | None:
    return next((p for p in command.params if flag in getattr(p, "opts", ())), None)


#: commands whose library default is None, and why: the level or seed comes from elsewhere
FROM_ELSEWHERE = {
    ("evals", "estimate", "level"): "the plan's level",
    ("evals", "compare", "level"): "the plan's level",
    ("doctor", "seed"): "the experiment's seed",
}


def test_every_level_and_seed_is_the_one_definition_at_the_librarys_default():
    seen = 0
    for path, command in COMMANDS.items():
        for flag, name, kind, default in (
            ("--level", "level", click.FloatRange, DEFAULT_LEVEL),
            ("--seed", "seed", click.IntRange, DEFAULT_SEED),
        ):
            p = _param(command, flag)
            if p is None or p.name != name:  # `labcoat run --seed NAME=VALUE` records seeds
                continue
            seen += 1
            assert isinstance(p.type, kind), (path, flag, p.type)
            expected = None if (*path, name) in FROM_ELSEWHERE else default
            assert p.default == expected, (path, flag, p.default)
    assert seen >= 15


#: per command: the library function it calls, whose level/seed defaults the CLI's must equal
LIBRARY = {
    ("stats", "mean"): "labcoat.stats.mean:mean",
    ("stats", "compare"): "labcoat.stats.tables:compare_files",
    ("stats", "leaderboard"): "labcoat.stats.leaderboard:leaderboard",
    ("stats", "bootstrap"): "labcoat.stats.bootstrap:bootstrap_metric",
    ("stats", "seeds"): "labcoat.stats.seeds:summarize_runs",
    ("stats", "intervals"): "labcoat.stats.proportions:proportion",
    ("scale", "fit"): "labcoat.scale.api:fit",
    ("scale", "backtest"): "labcoat.scale.backtest:backtest",
    ("evals", "estimate"): "labcoat.evals.estimate:estimate",
}


@pytest.mark.parametrize("path", sorted(LIBRARY))
def test_the_cli_default_is_the_library_calls_default(path):
    import importlib

    module, attr = LIBRARY[path].split(":")
    params = inspect.signature(getattr(importlib.import_module(module), attr)).parameters
    for name in ("level", "seed", "n_resamples"):
        p = next((q for q in COMMANDS[path].params if q.name == name), None)
        if p is not None and name in params:
            assert p.default == params[name].default, (path, name)


# -- --json equals the library's to_dict() at default options -----------------------------


def _files(tmp_path):
    rng = np.random.default_rng(0)
    n = 40
    a, b = (rng.random(n) < 0.7).astype(int), (rng.random(n) < 0.5).astype(int)
    for name, col in (("a", a), ("b", b)):
        rows = "\n".join(f"q{i},t{i % 5},{v}" for i, v in enumerate(col))
        (tmp_path / f"{name}.csv").write_text("id,topic,s\n" + rows + "\n")
    return str(tmp_path / "a.csv"), str(tmp_path / "b.csv")


def _mean(a, b):
    from labcoat.stats import mean, read_table

    t = read_table(a)
    return ["stats", "mean", a, "--score", "s", "--no-ledger"], mean(t.scores("s"))


def _compare(a, b):
    from labcoat.stats.tables import compare_files

    return (
        ["stats", "compare", a, b, "--on", "id", "--score", "s", "--no-ledger"],
        compare_files(a, b, on="id", score="s"),
    )


def _power(a, b):
    from labcoat.stats import solve_power

    return ["stats", "power", "--omega2", "0.1", "--mde", "0.03"], solve_power(omega2=0.1, mde=0.03)


def _power_pilot(a, b):
    from labcoat.stats import solve_power

    return (
        [
            "stats",
            "power",
            "--pilot-a",
            a,
            "--pilot-b",
            b,
            "--on",
            "id",
            "--score",
            "s",
            "--n",
            "400",
        ],
        solve_power(pilot_a=a, pilot_b=b, on="id", score="s", n=400),
    )


def _bootstrap(a, b):
    from labcoat.stats import bootstrap_metric, read_table
    from labcoat.stats.tables import item_statistics

    return (
        ["stats", "bootstrap", a, "--metric", "mean", "--score", "s"],
        bootstrap_metric(item_statistics(read_table(a), "mean", score="s"), "mean"),
    )


def _intervals(a, b):
    from labcoat.stats import proportion

    return ["stats", "intervals", "--successes", "7", "--n", "10"], proportion(7, 10)


def _adjust(a, b):
    from labcoat.stats import adjust_pvalues

    return ["stats", "adjust", "0.01", "0.04", "0.03"], adjust_pvalues([0.01, 0.04, 0.03])


def _design(a, b):
    import labcoat.design

    toml = Path(a).with_name("factors.toml")
    toml.write_text("[factors]\nlr = [0.001, 0.003]\nwidth = [64, 256]\n[design]\nseeds = 2\n")
    return ["design", str(toml)], labcoat.design(**labcoat.design.read_factors(toml))


def _verdict(a, b):
    import os

    from labcoat import verdicts
    from labcoat.ledger import Ledger

    plan = verdicts.Plan(
        metric="accuracy",
        column="s",
        id="id",
        cluster="topic",
        comparison="non-inferiority",
        margin=0.2,
        items=40,
    )
    here = Path(a).parent
    for name in ("cli.db", "library.db"):  # the same plan on two ledgers, one per caller
        with Ledger(here / name) as book:
            verdicts.register(book, "A beats B", predict="A > B", plan=plan)
    for path in (a, b):
        os.utime(path)  # the results come after the plan
    with Ledger(here / "library.db") as book:
        result = verdicts.verdict(book, 1, a=a, b=b)
    return ["verdict", "1", "--a", a, "--b", b, "--ledger", str(here / "cli.db")], result


def _gate(a, b):
    from labcoat.stats import gate, read_table

    ta, tb = read_table(a), read_table(b)
    return (
        ["stats", "gate", a, b, "--on", "id", "--score", "s", "--margin", "0.1", "--no-ledger"],
        gate(ta.scores("s"), tb.scores("s"), 0.1, ids_new=ta.labels("id"), ids_old=tb.labels("id")),
    )


def _leaderboard(a, b):
    from labcoat.stats import leaderboard, read_table

    ta, tb = read_table(a), read_table(b)
    return (
        ["stats", "leaderboard", a, b, "--on", "id", "--score", "s", "--no-ledger"],
        leaderboard(
            {"a": ta.scores("s"), "b": tb.scores("s")}, {"a": ta.labels("id"), "b": tb.labels("id")}
        ),
    )


def _seeds(a, b):
    from labcoat.stats import read_table, summarize_runs

    return ["stats", "seeds", a, "--score", "s"], summarize_runs(read_table(a).scores("s"))


def _sequential(a, b):
    from labcoat.stats import read_table
    from labcoat.stats.sequential import replay

    return (
        ["stats", "sequential", a, "--score", "s", "--width", "0.5"],
        replay(read_table(a).scores("s"), width=0.5),
    )


def _history(a):
    """A history of six models on the items of ``a`` (ids q0..q39), beside it."""
    rng = np.random.default_rng(1)
    path = Path(a).with_name("history.csv")
    rows = [",".join(["id", *(f"m{j}" for j in range(6))])]
    rows += [
        ",".join([f"q{i}", *(str(int(rng.random() < 0.3 + 0.1 * j)) for j in range(6))])
        for i in range(40)
    ]
    path.write_text("\n".join(rows) + "\n")
    return str(path)


def _evals_plan(a, b):
    from labcoat.evals import plan_subset

    history = _history(a)
    return ["evals", "plan", history, "--subset-size", "24"], plan_subset(history, 24)


def _evals_estimate(a, b):
    from labcoat.evals import estimate, plan_subset, read_results

    plan = plan_subset(_history(a), 24).save(Path(a).with_name("plan.json"))
    return (
        ["evals", "estimate", a, "--plan", str(plan), "--id", "id", "--score", "s", "--no-ledger"],
        estimate(read_results(a, id="id", score="s"), plan),
    )


def _evals_compare(a, b):
    from labcoat.evals import compare, plan_subset, read_results

    plan = plan_subset(_history(a), 24).save(Path(a).with_name("plan.json"))
    args = ["--plan", str(plan), "--id", "id", "--score", "s", "--no-ledger"]
    return (
        ["evals", "compare", a, b, *args],
        compare(read_results(a, id="id", score="s"), read_results(b, id="id", score="s"), plan),
    )


#: command -> builder of (CLI arguments, the library's result at default options)


def _numbers(a, name):
    rows = np.random.default_rng(len(name)).random((12, 3)).round(3)
    path = Path(a).with_name(f"{name}.csv")
    body = "\n".join(f"r{i}," + ",".join(map(str, row)) for i, row in enumerate(rows))
    path.write_text("id,x,y,z\n" + body + "\n")
    return str(path)


def _audit_duplicates(a, b):
    from labcoat.audit import duplicates
    from labcoat.audit.inputs import read_rows

    x, y = _numbers(a, "x"), _numbers(a, "y")
    Path(y).write_text(Path(y).read_text() + "copy," + Path(x).read_text().split("\n")[1][3:])
    args = ["audit", "duplicates", x, y, "--no-ledger"]
    return args, duplicates(read_rows(x, None), read_rows(y, None), ledger=False)


def _audit_groups(a, b):
    from labcoat.audit import groups
    from labcoat.stats.readers import read_table

    topics = [list(read_table(f).labels("topic")) for f in (a, b)]
    return ["audit", "groups", a, b, "--group", "topic", "--no-ledger"], groups(
        *topics, ledger=False
    )


def _audit_contamination(a, b):
    from labcoat.audit.benchmark_contamination import contamination

    words = " ".join(f"w{i}" for i in range(40))
    corpus = Path(a).with_name("corpus.txt")
    corpus.write_text(f"intro {words} outro\n")
    items = Path(a).with_name("items.csv")
    items.write_text(f"q,text\nq0,{words}\nq1,nothing shared with the corpus at all here\n")
    args = ["audit", "contamination", "--corpus", str(corpus), "--eval", str(items)]
    result = contamination([str(corpus)], [words, "nothing shared with the corpus at all here"])
    return [*args, "--text-column", "text", "--no-ledger"], result, ("seconds", "mb_per_s")


def _audit_labels(a, b):
    from labcoat.audit import label_issues

    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, 60)
    probs = rng.dirichlet(np.ones(3), size=60)
    np.save(Path(a).with_name("labels.npy"), labels)
    np.save(Path(a).with_name("probs.npy"), probs)
    where = Path(a).parent
    args = [
        "audit",
        "labels",
        "--pred-probs",
        where / "probs.npy",
        "--labels",
        where / "labels.npy",
    ]
    return [*args, "--no-ledger"], label_issues(labels, probs, ledger=False)


def _checks(a, b):
    from labcoat.engines import checks

    return ["checks"], checks()


def _checks_of_one_engine(a, b):
    from labcoat.engines import checks

    return ["checks", "--engine", "stats"], checks("stats")


_EXPERIMENT = """
import torch
from torch import nn
import labcoat


def experiment():
    torch.manual_seed(0)
    x = torch.randn(64, 4)
    y = (x[:, 0] > 0).long()
    data = torch.utils.data.DataLoader(list(zip(x, y)), batch_size=16)
    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    return labcoat.Experiment(model, data, nn.functional.cross_entropy, optimizer, seed=0)
"""


def _doctor(a, b):
    from labcoat.doctor.experiment_file import diagnose_file

    path = Path(a).with_name("tiny.py")
    path.write_text(_EXPERIMENT)
    spec = f"{path}:experiment"
    args = ["doctor", spec, "--no-ledger", "--quiet"]
    result = diagnose_file(spec, run_all=False, ledger=False, progress=False)
    return args, result


_PLAN = {"metric": "accuracy", "column": "correct", "id": "qid", "comparison": "superiority"}


def _notebook(a):
    """A ledger with a hypothesis, a planned hypothesis and two runs with a finding each."""
    from labcoat import Ledger
    from labcoat.findings import Finding
    from labcoat.verdicts.judge import register

    path = Path(a).with_name("notebook") / "ledger.db"
    path.parent.mkdir(exist_ok=True)
    with Ledger(path) as book:
        book.hypothesis("warmup helps", predict="loss below 2.0", tags=["lr"])
        register(book, "a beats b", predict="a wins by 2 points", plan={**_PLAN, "items": 80})
        for name, lr in (("a", 0.1), ("b", 0.2)):
            with book.run(config={"lr": lr}, name=name, git=False) as run:
                found = Finding("data.finite", "data", "pass", "every input is finite")
                book.record_findings([found], run=run.id, source="doctor")
    return str(path)


def _again(path):
    """``path``'s ledger built afresh, for a command that writes: the library's call wrote to
    the first one, the command writes to this one (same ids; new times and hashes)."""
    for leftover in Path(path).parent.glob("ledger.db*"):
        leftover.unlink()
    _notebook(str(Path(path).parent.parent / "a.csv"))


#: what a ledger that is written twice cannot share: when each row was written, and its hash
_WRITTEN = ("created_at", "recorded_at", "started_at", "ended_at", "hash", "exported_at")


def _ledger(command, call):
    """A builder for ``labcoat ledger COMMAND`` reading the notebook, and the library's call."""

    def build(a, b):
        from labcoat import Ledger

        where = _notebook(a)
        with Ledger(where) as book:
            result = call(book)
        return ["ledger", *command, "--ledger", where], result

    build.__name__ = f"_ledger_{'_'.join(command).replace('-', '')}"
    return build


def _answers():
    from labcoat.ledger import answers

    return answers


def _ledger_add(a, b):
    from labcoat import Ledger

    where = _notebook(a)
    with Ledger(where) as book:
        result = _answers().add_entry(book, "more data helps", predict="accuracy up", tags=["d"])
    _again(where)
    args = ["ledger", "add", "more data helps", "--predict", "accuracy up", "--tag", "d"]
    return [*args, "--ledger", where], result, _WRITTEN


def _ledger_resolve(a, b):
    from labcoat import Ledger

    where = _notebook(a)
    fields = {"result": "loss 1.9", "verdict": "confirmed"}
    with Ledger(where) as book:
        result = _answers().resolve_entry(book, 1, **fields)
    _again(where)
    args = ["ledger", "resolve", "1", "--result", "loss 1.9", "--verdict", "confirmed"]
    return [*args, "--ledger", where], result, _WRITTEN


def _run(a, b):
    import io
    import sys

    from labcoat import Ledger
    from labcoat.ledger.wrap import run_wrapped

    where = _notebook(a)
    command = [sys.executable, "-c", "print('trained')"]
    with Ledger(where) as book:
        out = io.StringIO()
        result = run_wrapped(book, command, stdout=out, stderr=out, git=False)
    _again(where)
    return ["run", "--no-git", "--no-logs", "--ledger", where, "--", *command], result, _WRITTEN


def _export(a, b):
    from labcoat import Ledger

    where = _notebook(a)
    with Ledger(where) as book:
        result = _answers().export_to(book, "json")
    return ["ledger", "export", "--format", "json", "--ledger", where], result, _WRITTEN


def _report(a, b):
    from labcoat.report.build import write

    where = _notebook(a)
    page = Path(a).with_name("page.html")
    written = write(page, location=where)
    # the page names the time it was drawn: its size may differ by a digit
    return ["report", "-o", page, "--ledger", where], written, ("bytes",)


def _watch_report(a, b):
    from labcoat.watch.result import report
    from tests.watch.test_cli import write_run

    paths = write_run(Path(a).parent)
    return ["watch", "report", *paths], report(paths)


def _logs_folder(a):
    folder = Path(a).with_name("logs")
    folder.mkdir()
    (folder / "rank0.log").write_text("step 0 loss 0.5\nstep 1 loss 0.4\n")
    (folder / "rank1.log").write_text("step 0 loss 0.5\nRuntimeError: boom\n")
    return str(folder)


def _logs_why(a, b):
    from labcoat.logs import why

    folder = _logs_folder(a)
    return ["logs", folder, "--why"], why(folder)


def _logs_folded(a, b):
    from labcoat.logs.api import fold_log

    folder = _logs_folder(a)
    return ["logs", folder, "--folded", "--rank", "0"], fold_log(folder, rank=0)


def _logs_records(a, b):
    from labcoat.logs.api import first_records

    folder = _logs_folder(a)
    return ["logs", folder, "--limit", "3"], first_records(folder, limit=3)


def _recorded_runs(a):
    """Two runs labcoat.replayable wrote in this process; the second's loss parts at step 3."""
    import torch
    from torch import nn

    import labcoat

    runs = []
    for name, lr in (("one", 0.1), ("two", 0.1)):
        torch.manual_seed(0)
        model = nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=lr)
        where = Path(a).with_name(name)
        with labcoat.replayable(
            model=model, optimizer=opt, every=2, dir=where, ledger=False
        ) as rec:
            for step in rec.loop("step", range(6)):
                loss = model(torch.ones(8, 4)).pow(2).mean() + (step >= 3 and name == "two")
                opt.zero_grad()
                loss.backward()
                opt.step()
                rec.log(loss=loss)
        runs.append(str(rec.dir))
    return runs


def _replay(a, b):
    from labcoat.replay.replay import replay
    from tests.replay.scripts import record

    run = str(record(Path(a).parent, "--workers", "0", "--epochs", "1"))
    return ["replay", run, "--no-ledger"], replay(run, ledger=False)


def _replay_diff(a, b):
    from labcoat.replay.diff import divergence

    one, two = _recorded_runs(a)
    return ["divergence", one, two, "--no-ledger"], divergence(one, two)


def _scale_runs(a, form="chinchilla"):
    """A small table of runs beside ``a`` (twelve, so a fit's backtests take a second) and
    the columns the CLI reads: a law in N and D, or a learning curve of one variable."""
    from tests.scale.conftest import curve_runs, synthetic_runs

    path = Path(a).with_name(f"{form}.csv")
    if form == "chinchilla":
        N, D, L = synthetic_runs(n=12)
        rows = [
            "params,tokens,loss",
            *(",".join(repr(float(v)) for v in row) for row in zip(N, D, L)),
        ]
        columns = ["--n", "params", "--d", "tokens"]
    else:
        x, L = curve_runs(np.logspace(2, 5, 12))
        rows = ["step,loss", *(",".join(repr(float(v)) for v in row) for row in zip(x, L))]
        columns = ["--form", form, "--x", "step"]
    path.write_text("\n".join(rows) + "\n")
    return str(path), [*columns, "--loss", "loss", "--no-ledger"]


def _runs_read(path, form="chinchilla"):
    from labcoat.scale.data import read_runs

    if form == "chinchilla":
        return read_runs(path, "params", "tokens", None, None, "loss", form)
    return read_runs(path, None, None, None, "step", "loss", form)


def _scale_fit(a, b):
    from labcoat.scale import fit

    path, columns = _scale_runs(a)
    return ["scale", "fit", path, *columns], fit(*_runs_read(path), ledger=False)


def _scale_predict(a, b):
    import warnings

    from labcoat.scale import ExtrapolationWarning, fit

    path, columns = _scale_runs(a, "curve")
    law = fit(*_runs_read(path, "curve"), form="curve", ledger=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        prediction = law.predict([1e6])
    return ["scale", "predict", path, *columns, "--at", "1e6"], prediction


def _scale_optimal(a, b):
    from labcoat.scale import fit

    path, columns = _scale_runs(a)
    allocation = fit(*_runs_read(path), ledger=False).optimal([1e21])
    return ["scale", "optimal", path, *columns, "--flops", "1e21"], allocation


def _scale_backtest(a, b):
    from labcoat.scale import backtest

    path, columns = _scale_runs(a, "curve")
    result = backtest(*_runs_read(path, "curve"), form="curve", top=3)
    return ["scale", "backtest", path, *columns, "--holdout-top", "3"], result


#: command -> builder of (CLI arguments, the library's result at default options[, the keys
#: the two may differ in]): the command maps onto that one library call
JSON_EQUALS_LIBRARY = {
    ("audit", "contamination"): [_audit_contamination],
    ("audit", "duplicates"): [_audit_duplicates],
    ("audit", "groups"): [_audit_groups],
    ("audit", "labels"): [_audit_labels],
    ("checks",): [_checks, _checks_of_one_engine],
    ("design",): [_design],
    ("divergence",): [_replay_diff],
    ("doctor",): [_doctor],
    ("ledger", "add"): [_ledger_add],
    ("ledger", "provenance-diff"): [
        _ledger(["provenance-diff", "1", "2"], lambda book: book.provenance_diff(1, 2))
    ],
    ("ledger", "export"): [_export],
    ("ledger", "findings"): [
        _ledger(
            ["findings", "--source", "doctor"],
            lambda b: _answers().list_findings(b, source="doctor"),
        )
    ],
    ("ledger", "list"): [
        _ledger(["list", "--tag", "lr"], lambda b: _answers().list_entries(b, tag=["lr"]))
    ],
    ("ledger", "plan"): [_ledger(["plan", "2"], lambda b: _registration().show_plan(b, 2))],
    ("ledger", "resolve"): [_ledger_resolve],
    ("ledger", "runs"): [_ledger(["runs"], lambda b: _answers().list_runs(b))],
    ("ledger", "show"): [
        _ledger(["show", "2"], lambda b: _answers().show_entry(b, 2)),
        _ledger(["show", "--run", "1"], lambda b: _answers().show_run(b, 1)),
    ],
    ("ledger", "sql"): [
        _ledger(["sql", "select id, name from runs"], lambda b: b.sql("select id, name from runs"))
    ],
    ("ledger", "verify"): [_ledger(["verify"], lambda b: b.verify())],
    ("logs",): [_logs_why, _logs_folded, _logs_records],
    ("replay",): [_replay],
    ("report",): [_report],
    ("run",): [_run],
    ("stats", "mean"): [_mean],
    ("stats", "compare"): [_compare],
    ("stats", "power"): [_power, _power_pilot],
    ("stats", "bootstrap"): [_bootstrap],
    ("stats", "intervals"): [_intervals],
    ("stats", "adjust"): [_adjust],
    ("verdict",): [_verdict],
    ("stats", "gate"): [_gate],
    ("stats", "leaderboard"): [_leaderboard],
    ("stats", "seeds"): [_seeds],
    ("stats", "sequential"): [_sequential],
    ("evals", "plan"): [_evals_plan],
    ("evals", "estimate"): [_evals_estimate],
    ("evals", "compare"): [_evals_compare],
    ("watch", "report"): [_watch_report],
    ("scale", "backtest"): [_scale_backtest],
    ("scale", "fit"): [_scale_fit],
    ("scale", "optimal"): [_scale_optimal],
    ("scale", "predict"): [_scale_predict],
}


def _registration():
    from labcoat.verdicts import registration

    return registration


#: commands with --json not yet held to it (each still maps onto one library call, unchecked
#: here); this list only shrinks
NOT_YET: set[tuple[str, ...]] = set()


def test_every_command_with_json_is_in_a_table():
    with_json = {path for path, c in COMMANDS.items() if _param(c, "--json") is not None}
    missing = with_json - set(JSON_EQUALS_LIBRARY) - NOT_YET
    assert not missing, f"commands with --json in no table of {__name__}: {sorted(missing)}"
    assert not (set(JSON_EQUALS_LIBRARY) & NOT_YET)
    assert not (NOT_YET - with_json), "NOT_YET names a command without --json: drop it"


#: builders that run a training script in a subprocess (seconds): the slow tier
SLOW = {_replay}


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(b, marks=pytest.mark.slow, id=b.__name__.strip("_"))
        if b in SLOW
        else pytest.param(b, id=b.__name__.strip("_"))
        for builders in JSON_EQUALS_LIBRARY.values()
        for b in builders
    ],
)
def test_json_equals_the_librarys_to_dict_at_default_options(build, cli, tmp_path):
    a, b = _files(tmp_path)
    args, result, *may_differ = build(a, b)
    cut = args.index("--") if "--" in args else len(args)  # what follows -- is not labcoat's
    got = cli(*args[:cut], "--json", *args[cut:])
    assert got.code in (0, 1), got.err
    expected = json.loads(json.dumps(jsonable(result.to_dict()), allow_nan=False))
    drop = {*TIMES, *(may_differ[0] if may_differ else ())}
    assert _timeless(json.loads(got.out), drop) == _timeless(expected, drop)


#: how long a check took is not the result
TIMES = {"duration_s", "timings"}


def _timeless(data, drop=frozenset(TIMES)):
    """``data`` without the keys in ``drop`` (the findings' durations, by default)."""
    if isinstance(data, dict):
        return {k: _timeless(v, drop) for k, v in data.items() if k not in drop}
    if isinstance(data, list):
        return [_timeless(v, drop) for v in data]
    return data
