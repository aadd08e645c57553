"""The same staged pipelines on a local Ray with two workers give the local engine's answer."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from labcoat.audit import contamination, duplicates
from tests.audit.textgen import documents, edit_words, paragraph

ray = pytest.importorskip("ray")
pytestmark = [pytest.mark.slow, pytest.mark.ray]  # starts a Ray cluster: make test-all
SRC = str(Path(__file__).resolve().parents[2] / "src")


@pytest.fixture(scope="module")
def local_ray():
    started = not ray.is_initialized()
    if started:
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            runtime_env={"env_vars": {"PYTHONPATH": SRC}},
        )
    yield
    if started:
        ray.shutdown()


def test_ray_pipelines_match_local(local_ray, tmp_path, monkeypatch):
    import labcoat.audit.corpus as corpus_io
    import labcoat.audit.near_duplicates as near

    monkeypatch.setattr(corpus_io, "SHARD_BYTES", 20_000)  # several shards, so tasks really spread
    monkeypatch.setattr(near, "DOCS_PER_SHARD", 100)
    rng = np.random.default_rng(0)
    items = [paragraph(rng, 3) for _ in range(30)]
    docs = documents(200, rng)
    for host, item in ((10, 4), (150, 20)):
        docs[host] += " " + items[item]
    with (tmp_path / "corpus.jsonl").open("w") as fh:
        fh.writelines(json.dumps({"text": d}) + "\n" for d in docs)
    by_ray = contamination([tmp_path / "corpus.jsonl"], items, engine="ray", ledger=False)
    assert by_ray.corpus["shards"] > 2 and by_ray.corpus["engine"] == "ray"
    assert by_ray.dirty_ids == [4, 20]
    local = contamination(
        [tmp_path / "corpus.jsonl"], items, engine="local", n_jobs=1, ledger=False
    )
    assert [i.to_dict() for i in by_ray.items] == [i.to_dict() for i in local.items]

    test = documents(60, rng)
    test[3], test[9] = docs[0], edit_words(docs[1], 3, rng)
    on_ray = duplicates(docs, test, engine="ray", ledger=False)
    assert {(p.a, p.b) for p in on_ray.pairs} == {(0, 3), (1, 9)}
    here = duplicates(docs, test, engine="local", n_jobs=1, ledger=False)
    assert on_ray.to_dict()["pairs"] == here.to_dict()["pairs"]
