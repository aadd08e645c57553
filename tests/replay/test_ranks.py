"""The parts of distributed record/replay that run in-process: the exact tensor fingerprint,
naming a distributed run, agreeing on ``every``, and the rank diff's checkpoint comparison on
ranks recorded here (the torchrun runs are the slow tests of test_distributed.py)."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from torch import nn

import labcoat
from labcoat.errors import InputError
from labcoat.replay.distributed import _disagreement, rank_diff
from labcoat.replay.fingerprint import fingerprint
from labcoat.replay.rank import Group
from labcoat.replay.ranks import find_group

torch.set_num_threads(1)


def test_the_fingerprint_is_exact_and_sees_one_changed_bit():
    g = torch.Generator().manual_seed(0)
    for dtype in (torch.float32, torch.float64, torch.bfloat16, torch.float16):
        t = torch.randn(1000, generator=g).to(dtype)
        assert fingerprint(t) == fingerprint(t.clone())
        assert fingerprint(t) == fingerprint(t.flip(0))  # order-free: any reduction order
        nudged = t.clone()
        ints = {2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
        nudged.view(ints)[17] += 1  # the last bit of one element
        assert fingerprint(nudged) != fingerprint(t)
    assert fingerprint(torch.tensor([True, False])) == 1
    assert fingerprint(torch.zeros(3, dtype=torch.complex64)) == 0


def _record(root, nudge_at: int | None, every: int = 3, steps: int = 10):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with labcoat.replayable(model=model, optimizer=opt, every=every, dir=root, ledger=False) as rec:
        for _ in rec.loop("step", range(steps)):
            if rec.step == nudge_at:
                with torch.no_grad():
                    model[2].bias.add_(1e-3)
            loss = model(torch.ones(2, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            rec.log(loss=loss)
    return rec.dir


def _group(tmp_path, nudges: list[int | None], **kw):
    """A distributed run's folder built from runs recorded here, one per rank (what each rank
    of a torchrun launch writes, without launching it)."""
    top = tmp_path / "runs" / "20260101-000000-abcdef"
    top.mkdir(parents=True)
    names = ["0.weight", "0.bias", "2.weight", "2.bias"]
    for rank, nudge in enumerate(nudges):
        run = _record(tmp_path / f"solo{rank}", nudge, **kw)
        shutil.move(str(run), top / f"rank{rank}")
        manifest = json.loads((top / f"rank{rank}" / "run.json").read_text())
        manifest["group"] = {
            "id": top.name,
            "rank": rank,
            "world_size": len(nudges),
            "replicated": {"model": names},
        }
        (top / f"rank{rank}" / "run.json").write_text(json.dumps(manifest))
    ranks = [f"rank{r}" for r in range(len(nudges))]
    (top / "group.json").write_text(json.dumps({"run_id": top.name, "ranks": ranks}))
    return top


@pytest.mark.check("replay.ranks", planted=True)
@pytest.mark.check("replay.ranks", healthy=True)
def test_the_checkpoints_name_the_interval_and_the_rank_outside_the_majority(tmp_path, monkeypatch):
    """Three ranks, rank 2 nudges its copy of a bias at step 4: the checkpoints' hashes agree
    at 0 and 3 and differ at 6; rank 2 is outside the majority (without an all-reduce here the
    nudge reaches every tensor by step 6: the first in order is named). The healthy twin's
    ranks agree at every checkpoint."""
    monkeypatch.setenv("LABCOAT_RUNS", str(tmp_path / "runs"))
    top = _group(tmp_path, [None, None, 4])
    result = rank_diff(top, replay=False)
    assert result.first == {
        "step": None,
        "between": [3, 6],
        "tensor": "0.weight",
        "rank": 2,
        "ranks": [2],
        "agree": [0, 1],
        "majority": True,
    }
    (finding,) = result.findings
    assert (
        finding.status == "fail"
        and "rank 2 disagrees with ranks 0, 1 on 0.weight" in finding.message
    )
    assert find_group(top.name).dir == top and find_group("last").dir == top
    assert find_group(str(top / "rank1")).dir == top and find_group(top.name[:10]).dir == top
    healthy = _group(tmp_path / "twin", [None, None, None])
    result = rank_diff(healthy, replay=False)
    assert result.first is None and result.checkpoints == [0, 3, 6, 9]
    assert result.findings[0].status == "pass"


def test_a_difference_from_the_start_and_two_ranks_without_a_majority(tmp_path):
    top = _group(tmp_path, [None, 0])
    # the nudge at step 0 happens after the step-0 checkpoint: 0 agrees, 3 differs
    result = rank_diff(top, replay=False)
    assert result.first["between"] == [0, 3] and result.first["rank"] == 1
    assert result.first["majority"] is False
    assert "no majority" in result.findings[0].message
    assert _disagreement([5, 5, 7, 7]) == {
        "rank": 2,
        "ranks": [2, 3],
        "agree": [0, 1],
        "majority": False,
    }
    assert _disagreement([1, 1, 1]) is None


def test_a_single_process_run_is_refused_by_ranks(tmp_path):
    run = _record(tmp_path, None, steps=3)
    assert find_group(run) is None
    with pytest.raises(InputError, match="not a distributed run"):
        rank_diff(run)


def test_every_is_agreed_as_the_largest_any_rank_needs():
    store = torch.distributed.HashStore()
    groups = [Group("g", r, 3, r, {}, store=store, key="k") for r in range(3)]
    store.set("k/every/1", repr(40.0))  # rank 1 needs 40 steps between checkpoints
    store.set("k/every/2", repr(3.0))
    assert groups[0].agree_every(7.0) == 50  # nice_every(40)
    assert groups[0].agree_every(1000.0) == 50  # agreed once, fixed from then on


def test_diff_is_told_what_it_got(tmp_path, capsys):
    from labcoat.cli.main import main

    run = _record(tmp_path, None, steps=3)
    assert main(["divergence", str(run), "--no-ledger"]) == 2
    assert "pass two runs A B, or one distributed run with --ranks" in capsys.readouterr().err
    assert main(["divergence", str(run), "--ranks", "--no-ledger"]) == 2
    assert "not a distributed run" in capsys.readouterr().err
    assert main(["divergence", str(run), str(run), "--ranks", "--no-ledger"]) == 2
    assert "pass one RUN" in capsys.readouterr().err
    top = tmp_path / "group"
    top.mkdir()
    (top / "group.json").write_text("{}")
    assert main(["divergence", str(top), str(run), "--no-ledger"]) == 2
    assert "is a distributed run" in capsys.readouterr().err
