"""Benchmark contamination: which eval items a training corpus already contains.

Two published methods. GPT-3 (Brown et al. 2020, App. C): lower-cased words without
punctuation, 13-grams; a gram found in more than 10 training documents is boilerplate and
ignored; an item is dirty when any of its grams is in the corpus. Llama 2 (Touvron et al. 2023,
App. A.6): an eval token is contaminated when it lies in an n-gram shared with the corpus
(small gaps of up to ``skip_budget`` tokens between matched spans count as matched), and an
item is dirty when more than 80 % of its tokens are.

The corpus streams through a staged pipeline (shard -> per-shard document counts of the eval
set's n-grams, written to files -> sum -> report), locally or on Ray; memory is bounded by
the eval set. With ``scores``, the eval score is reported on clean and dirty items separately
with error bars (Llama 2's analysis), to show whether contamination moved the number.
"""

from __future__ import annotations

import pickle
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from labcoat._validation import (
    N_JOBS,
    Interval,
    OneOf,
    article,
    renamed,
    validate_params,
)
from labcoat.audit import corpus as corpus_io
from labcoat.audit.checks import AuditResult, check
from labcoat.audit.engine import make_engine
from labcoat.audit.engine import workdir as make_workdir
from labcoat.audit.text import GramIndex, Vocabulary, build_vocabulary, word_ids, words
from labcoat.errors import InputError
from labcoat.findings import Outcome, failed, passed, warned
from labcoat.result import check_kind

METHODS = ("gpt3", "llama2")
#: GPT-3: grams in more than this many training documents are ignored
GPT3_MAX_DOCS = 10
#: Llama 2: an item is dirty above this share of contaminated tokens
LLAMA2_DIRTY = 0.8
LLAMA2_SKIP_BUDGET = 4
#: words (characters on the fast path) read before a batch of documents is looked up at once
BATCH_WORDS = 200_000
BATCH_CHARS = 1 << 20


@dataclass(frozen=True)
class ItemOverlap:
    """One eval item: its id, whether it is dirty, and the share of its n-grams (GPT-3) or
    tokens (Llama 2) found in the corpus; ``overlap`` is None when the item is shorter than n."""

    id: Any
    dirty: bool
    overlap: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "dirty": self.dirty, "overlap": self.overlap}


