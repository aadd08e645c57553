"""Evaluation during training: per-item scores stream into an anytime-valid confidence
sequence and the eval stops once the interval is tight."""

from __future__ import annotations

import json

import pytest
import torch

from labcoat.errors import InputError
from labcoat.watch import Evaluation
from labcoat.watch.evaluation import evaluate
from tests.watch._training import MLP, digits, train


def trained_mlp():
    torch.manual_seed(0)
    model = MLP()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    train(model, opt, steps=150, every=10, invariants=[])
    return model, opt


def eval_batches(size=50):
    x, y = digits()
    perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
    x, y = x[perm], y[perm]
    return [(x[i : i + size], y[i : i + size]) for i in range(0, len(x), size)]


def accuracy_of(model):
    return lambda batch: (model(batch[0]).argmax(1) == batch[1]).float()


def test_eval_stops_early_once_the_interval_is_tight_and_covers_the_full_score():
    model, _ = trained_mlp()
    batches = eval_batches()
    full = torch.cat([accuracy_of(model)(b) for b in batches]).mean().item()
    res = evaluate(model, batches, accuracy_of(model), width=0.15)
    assert res.stopped_early and res.n < 1797 and res.batches < len(batches)
    assert res.width < 0.15 and res.low <= full <= res.high


def test_eval_without_early_stop_reads_every_item():
    model, _ = trained_mlp()
    batches = eval_batches()
    res = evaluate(model, batches, accuracy_of(model), width=1e-4)
    assert not res.stopped_early and res.n == 1797 and res.batches == len(batches)
    full = torch.cat([accuracy_of(model)(b) for b in batches]).mean().item()
    assert res.mean == pytest.approx(full)


def test_eval_can_stop_once_a_threshold_is_excluded():
    model, _ = trained_mlp()
    res = evaluate(model, eval_batches(), accuracy_of(model), width=None, threshold=0.5)
    assert res.stopped_early and res.low > 0.5 and res.n <= 200


def test_eval_restores_each_modules_mode_and_leaves_gradients_alone():
    model, _ = trained_mlp()
    model.train()
    model.fc1.eval()  # the user's own choice for one submodule must survive
    grads = [p.grad.clone() for p in model.parameters()]
    modes = []
    res = evaluate(
        model,
        eval_batches(),
        lambda b: modes.append(model.training) or accuracy_of(model)(b),
        width=0.2,
    )
    assert res.n > 0 and modes and not any(modes)
    assert model.training and model.fc2.training and not model.fc1.training
    assert all(torch.equal(g, p.grad) for g, p in zip(grads, model.parameters()))


def test_periodic_evaluation_runs_every_n_steps_and_is_recorded_as_an_event(tmp_path):
    torch.manual_seed(0)
    model = MLP()
    opt = torch.optim.SGD(model.parameters(), lr=0.02)
    ev = Evaluation(eval_batches, accuracy_of(model), every=40, width=0.2, name="digits accuracy")
    w = train(model, opt, steps=120, every=10, evaluation=ev, events=tmp_path / "e.jsonl")
    assert [r.step for r in w.evaluations] == [39, 79, 119]
    assert w.evaluations[-1].mean > w.evaluations[0].mean  # it learned, and the evals see it
    events = [json.loads(line) for line in (tmp_path / "e.jsonl").read_text().splitlines()]
    assert [e["kind"] for e in events if e["kind"] != "series"] == ["eval"] * 3
    assert [e["step"] for e in events if e["kind"] == "series"] == list(range(0, 120, 10))
    events = [e for e in events if e["kind"] == "eval"]
    assert (
        events[0]["message"].startswith("digits accuracy: ")
        and "anytime interval" in events[0]["message"]
    )
    assert w.alerts == []


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda m: evaluate(m, [], lambda b: b), "got no scores"),
        (lambda m: evaluate(m, [torch.zeros(2, 2)], lambda b: b), "one score per item"),
        (lambda m: evaluate(m, [torch.full((3,), 2.0)], lambda b: b), r"must lie in \[0, 1\]"),
        (
            lambda m: evaluate(m, [(torch.ones(4, 2), torch.ones(4))], lambda b: b[1].mean()),
            "batch 1 holds 4 items and got one score",
        ),
        (
            lambda m: evaluate(m, [torch.ones(4)], lambda b: b[:2], ids=lambda b: range(4)),
            r"returned 2 scores for batch 1, whose `ids` name 4 items",
        ),
        (
            lambda m: Evaluation([], lambda b: b, every=5, ids="id"),
            "Evaluation `ids` must be a function batch -> item ids; got str",
        ),
        (lambda m: evaluate(m, [1], lambda b: b, width=None), "needs `width`, `threshold` or both"),
        (lambda m: Evaluation([], lambda b: b, every=0), "`every` must be an int >= 1; got 0"),
    ],
)
def test_bad_evaluation_input_says_what_to_pass(call, match):
    with pytest.raises(InputError, match=match):
        call(MLP())


