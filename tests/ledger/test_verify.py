"""verify: intact ledgers pass; rows changed with plain SQL are caught and named."""

from __future__ import annotations

import pytest

from labcoat.findings import Finding
from labcoat.ledger.store.chain import canonical, link_hash
from labcoat.ledger.store.schema import ENTRY_REVISIONS

from .tamper import raw_sql


@pytest.fixture
def filled(ledger):
    a = ledger.hypothesis("lr too high", predict="loss diverges", tags=["optim"])
    b = ledger.hypothesis("labels shuffled", predict="accuracy at chance", tags=["data"])
    a = ledger.resolve(a, result="no divergence", verdict="refuted")
    with ledger.run(config={"lr": 0.1}, git=False) as run:
        run.record_events([{"kind": "loss", "step": s, "value": 1.0 / (s + 1)} for s in range(5)])
        run.record_findings(
            [Finding("grad_flow", "model", "pass", "all parameters get gradients")], source="doctor"
        )
    return ledger, a, b


def test_intact_ledger_is_truthy_and_counts_rows(filled):
    ledger, a, b = filled
    result = ledger.verify()
    assert result and result.ok and result.problems() == []
    # 2 created + 1 resolved; the finding is a row of the run, not an entry
    assert result.rows["entry_revisions"] == 3
    assert (
        result.rows["runs"],
        result.rows["run_ends"],
        result.rows["events"],
        result.rows["findings"],
    ) == (1, 1, 5, 1)


def test_a_row_edited_with_plain_sql_is_caught(filled, location):
    ledger, a, b = filled
    raw_sql(
        location,
        "UPDATE entry_revisions SET prediction = ? WHERE entry_id = ? AND revision = 1",
        ("loss stays flat", a.id),
    )
    result = ledger.verify()
    assert not result
    [brk] = result.breaks
    assert (brk.table, brk.row_id, brk.kind) == ("entry_revisions", 1, "edited")
    assert "entry_revisions row 1" in result.problems()[0]
    assert result.to_dict()["ok"] is False


@pytest.mark.parametrize(
    "statement, table, kind",
    [
        ("UPDATE events SET value = 0.5 WHERE id = 3", "events", "edited"),
        ("DELETE FROM events WHERE id = 2", "events", "missing"),
        ("DELETE FROM events WHERE id = 5", "events", "head"),
        (
            "UPDATE run_ends SET exit_status = 0, status = 'ok' WHERE run_id = 1 AND 1 = 0",
            None,
            None,
        ),  # no-op twin
        ("UPDATE findings SET status = 'fail' WHERE id = 1", "findings", "edited"),
        ("UPDATE runs SET config = '{\"lr\":1.0}' WHERE id = 1", "runs", "edited"),
        ("DELETE FROM entry_index WHERE kind = 'tag' AND value = 'data'", "entry_index", "edited"),
        ("UPDATE chain_heads SET last_id = last_id + 1 WHERE name = 'events'", "events", "head"),
    ],
)
def test_each_kind_of_tampering_is_named(filled, location, statement, table, kind):
    ledger, a, b = filled
    raw_sql(location, statement)
    result = ledger.verify()
    if table is None:  # the healthy twin: a statement that changes nothing
        assert result.ok
        return
    assert not result.ok
    assert [(x.table, x.kind) for x in result.breaks] == [(table, kind)]


def test_a_forged_hash_breaks_the_link_to_the_next_row(filled, location):
    """Recomputing the edited row's own hash is not enough: the next row still points at the old
    one."""
    ledger, a, b = filled
    cols = ", ".join(ENTRY_REVISIONS.columns)
    [row] = raw_sql(location, f"SELECT {cols}, prev_hash FROM entry_revisions WHERE id = 1")
    content = dict(zip(ENTRY_REVISIONS.columns, row[:-1]))
    content["prediction"] = "loss stays flat"
    forged = link_hash("entry_revisions", row[-1], content)
    raw_sql(
        location,
        "UPDATE entry_revisions SET prediction = ?, hash = ? WHERE id = 1",
        ("loss stays flat", forged),
    )
    result = ledger.verify()
    assert [(x.table, x.row_id, x.kind) for x in result.breaks] == [
        ("entry_revisions", 2, "relinked")
    ]


def test_a_changed_blob_is_caught(ledger, location):
    ledger.hypothesis("x", predict="y")
    import io
    import sys

    from labcoat.ledger.wrap import run_wrapped

    run_wrapped(
        ledger,
        [sys.executable, "-c", "print('hello')"],
        stdout=io.StringIO(),
        stderr=io.StringIO(),
        git=False,
    )
    assert ledger.verify().ok
    raw_sql(location, "UPDATE blobs SET content = ?, encoding = 'raw'", (b"goodbye\n",))
    result = ledger.verify()
    assert [(x.table, x.kind) for x in result.breaks] == [("blobs", "edited")]


def test_prediction_order_is_reported(ledger):
    early = ledger.hypothesis("warmup too short", predict="loss spikes in the first 100 steps")
    late = ledger.hypothesis("no prediction given", predict=None)
    changed = ledger.hypothesis("eps too small", predict="spikes vanish with eps=1e-6")
    early = ledger.resolve(early, result="spikes at step 40", verdict="confirmed")
    late = ledger.resolve(late, result="something happened", verdict="inconclusive")
    changed = ledger.resolve(changed, result="spikes remained", verdict="refuted")
    changed = ledger.revise(
        changed, prediction="spikes remain with eps=1e-6"
    )  # rewriting the prediction afterwards
    result = ledger.verify()
    assert result.ok  # honest revisions are not tampering ...
    orders = {p.entry_id: p.order for p in result.predictions}
    assert orders == {
        early.id: "before",
        late.id: "no prediction",
        changed.id: "changed after result",
    }
    assert result.predicted_first == 1  # ... but they are reported
    p = next(p for p in result.predictions if p.entry_id == early.id)
    assert (p.predicted_revision, p.result_revision) == (1, 2) and p.predicted_at <= p.resolved_at


def test_values_are_stored_as_their_column_type_so_hashes_read_back(ledger):
    """SQLite would turn 3.0 into 3 in an INTEGER column (and 1 into 1.0 in a REAL one) after
    the hash was taken; coercing first keeps verify quiet on honest data."""
    import numpy as np

    odd = Finding(
        check=7,
        layer="model",
        status="pass",
        message="ok",
        step=3.0,
        rank=np.int64(1),
        duration_s=1,
    )
    ledger.record_findings([odd], source="doctor")
    ledger.record_events(
        [{"kind": "loss", "step": np.int32(4), "value": np.float32(0.5), "time": 10}]
    )
    assert ledger.verify().ok
    [back] = ledger.findings()
    assert (back.check, back.step, back.rank, back.duration_s) == ("7", 3, 1, 1.0)


def test_canonical_form_is_stable():
    assert canonical({"b": 1, "a": "é"}) == '{"a":"é","b":1}'.encode()
    with pytest.raises(ValueError):
        canonical({"x": float("nan")})