@dataclass
class Contamination(AuditResult):
    """Per-item overlap with the corpus, the corpus pass's figures and the clean/dirty scores."""

    KIND = "audit.contamination"

    items: list[ItemOverlap]
    method: str
    n: int
    max_docs: int | None
    corpus: dict[str, Any] = field(default_factory=dict)
    scores: dict[str, Any] | None = None

    CHECKS = ("audit.contamination",)

    @property
    def n_dirty(self) -> int:
        return sum(item.dirty for item in self.items)

    @property
    def n_unchecked(self) -> int:
        return sum(item.overlap is None for item in self.items)

    @property
    def dirty_ids(self) -> list[Any]:
        return [item.id for item in self.items if item.dirty]

    def to_dict(self) -> dict[str, Any]:
        return {
            "items": [item.to_dict() for item in self.items],
            "n_dirty": self.n_dirty,
            "n_items": len(self.items),
            "n_unchecked": self.n_unchecked,
            "method": self.method,
            "n": self.n,
            "max_docs": self.max_docs,
            "corpus": self.corpus,
            "scores": self.scores,
            "findings": [f.to_dict() for f in self.findings],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Contamination":
        """The result again from its ``to_dict()``, which keeps all of it."""
        check_kind(cls, data)
        items = [ItemOverlap(**i) for i in data["items"]]
        figures = (data["method"], data["n"], data["max_docs"], data["corpus"], data["scores"])
        return cls(items, *figures)


@check(
    "audit.contamination",
    falsifies="the eval set is unseen: none of its items appears in the training corpus",
    predicts="no eval item shares n-grams with the corpus beyond the method's threshold",
)
def _contamination_outcome(result: Contamination) -> Outcome:
    evidence: dict[str, Any] = {
        "dirty": result.n_dirty,
        "items": len(result.items),
        "unchecked": result.n_unchecked,
        "dirty_ids": result.dirty_ids[:20],
        "method": result.method,
        "n": result.n,
    }
    moved = ""
    if result.scores and result.scores.get("difference"):
        d = result.scores["difference"]
        evidence["clean_minus_dirty"] = d
        lo, hi = d["ci"]
        verdict = "moved" if d["pvalue"] < 0.05 else "did not detectably move"
        moved = (
            f"; dirty items score {-d['diff']:+.3g} vs clean (95% CI {-hi:+.3g} to {-lo:+.3g}): "
            f"contamination {verdict} the score"
        )
    if result.n_dirty:
        return failed(
            f"{result.n_dirty} of {len(result.items)} eval items are in the corpus "
            f"({result.method}, {result.n}-grams){moved}",
            **evidence,
        )
    if result.n_unchecked:
        return warned(
            f"no dirty items, but {result.n_unchecked} of {len(result.items)} are shorter than "
            f"{result.n} "
            "tokens and were not checked; pass a smaller n",
            **evidence,
        )
    return passed(
        f"none of {len(result.items)} eval items is in the corpus ({result.method}, "
        f"{result.n}-grams)",
        **evidence,
    )


@renamed(workers="n_jobs")
@validate_params(
    {
        "n": Interval(int, 1),
        "method": OneOf(METHODS),
        "skip_budget": Interval(int, 0),
        "dirty_above": Interval(float, 0.0, 1.0, none=True),
        "n_jobs": N_JOBS,
    }
)
def contamination(
    corpus: str | Path | Sequence[str | Path],
    eval_items: Sequence[str],
    *,
    n: int = 13,
    method: str = "gpt3",
    ids: Sequence[Any] | None = None,
    scores: Sequence[float] | None = None,
    max_docs: int | None | str = "default",
    dirty_above: float | None = None,
    skip_budget: int = LLAMA2_SKIP_BUDGET,
    tokenize: Callable[[str], list[str]] | None = None,
    corpus_column: str = "text",
    engine: Any = "local",
    n_jobs: int | None = None,
    address: str | None = None,
    workdir: str | Path | None = None,
    ledger: Any = None,
) -> Contamination:
    """Mark each eval item dirty or clean by its n-gram overlap with a training corpus.

    ``corpus``: files, directories or globs (``.txt`` is one document; JSONL/Parquet rows'
    ``corpus_column`` is one). ``method``: ``"gpt3"`` (default: n=13 words, grams in more than
    ``max_docs``=10 documents ignored, dirty on any match) or ``"llama2"`` (token spans,
    dirty above ``dirty_above``=0.8 of tokens, no document cap). ``tokenize`` replaces the
    word splitter (e.g. a tokenizer's ``tokenize`` for Llama 2's token n-grams; it must be
    picklable for worker processes). ``scores``: per-item eval scores, compared between clean
    and dirty items with error bars. ``engine``: ``"local"`` or ``"ray"``.
    """
    if engine == "ray":  # before any work
        from labcoat.extras import require

        require("ray", "engine='ray'")
    if max_docs == "default":
        max_docs = GPT3_MAX_DOCS if method == "gpt3" else None
    if dirty_above is None:
        dirty_above = 0.0 if method == "gpt3" else LLAMA2_DIRTY
    texts = _check_items(eval_items)
    ids = list(range(len(texts))) if ids is None else list(ids)
    if len(ids) != len(texts):
        raise InputError(f"ids: got {len(ids)} ids for {len(texts)} eval items; pass one per item")
    score_values = None if scores is None else _check_scores(scores, len(texts))

    split = tokenize or words
    tokens = [split(t) for t in texts]
    vocab = build_vocabulary(tokens)
    item_ids = [word_ids(t, vocab) for t in tokens]
    windows = [
        np.lib.stride_tricks.sliding_window_view(a, n).reshape(-1) for a in item_ids if len(a) >= n
    ]
    index = GramIndex(np.concatenate(windows) if windows else np.empty(0, np.int64), n)
    shards = corpus_io.shards(corpus, column=corpus_column)
    runner = make_engine(engine, n_jobs=n_jobs, address=address)
    started = time.perf_counter()
    with make_workdir(workdir) as work:
        index_file = (
            work / f"eval-index-{uuid.uuid4().hex}.pkl"
        )  # worker processes cache it by name
        with index_file.open("wb") as fh:
            pickle.dump(_Index(vocab, index, tokenize, None if tokenize else Vocabulary(vocab)), fh)
        tasks = [
            (str(index_file), shard, str(work / f"counts-{i:05d}.npy"))
            for i, shard in enumerate(shards)
        ]
        done = runner.map(
            count_shard, tasks, small=sum(s.size for s in shards) < corpus_io.SHARD_BYTES
        )
        doc_freq = np.zeros(len(index), np.int64)
        for out_file, _size, _docs in done:
            doc_freq += np.load(out_file)
    seconds = time.perf_counter() - started
    found = doc_freq >= 1
    if max_docs is not None:
        found &= doc_freq <= max_docs
    overlaps = _overlaps(index, item_ids, found, method, skip_budget)
    items = [
        ItemOverlap(key, o is not None and o > dirty_above, o) for key, o in zip(ids, overlaps)
    ]
    corpus_bytes = sum(s.size for s in shards)
    result = Contamination(
        items=items,
        method=method,
        n=n,
        max_docs=max_docs,
        corpus={
            "documents": int(sum(d for _, _, d in done)),
            "bytes": int(corpus_bytes),
            "shards": len(shards),
            "seconds": seconds,
            "mb_per_s": corpus_bytes / 1e6 / seconds if seconds > 0 else None,
            "engine": runner.name,
            "ignored_grams": int(
                ((doc_freq > max_docs) if max_docs is not None else np.zeros(0)).sum()
            ),
        },
        scores=None
        if score_values is None
        else clean_vs_dirty(score_values, [i.dirty for i in items]),
    )
    if ledger is not False:
        result.record(ledger)
    return result


@dataclass
class _Index:
    """What every counting task needs: the eval vocabulary, its n-grams and the tokenizer."""

    vocab: dict[str, int]
    grams: GramIndex
    tokenize: Callable[[str], list[str]] | None
    by_hash: Vocabulary | None = None  # the fast path for the default word splitter


_LOADED: dict[str, _Index] = {}


def count_shard(index_file: str, shard: corpus_io.Shard, out_file: str) -> tuple[str, int, int]:
    """Stage task: in how many of the shard's documents each eval n-gram occurs (written to
    ``out_file``); returns (out_file, shard bytes, documents)."""
    index = _LOADED.get(index_file)
    if index is None:
        with open(index_file, "rb") as fh:
            index = _LOADED[index_file] = pickle.load(fh)
    counts = np.zeros(len(index.grams), np.int32)
    docs = 0
    if index.by_hash is not None:
        batch: list[str] = []
        size = 0
        for doc in shard.documents():
            batch.append(doc)
            size += len(doc)
            docs += 1
            if size >= BATCH_CHARS:
                _count_hashed(index, batch, counts)
                batch, size = [], 0
        if batch:
            _count_hashed(index, batch, counts)
        np.save(out_file, counts)
        return out_file, shard.size, docs
    split = index.tokenize or words
    words_batch: list[str] = []
    ends: list[int] = []
    for doc in shard.documents():
        words_batch.extend(split(doc))
        ends.append(len(words_batch))
        words_batch.append("")  # id 0: no n-gram spans two documents
        docs += 1
        if len(words_batch) >= BATCH_WORDS:
            _count_batch(index, words_batch, ends, counts)
            words_batch, ends = [], []
    if words_batch:
        _count_batch(index, words_batch, ends, counts)
    np.save(out_file, counts)
    return out_file, shard.size, docs


def _count_hashed(index: _Index, batch: list[str], counts: np.ndarray) -> None:
    """As :func:`_count_batch`, with words matched by the hash of their bytes."""
    ids, doc = index.by_hash.ids_of(batch)
    starts, pos = index.grams.lookup(ids)
    inside = doc[starts] == doc[starts + index.grams.n - 1]  # windows within one document
    if inside.any():
        pairs = np.unique(doc[starts[inside]].astype(np.int64) * len(counts) + pos[inside])
        np.add.at(counts, pairs % len(counts), 1)


def _count_batch(index: _Index, batch: list[str], ends: list[int], counts: np.ndarray) -> None:
    """Add 1 to ``counts`` for each (document, eval n-gram) pair found in a batch of documents
    (their words, each document followed by an empty separator at ``ends``)."""
    ids = word_ids(batch, index.vocab)
    starts, pos = index.grams.lookup(ids)
    if pos.size:
        doc = np.searchsorted(np.asarray(ends), starts)
        pairs = np.unique(doc.astype(np.int64) * len(counts) + pos)
        np.add.at(counts, pairs % len(counts), 1)


def _overlaps(
    index: GramIndex, item_ids: list[np.ndarray], found: np.ndarray, method: str, skip_budget: int
) -> list[float | None]:
    """Each item's share of n-grams (GPT-3) or tokens (Llama 2) found; None when shorter than n.

    All items are looked up at once: joined with a 0 between them, every window inside an item
    is one of the index's grams."""
    joined = np.concatenate([np.append(a, 0) for a in item_ids])
    ends = np.cumsum([len(a) + 1 for a in item_ids]) - 1
    starts, pos = index.lookup(joined)
    owner = np.searchsorted(ends, starts)
    hit = found[pos]
    if method == "gpt3":
        grams = np.bincount(owner, minlength=len(item_ids))
        shared = np.bincount(owner, weights=hit, minlength=len(item_ids))
        return [None if g == 0 else float(s / g) for g, s in zip(grams, shared)]
    out: list[float | None] = []
    first = np.concatenate(([0], ends[:-1] + 1))
    for k, a in enumerate(item_ids):
        if len(a) < index.n:
            out.append(None)
            continue
        covered = np.zeros(len(a), np.int64)  # Llama 2: tokens inside a matched span
        local = starts[(owner == k) & hit] - first[k]
        np.add.at(covered, local[:, None] + np.arange(index.n), 1)
        out.append(_fill_gaps(covered > 0, skip_budget))
    return out


def _fill_gaps(covered: np.ndarray, skip_budget: int) -> float:
    """Share of tokens covered once gaps of at most ``skip_budget`` tokens between matched
    spans count as matched (Llama 2's skip-gram budget)."""
    if skip_budget > 0 and covered.any():
        where = np.flatnonzero(covered)
        for left, gap in zip(where[:-1], np.diff(where) - 1):
            if 0 < gap <= skip_budget:
                covered[left + 1 : left + 1 + gap] = True
    return float(covered.mean())


def clean_vs_dirty(scores: np.ndarray, dirty: Sequence[bool]) -> dict[str, Any]:
    """Mean score of clean and of dirty items with standard errors, and their difference."""
    from labcoat import stats

    mask = np.asarray(dirty, bool)
    out: dict[str, Any] = {"clean": None, "dirty": None, "difference": None}
    if (~mask).sum() >= 2:
        out["clean"] = stats.mean(scores[~mask]).to_dict()
    if mask.sum() >= 2:
        out["dirty"] = stats.mean(scores[mask]).to_dict()
    if out["clean"] and out["dirty"]:
        out["difference"] = stats.compare(
            scores[~mask], scores[mask], paired=False
        ).to_dict()  # clean - dirty
    return out


def _check_items(eval_items: Any) -> list[str]:
    if isinstance(eval_items, str) or not hasattr(eval_items, "__len__"):
        raise InputError("eval_items: expected a sequence of texts, one per eval item")
    texts = list(eval_items)
    bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
    if bad:
        raise InputError(
            f"eval_items: item {bad[0]} is {article(type(texts[bad[0]]).__name__)}, not text; "
            "pass strings"
        )
    if not texts:
        raise InputError("eval_items: no items")
    return texts


def _check_scores(scores: Any, n: int) -> np.ndarray:
    from labcoat.stats._validation import check_scores

    values = check_scores(scores, "scores")
    if len(values) != n:
        raise InputError(f"scores: got {len(values)} scores for {n} eval items; pass one per item")
    return values


__all__ = ["Contamination", "ItemOverlap", "clean_vs_dirty", "contamination", "count_shard"]