def test_one_score_for_a_one_item_batch_is_that_items_score():
    # the healthy twin of the score-per-batch check: a batch of one item may give a 0-d score
    res = evaluate(MLP(), [(torch.ones(1, 2), torch.ones(1))] * 3, lambda b: b[1].mean(), width=0.1)
    assert res.n == 3 and res.mean == 1.0


def test_an_evaluation_that_names_its_items_records_each_items_score(tmp_path):
    from labcoat.report.sections.watch import split
    from labcoat.watch.result import report

    torch.manual_seed(0)
    model = MLP()
    opt = torch.optim.SGD(model.parameters(), lr=0.02)
    x, y = digits()
    batches = [(torch.arange(i, i + 100), x[i : i + 100], y[i : i + 100]) for i in (0, 100, 200)]
    score = lambda b: (model(b[1]).argmax(1) == b[2]).float()  # noqa: E731
    ev = Evaluation(batches, score, every=40, width=0.3, name="digits", ids=lambda b: b[0])
    w = train(model, opt, steps=80, every=10, evaluation=ev, events=tmp_path / "e.jsonl")
    events = [json.loads(line) for line in (tmp_path / "e.jsonl").read_text().splitlines()]
    items = [e for e in events if e["kind"] == "eval_item"]
    assert [len(r.items) for r in w.evaluations] == [r.n for r in w.evaluations]
    assert len(items) == sum(r.n for r in w.evaluations) and items[0]["eval"] == "digits"
    first = w.evaluations[0]
    assert [(e["item"], e["value"]) for e in items if e["step"] == 39] == list(first.items)
    assert first.items[0][0] == "0" and first.to_event(None)["evidence"]["items"] == first.n
    assert [e["kind"] for e in w.events] == ["eval", "eval"]  # items are not kept in memory
    rep = report([tmp_path / "e.jsonl"])
    assert rep.eval_items == len(items) and [e["kind"] for e in rep.other_events] == ["eval"] * 2
    assert "eval_item" not in split(events)[1]  # not drawn as a curve


def test_evaluation_fields_and_evaluate_keywords_are_one_list():
    import dataclasses
    import inspect

    from labcoat.watch.evaluation import Evaluation, evaluate

    keywords = [
        p
        for p in inspect.signature(evaluate).parameters.values()
        if p.kind is p.KEYWORD_ONLY and p.name != "step"
    ]
    settings = [
        f for f in dataclasses.fields(Evaluation) if f.name not in ("batches", "score", "every")
    ]
    assert [p.name for p in keywords] == [f.name for f in settings]
    assert [p.default for p in keywords] == [f.default for f in settings]
    ev = Evaluation([], lambda b: b, every=5, width=None, threshold=0.5)
    assert ev.settings() == {
        "width": None,
        "threshold": 0.5,
        "lower": 0.0,
        "upper": 1.0,
        "level": 0.95,
        "name": "eval",
        "ids": None,
        "estimator": None,
    }


def test_an_evaluation_event_names_its_level_and_keeps_confidence_one_release():
    from labcoat.watch.evaluation import EvalResult

    result = EvalResult(
        name="eval",
        step=10,
        n=50,
        mean=0.8,
        low=0.7,
        high=0.9,
        level=0.9,
        stopped_early=False,
        batches=1,
        seconds=0.1,
    )
    evidence = result.to_event(0)["evidence"]
    assert evidence["interval"] == [0.7, 0.9] and evidence["level"] == 0.9
    assert evidence["confidence"] == 0.9  # the deprecated key, for one release
