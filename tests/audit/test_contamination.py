"""Benchmark contamination: eval items planted in a generated training corpus (text files,
JSONL and Parquet) must be found; near misses and boilerplate must not count."""

from __future__ import annotations

import json

import numpy as np
import pytest

from labcoat.audit import contamination
from labcoat.errors import InputError
from tests.audit.textgen import BOILERPLATE, documents, paragraph

N_ITEMS = 60


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """A corpus in three formats with 10 eval items copied into it (case and punctuation
    changed), one shuffled near miss and a boilerplate phrase in 15 documents."""
    rng = np.random.default_rng(0)
    root = tmp_path_factory.mktemp("corpus")
    items = [paragraph(rng, 3) for _ in range(N_ITEMS)]
    dirty = rng.choice(N_ITEMS, 10, replace=False)
    docs = documents(300, rng)
    hosts = rng.choice(300, 10, replace=False)
    for item, host in zip(dirty, hosts):
        copy = items[item].upper().replace(".", " ,").replace("!", "")
        docs[host] = docs[host] + " " + copy + " " + paragraph(rng, 2)
    near_miss = int(np.setdiff1d(np.arange(N_ITEMS), dirty)[0])
    ws = items[near_miss].split()
    docs[int(np.setdiff1d(np.arange(300), hosts)[0])] += " " + " ".join(
        ws[i] for i in range(len(ws)) if i % 8
    )
    boilerplate_item = int(np.setdiff1d(np.arange(N_ITEMS), dirty)[1])
    items[boilerplate_item] = BOILERPLATE + ". " + items[boilerplate_item]  # docs end with it
    for d in range(15):
        docs[280 - d] += " " + BOILERPLATE
    (root / "txt").mkdir()
    for i, doc in enumerate(docs[:100]):
        (root / "txt" / f"{i:03d}.txt").write_text(doc)
    with (root / "part.jsonl").open("w") as fh:
        for doc in docs[100:200]:
            fh.write(json.dumps({"content": doc, "source": "web"}) + "\n")
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"content": docs[200:]}), root / "part.parquet", row_group_size=30)
    paths = [root / "txt", root / "*.jsonl", root / "part.parquet"]
    return paths, items, set(dirty.tolist()), near_miss, boilerplate_item


def test_gpt3_finds_the_planted_items(planted):
    paths, items, dirty, near_miss, boilerplate_item = planted
    result = contamination(paths, items, corpus_column="content", ledger=False)
    assert set(result.dirty_ids) == dirty  # recall and precision 1
    overlap = {i.id: i.overlap for i in result.items}
    assert all(overlap[i] == 1.0 for i in dirty)
    assert overlap[near_miss] == 0.0 and overlap[boilerplate_item] == 0.0
    assert result.corpus["documents"] == 300
    assert result.corpus["ignored_grams"] > 0  # the boilerplate grams, seen in 15 documents
    assert result.findings[0].status == "fail"


def test_boilerplate_counts_when_the_document_cap_is_off(planted):
    paths, items, dirty, _, boilerplate_item = planted
    result = contamination(paths, items, corpus_column="content", max_docs=None, ledger=False)
    assert set(result.dirty_ids) == dirty | {boilerplate_item}


@pytest.mark.check("audit.contamination", healthy=True)
def test_a_clean_eval_set_passes(planted):
    paths, items, dirty, _, _ = planted
    clean = [t for i, t in enumerate(items) if i not in dirty]
    result = contamination(paths, clean, corpus_column="content", ledger=False)
    assert result.n_dirty == 0 and result.findings[0].status == "pass"


def test_llama2_token_spans(planted):
    paths, items, dirty, _, _ = planted
    half = next(iter(dirty))
    ws = items[half].split()
    edited = list(items)
    edited[half] = " ".join(
        ws[: len(ws) // 2] + ["novel"] * (len(ws) - len(ws) // 2)
    )  # half copied
    result = contamination(
        paths, edited, method="llama2", n=10, corpus_column="content", ledger=False
    )
    overlap = {i.id: i.overlap for i in result.items}
    assert set(result.dirty_ids) == dirty - {half}
    assert 0.3 < overlap[half] < 0.8


def test_clean_vs_dirty_scores_with_error_bars(planted):
    paths, items, dirty, _, _ = planted
    rng = np.random.default_rng(0)
    scores = np.where(np.isin(np.arange(N_ITEMS), list(dirty)), 1.0, rng.integers(0, 2, N_ITEMS))
    result = contamination(paths, items, scores=scores, corpus_column="content", ledger=False)
    s = result.scores
    assert s["dirty"]["mean"] == 1.0 and s["dirty"]["n"] == 10
    assert s["difference"]["diff"] < 0 and s["difference"]["ci"][1] < 0  # dirty items score higher
    assert "moved the score" in result.findings[0].message


def test_items_shorter_than_n_are_reported_unchecked(planted):
    paths, _, _, _, _ = planted
    result = contamination(paths, ["the small model trains"], corpus_column="content", ledger=False)
    assert result.items[0].overlap is None and result.findings[0].status == "warn"


def test_bad_input(planted, tmp_path):
    paths, items, _, _, _ = planted
    with pytest.raises(InputError, match="no column 'text'"):
        contamination(paths, items, ledger=False)  # the corpus calls it 'content'
    with pytest.raises(InputError, match="no such file"):
        contamination([tmp_path / "missing.jsonl"], items, ledger=False)
    with pytest.raises(InputError, match="one per item"):
        contamination(paths, items, scores=[1.0], corpus_column="content", ledger=False)


def test_byte_hashed_words_match_the_word_splitter(planted):
    from labcoat.audit.text import Vocabulary, build_vocabulary, word_ids, words

    docs = [
        "Hello, World! It's a 13-gram TEST_case",
        "École — “naïve” ÜBER\u00a0straße",
        "",
        "tab\tand\nnewline",
    ]
    vocab = build_vocabulary([words(d) for d in docs[:2]])
    ids, doc = Vocabulary(vocab).ids_of(docs)
    assert ids.tolist() == np.concatenate([word_ids(words(d), vocab) for d in docs]).tolist()
    assert doc.tolist() == [i for i, d in enumerate(docs) for _ in words(d)]
    paths, items, _, _, _ = planted  # the byte path and the plain word path agree end to end
    fast = contamination(paths, items, corpus_column="content", ledger=False)
    plain = contamination(paths, items, corpus_column="content", tokenize=words, ledger=False)
    assert [i.to_dict() for i in fast.items] == [i.to_dict() for i in plain.items]
