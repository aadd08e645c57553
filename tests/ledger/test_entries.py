"""Entries on both backends: written at once, resolved as revisions, filtered with AND and OR."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

import labcoat
from labcoat.errors import InputError
from labcoat.ledger import Ledger


def test_public_name_is_the_ledger():
    assert labcoat.Ledger is Ledger


def test_hypothesis_is_written_at_once(ledger, location):
    e = ledger.hypothesis("lr too high", predict="loss diverges above lr=1", tags=("optim",))
    assert e.id == 1 and e.verdict == "open" and e.revision == 1
    # another handle (another process would do the same) sees it before any resolve
    with Ledger(location) as other:
        seen = other.entry(e.id)
    assert (seen.title, seen.prediction, seen.tags) == (
        "lr too high",
        "loss diverges above lr=1",
        ("optim",),
    )


def test_resolve_appends_a_revision_and_keeps_the_prediction(ledger):
    e = ledger.hypothesis("labels are shuffled", predict="train accuracy stays at chance")
    e = ledger.resolve(
        e, result="accuracy reached 0.98", verdict="refuted", conclusion="labels are fine"
    )
    assert (e.verdict, e.revision, e.result) == ("refuted", 2, "accuracy reached 0.98")
    history = ledger.history(e.id)
    assert [h.revision for h in history] == [1, 2]
    assert history[0].result is None and history[0].verdict == "open"
    assert history[1].prediction == "train accuracy stays at chance"
    assert (
        history[0].recorded_at <= history[1].recorded_at
        and history[0].created_at == history[1].created_at
    )


def test_resolve_refuses_bad_verdicts_and_unknown_entries(ledger):
    e = ledger.hypothesis("x", predict="y")
    with pytest.raises(
        InputError,
        match="`verdict` must be one of 'confirmed', 'refuted', 'inconclusive'; got 'open'",
    ):
        e = ledger.resolve(e, result="r", verdict="open")
    with pytest.raises(InputError, match="verdict"):
        e = ledger.resolve(e, result="r", verdict="maybe")
    with pytest.raises(InputError, match="entry 99: there is no such entry"):
        ledger.resolve(99, result="r", verdict="refuted")
    with pytest.raises(InputError, match="title: is empty"):
        ledger.hypothesis("  ", predict="p")
    with pytest.raises(InputError, match="cannot change colour"):
        e = ledger.revise(e, colour="red")
    assert ledger.history(e.id)[-1].revision == 1  # nothing was written by the refused calls


def test_links_to_parents_and_runs_must_exist(ledger):
    parent = ledger.hypothesis("loss plateaus", predict="lr schedule is flat")
    child = ledger.hypothesis(
        "warmup too long", predict="plateau ends at step 1000", parents=[parent]
    )
    assert child.parents == (parent.id,)
    with pytest.raises(InputError, match="parents: there is no entry 42"):
        ledger.hypothesis("orphan", predict="p", parents=[42])
    with pytest.raises(InputError, match="runs: there is no run 7"):
        ledger.hypothesis("no run", predict="p", runs=[7])
    with pytest.raises(InputError, match="cannot be its own parent"):
        child = ledger.revise(child, parents=[child.id])
    assert [e.id for e in ledger.entries(parent=parent.id)] == [child.id]


def test_a_single_string_is_one_tag(ledger):
    assert ledger.hypothesis("t", predict="p", tags="data").tags == ("data",)


@pytest.fixture
def notebook(ledger):
    a = ledger.hypothesis(
        "Loss spikes come from bad batches",
        predict="spikes repeat at the same batch",
        tags=["data", "spikes"],
    )
    b = ledger.hypothesis(
        "Loss spikes come from Adam epsilon",
        predict="larger eps removes spikes",
        tags=["optim", "spikes"],
    )
    c = ledger.hypothesis("Eval leak between splits", predict="overlap is zero", tags=["data"])
    a = ledger.resolve(a, result="spikes moved with shuffling", verdict="refuted")
    b = ledger.resolve(b, result="eps=1e-6 removed them", verdict="confirmed")
    return ledger, a, b, c


def ids(entries):
    return [e.id for e in entries]


def test_filters_combine_with_and_by_default(notebook):
    ledger, a, b, c = notebook
    assert ids(ledger.entries(tag="data")) == [a.id, c.id]
    assert ids(ledger.entries(tag="spikes", verdict="refuted")) == [a.id]
    assert ids(ledger.entries(tag="data", text="LEAK")) == [c.id]  # text is case-insensitive
    assert ids(ledger.entries(verdict="open")) == [c.id]


def test_values_within_a_filter_are_alternatives_and_any_means_or(notebook):
    ledger, a, b, c = notebook
    assert ids(ledger.entries(verdict=["confirmed", "open"])) == [b.id, c.id]
    assert ids(ledger.entries(tag="optim", verdict="open", match="any")) == [b.id, c.id]
    assert ids(ledger.entries(text=["epsilon", "leak"])) == [b.id, c.id]


def test_text_search_covers_result_and_escapes_wildcards(notebook):
    ledger, a, b, c = notebook
    assert ids(ledger.entries(text="moved with shuffling")) == [a.id]
    assert ledger.entries(text="%") == [] and ledger.entries(text="_") == []


def test_date_filters(notebook):
    ledger, a, b, c = notebook
    today = datetime.now().date()
    assert ids(ledger.entries(since=today)) == [a.id, b.id, c.id]
    assert ids(ledger.entries(until=today)) == [a.id, b.id, c.id]  # a bare date includes that day
    assert ledger.entries(since=today + timedelta(days=1)) == []
    assert ledger.entries(until=(today - timedelta(days=1)).isoformat()) == []
    cut = datetime.fromisoformat(b.created_at)
    assert ids(ledger.entries(since=cut)) == [b.id, c.id]
    assert ids(ledger.entries(until=cut.astimezone(timezone.utc))) == [a.id]
    with pytest.raises(InputError, match="since: 'last week' is not a date"):
        ledger.entries(since="last week")


def test_tag_filter_reads_the_latest_revision(notebook):
    ledger, a, b, c = notebook
    c = ledger.revise(c, tags=["leakage"])
    assert ids(ledger.entries(tag="data")) == [a.id]
    assert ids(ledger.entries(tag="leakage")) == [c.id]
