"""Planned evals during training: a real (tiny) torch run on scikit-learn's digits, watched with
``labcoat.evals.planned_evaluation``. Each checkpoint's number is the plan's full-benchmark
estimate with the plan's interval, the ledger keeps every item's score, and a history read back
from the ledger plans again; each bad input beside a healthy twin."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.utils.data import TensorDataset

import labcoat
from labcoat.errors import InputError, LabcoatNote
from labcoat.evals import History, estimate, plan_subset, planned_evaluation, read_history
from labcoat.watch.evaluation import evaluate
from tests.watch._training import MLP, digits, train

EVERY = 30
STEPS = 120
BUDGET = 100


def accuracy(model):
    return lambda b: (model(b[0]).argmax(1) == b[1]).float()


@pytest.fixture(scope="module")
def dataset():
    torch.set_num_threads(1)
    return TensorDataset(*digits())


@pytest.fixture(scope="module")
def plan(dataset):
    """A plan from a first history: five checkpoints of an earlier run, scored on every item."""
    x, y = digits()
    torch.manual_seed(0)
    model = MLP()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(1)
    columns = []
    for step in range(100):
        idx = torch.randint(0, len(x), (32,), generator=gen)
        loss = F.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 19:
            with torch.no_grad():
                columns.append((model(x).argmax(1) == y).float().numpy())
    history = History.from_matrix(np.column_stack(columns), models=[f"c{i}" for i in range(5)])
    return plan_subset(history, BUDGET, n_resamples=4)


@pytest.fixture(scope="module")
def watched(plan, dataset, tmp_path_factory):
    """A watched run: the plan every 30 steps, the whole benchmark every 60, into a ledger."""
    torch.manual_seed(1)
    model = MLP()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    ledger = labcoat.Ledger(tmp_path_factory.mktemp("planned") / "notebook.db")
    score = accuracy(model)
    evaluations = [
        planned_evaluation(plan, dataset, score, every=EVERY, name="digits"),
        planned_evaluation(plan, dataset, score, every=2 * EVERY, name="digits", full=True),
    ]
    w = train(model, opt, steps=STEPS, evaluation=evaluations, ledger=ledger)
    return w, ledger


def test_each_checkpoint_gets_the_plans_full_benchmark_estimate_and_interval(watched, plan):
    w, _ = watched
    planned = [r for r in w.evaluations if r.details["mode"] == "subset"]
    full = {r.step: r.mean for r in w.evaluations if r.details["mode"] == "full"}
    assert [r.step for r in planned] == [29, 59, 89, 119] and sorted(full) == [59, 119]
    for r in planned:
        assert r.n == BUDGET and [k for k, _ in r.items] == plan.subset
        est = estimate(dict(r.items), plan)  # the same scores, through the public estimate
        assert (r.mean, r.low, r.high) == (est.mean, est.ci.low, est.ci.high)
        assert r.estimate.ci == est.ci and "plan's interval of the 1797-item score" in r.basis
        subset_mean = np.mean([s for _, s in r.items])
        assert abs(subset_mean - est.mean) > 1e-6  # the estimate is not the subset's mean
    # the interval covers the checkpoint's exact score, which the full evaluations measured
    for r in planned:
        if r.step in full:
            assert r.low <= full[r.step] <= r.high
    assert planned[-1].mean > planned[0].mean  # it learned, and the plan sees it


def test_the_ledger_keeps_every_items_score_per_checkpoint(watched, plan):
    w, ledger = watched
    rows = ledger.events(kind="eval_item")
    assert len(rows) == 4 * BUDGET + 2 * 1797
    assert {r.data["eval"] for r in rows} == {"digits"}
    at_29 = {r.data["item"]: r.value for r in rows if r.step == 29}
    assert list(at_29) == plan.subset and at_29 == dict(w.evaluations[0].items)
    evals = ledger.events(kind="eval")
    assert len(evals) == 6 and "plan's interval" in evals[0].message
    # the ledger's report draws the evals, not 3,994 item scores as a curve
    from labcoat.report.build import from_ledger
    from labcoat.report.sections.watch import as_events, split

    assert "eval_item" not in split(as_events(ledger.events()))[1]
    assert "digits @ 29" in from_ledger(ledger).to_html()


def test_a_history_read_back_from_the_ledger_plans_again(watched, dataset, tmp_path):
    _, ledger = watched
    with pytest.warns(LabcoatNote, match="left out 2 checkpoint"):  # steps 29 and 89: subsets
        history = read_history(ledger=ledger)
    assert history.models.tolist() == ["run1/step59", "run1/step119"]
    assert history.n_items == 1797 and history.items[:3].tolist() == ["0", "1", "2"]
    again = plan_subset(history, 60, calibrate=False)
    assert again.subset_size == 60 and again.n_items == 1797
    # the next planned evaluation files its results under the same evaluation's name
    assert planned_evaluation(again, dataset, accuracy(MLP()), every=10).name == "digits"
    # from the path too, and joined with a history file of the same items
    first = History.from_matrix(
        np.column_stack([history.scores[:, 0], 1 - history.scores[:, 1]]),
        history.items,
        ["a", "b"],
    )
    path = tmp_path / "first.csv"
    path.write_text(
        "item,a,b\n" + "".join(f"{i},{a:g},{b:g}\n" for i, (a, b) in zip(first.items, first.scores))
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LabcoatNote)
        both = read_history(path, ledger=ledger)
    assert both.models.tolist() == ["a", "b", "run1/step59", "run1/step119"]
    joined = plan_subset(both, 60, calibrate=False)
    assert planned_evaluation(joined, dataset, accuracy(MLP()), every=10).name == "digits"
    np.testing.assert_array_equal(both.scores[:, 2:], history.scores)


def test_planned_draws_stop_as_labcoat_evals_sequential_does(plan, dataset):
    from labcoat.evals import sequential

    torch.manual_seed(2)
    model = MLP()
    ev = planned_evaluation(plan, dataset, accuracy(model), every=1, width=0.12, batch_size=16)
    r = evaluate(model, ev.batches, ev.score, **ev.settings())
    x, y = digits()
    with torch.no_grad():
        truth = (model(x).argmax(1) == y).float().numpy()
    s = sequential(lambda item: float(truth[int(item)]), plan, width=0.12, batch=16)
    assert (r.mean, r.low, r.high) == (s.mean, s.ci.low, s.ci.high)
    assert r.details["n_draws"] == s.n_draws and r.n == s.n_items and r.stopped_early
    assert r.low <= truth.mean() <= r.high and r.high - r.low < 0.12
    assert len(r.items) < 1797  # it stopped early: only the drawn items were scored


# -- bad input, each beside its healthy twin ---------------------------------------------


def _history(items, n_models=3, seed=0):
    rng = np.random.default_rng(seed)
    p = np.linspace(0.1, 0.9, n_models)
    return History.from_matrix((rng.random((len(items), n_models)) < p).astype(float), items)


def test_plan_ids_the_dataset_lacks_are_refused_before_training(dataset):
    named = plan_subset(_history([f"q{i}" for i in range(1797)]), 40, calibrate=False)
    with pytest.raises(InputError, match=r"plan's item id 'q\d+' is not an index of its 1797"):
        planned_evaluation(named, dataset, accuracy(MLP()), every=10)
    x, y = digits()
    lookup = {f"q{i}": (x[i], y[i]) for i in range(1797)}
    del lookup[named.subset[3]]
    with pytest.raises(InputError, match="1 of the planned subset's 40 item ids are not among"):
        planned_evaluation(named, lookup, accuracy(MLP()), every=10)
    lookup[named.subset[3]] = (x[3], y[3])  # the healthy twin: every planned id is there
    model = MLP()
    ev = planned_evaluation(named, lookup, accuracy(model), every=10)
    assert evaluate(model, ev.batches, ev.score, **ev.settings()).n == 40


def test_a_tensor_dataset_and_a_mapping_of_its_items_give_the_same_scores(plan, dataset):
    model = MLP()
    x, y = digits()
    as_map = {str(i): (x[i], y[i]) for i in range(len(x))}  # batched by default_collate
    ra, rb = (
        evaluate(model, ev.batches, ev.score, **ev.settings())
        for ev in (
            planned_evaluation(plan, dataset, accuracy(model), every=1),  # rows indexed at once
            planned_evaluation(plan, as_map, accuracy(model), every=1),
        )
    )
    assert ra.items == rb.items and (ra.mean, ra.low, ra.high) == (rb.mean, rb.low, rb.high)


def test_a_lookup_function_that_lacks_an_item_says_which(dataset):
    plan = plan_subset(_history([str(i) for i in range(1797)]), 30, calibrate=False)
    model = MLP()
    missing = plan.subset[5]

    def lookup(item):
        if item == missing:
            raise KeyError(item)
        return dataset[int(item)]

    ev = planned_evaluation(plan, lookup, accuracy(model), every=10)
    with pytest.raises(InputError, match=f"has no item '{missing}', which the plan asks for"):
        evaluate(model, ev.batches, ev.score, **ev.settings())
    ev = planned_evaluation(plan, lambda item: dataset[int(item)], accuracy(model), every=10)
    assert evaluate(model, ev.batches, ev.score, **ev.settings()).n == 30


def test_a_score_per_batch_instead_of_per_item_is_refused(plan, dataset):
    model = MLP()
    per_batch = planned_evaluation(
        plan, dataset, lambda b: (model(b[0]).argmax(1) == b[1]).float().mean(), every=10
    )
    with pytest.raises(InputError, match=r"returned 1 score for batch 1, whose `ids` name 32"):
        evaluate(model, per_batch.batches, per_batch.score, **per_batch.settings())
    healthy = planned_evaluation(plan, dataset, accuracy(model), every=10)
    assert evaluate(model, healthy.batches, healthy.score, **healthy.settings()).n == BUDGET


def test_a_plan_from_another_benchmark_is_refused(plan, dataset):
    other = plan_subset(_history([str(i) for i in range(500)]), 40, calibrate=False)
    with pytest.raises(InputError, match="over a benchmark of 500 items, the dataset holds 1797"):
        planned_evaluation(other, dataset, accuracy(MLP()), every=10)
    assert planned_evaluation(plan, dataset, accuracy(MLP()), every=10).name == "eval"  # fits


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"full": True, "width": 0.1}, "`full=True` scores every item; give it without `width`"),
        ({"dataset": 3}, "dataset: must be a mapping item id -> item, a sequence"),
        ({"score": "accuracy"}, "`score` must be a function batch -> one score per item"),
        ({"batch_size": 0}, "batch_size"),
        ({"width": 0.1, "max_draws": 0}, "max_draws"),
    ],
)
def test_bad_planned_evaluation_arguments_say_what_to_pass(plan, dataset, kwargs, match):
    args = {"dataset": dataset, "score": accuracy(MLP()), **kwargs}
    with pytest.raises(InputError, match=match):
        planned_evaluation(plan, args.pop("dataset"), args.pop("score"), every=10, **args)


def test_a_ledger_without_eval_results_or_with_one_checkpoint_is_refused(tmp_path, dataset, plan):
    empty = labcoat.Ledger(tmp_path / "empty.db")
    empty.record_event("loss", step=1, value=0.5)
    with pytest.raises(InputError, match="holds no per-item eval results"):
        read_history(ledger=empty)
    torch.manual_seed(0)
    model = MLP()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    one = labcoat.Ledger(tmp_path / "one.db")
    full = planned_evaluation(plan, dataset, accuracy(model), every=20, full=True, name="d")
    train(model, opt, steps=20, evaluation=full, ledger=one, invariants=[])
    with pytest.raises(InputError, match=r"1 checkpoint\(s\) scored on all 1797 items; a history"):
        read_history(ledger=one)
    train(model, opt, steps=20, evaluation=full, ledger=one, invariants=[])  # a second run
    assert read_history(ledger=one).models.tolist() == ["run1/step19", "run2/step19"]


def test_evals_plan_reads_the_history_from_a_ledger(watched, tmp_path, capsys):
    from labcoat.cli.main import main

    _, ledger = watched
    out = tmp_path / "plan.json"
    code = main(["evals", "plan", "--from-ledger", ledger.location, "-k", "50", "-o", str(out)])
    assert code == 0 and len(labcoat.evals.load_plan(out).subset) == 50
    assert "labcoat: note: " in capsys.readouterr().err  # the two subset-only checkpoints
    empty = labcoat.Ledger(tmp_path / "empty.db")
    empty.record_event("loss", step=1, value=0.5)
    empty.close()
    assert main(["evals", "plan", "--from-ledger", str(tmp_path / "empty.db"), "-k", "5"]) == 2
    err = capsys.readouterr().err
    assert "holds no per-item eval results" in err and len(err.strip().splitlines()) == 1
    assert main(["evals", "plan", "-k", "5"]) == 2
    assert "give a HISTORY file, or --from-ledger PATH" in capsys.readouterr().err
