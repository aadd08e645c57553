"""Duplicates and near-duplicates across two splits, and inside each.

Text goes through a staged MinHash LSH pipeline (Broder 1997; datasketch's MinHash and its
choice of bands and rows for a Jaccard threshold): shard -> signatures (written to files) ->
buckets per band (candidate pairs, written to files) -> pairs whose estimated Jaccard similarity
reaches the threshold -> connected components (groups inside a split) -> report. The stages run
locally or on Ray. Arrays, tensors and images are compared exactly by a hash of their canonical
bytes and nearly by the cosine similarity of their flattened, normalised values, through
scikit-learn's NearestNeighbors.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from labcoat._validation import (
    BOOL,
    N_JOBS,
    Interval,
    OneOf,
    check_int,
    renamed,
    validate_params,
)
from labcoat.audit.checks import AuditResult, check
from labcoat.audit.engine import make_engine
from labcoat.audit.engine import workdir as make_workdir
from labcoat.audit.text import words
from labcoat.errors import InputError
from labcoat.findings import Outcome, failed, passed, warned
from labcoat.result import check_kind

KINDS = ("auto", "text", "tensor")
#: Jaccard similarity of word shingles at which two texts count as near-duplicates
TEXT_THRESHOLD = 0.7
#: cosine similarity at which two arrays count as near-duplicates
TENSOR_THRESHOLD = 0.98
SHINGLE_WORDS = 3
NUM_PERM = 128
DOCS_PER_SHARD = 5000
#: a bucket larger than this links its members to its first one only (connectivity is kept)
MAX_BUCKET_PAIRS = 100


@dataclass(frozen=True)
class Pair:
    """Row ``a`` of the first split and row ``b`` of the second are duplicates."""

    a: int
    b: int
    similarity: float
    exact: bool

    def to_dict(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "similarity": self.similarity, "exact": self.exact}


@dataclass
class Duplicates(AuditResult):
    """Pairs across the splits (``pairs``) and groups of duplicates inside each (``within``:
    split name -> list of row lists)."""

    KIND = "audit.duplicates"

    pairs: list[Pair]
    within: dict[str, list[list[int]]]
    n_a: int
    n_b: int
    kind: str
    threshold: float
    extras: dict[str, Any] = field(default_factory=dict)

    CHECKS = ("audit.duplicates.across", "audit.duplicates.within")

    @property
    def exact_pairs(self) -> list[Pair]:
        return [p for p in self.pairs if p.exact]

    def rows(self, split: str = "b") -> list[int]:
        """Rows of one split (``"a"`` or ``"b"``) with a duplicate in the other."""
        return sorted({getattr(p, split) for p in self.pairs})

    def to_dict(self) -> dict[str, Any]:
        return {
            "pairs": [p.to_dict() for p in self.pairs],
            "n_a": self.n_a,
            "n_b": self.n_b,
            "within": self.within,
            "match": self.kind,
            "threshold": self.threshold,
            **self.extras,
            "findings": [f.to_dict() for f in self.findings],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Duplicates":
        """The result again from its ``to_dict()``, which keeps all of it."""
        check_kind(cls, data)
        own = {"kind", "version", "pairs", "n_a", "n_b", "within", "match", "threshold"}
        extras = {k: v for k, v in data.items() if k not in own | {"findings"}}
        pairs = [Pair(**p) for p in data["pairs"]]
        sizes = (data["n_a"], data["n_b"], data["match"], data["threshold"])
        return cls(pairs, dict(data["within"]), *sizes, extras=extras)


@check(
    "audit.duplicates.across",
    falsifies="the evaluation split holds examples the training split does not",
    predicts="no example of the second split is a copy or near-copy of one in the first",
)
def _across_outcome(result: Duplicates) -> Outcome:
    exact = len(result.exact_pairs)
    near = len(result.pairs) - exact
    rows_b = result.rows("b")
    evidence = {
        "exact_pairs": exact,
        "near_pairs": near,
        "rows_b": len(rows_b),
        "n_b": result.n_b,
        "threshold": result.threshold,
        "first_pairs": [[p.a, p.b, round(p.similarity, 4)] for p in result.pairs[:10]],
    }
    if result.n_b == 0:
        from labcoat.findings import skipped

        return skipped("one split given: nothing to compare across", **evidence)
    if exact:
        return failed(
            f"{len(rows_b)} of {result.n_b} rows of the second split copy the first ({exact} "
            f"exact, {near} near pairs)",
            **evidence,
        )
    if near:
        return warned(
            f"{len(rows_b)} of {result.n_b} rows of the second split nearly copy the first "
            f"({near} pairs at similarity ≥ {result.threshold})",
            **evidence,
        )
    return passed(
        f"no duplicates across the splits ({result.n_a} vs {result.n_b} rows, similarity < "
        f"{result.threshold})",
        **evidence,
    )


@check(
    "audit.duplicates.within",
    falsifies="each split holds distinct examples",
    predicts="no two rows of one split are copies or near-copies",
)
def _within_outcome(result: Duplicates) -> Outcome:
    counts = {split: sum(len(g) for g in groups) for split, groups in result.within.items()}
    evidence = {
        "groups": {s: len(g) for s, g in result.within.items()},
        "rows": counts,
        "first_groups": {s: g[:5] for s, g in result.within.items()},
    }
    if any(counts.values()):
        said = ", ".join(
            f"{len(result.within[s])} groups ({counts[s]} rows) in {s}"
            for s in result.within
            if counts[s]
        )
        return warned(f"duplicates inside a split: {said}", **evidence)
    return passed("no duplicates inside either split", **evidence)


@renamed(workers="n_jobs")
@validate_params(
    {
        "kind": OneOf(KINDS),
        "threshold": Interval(float, 0.0, 1.0, low_open=True, none=True),
        "num_perm": Interval(int, 1),
        "shingle_words": Interval(int, 1),
        "centre": BOOL,
        "n_jobs": N_JOBS,
    }
)
def duplicates(
    train: Any,
    other: Any = None,
    *,
    kind: str = "auto",
    threshold: float | None = None,
    num_perm: int = NUM_PERM,
    shingle_words: int = SHINGLE_WORDS,
    centre: bool = True,
    engine: Any = "local",
    n_jobs: int | None = None,
    address: str | None = None,
    workdir: str | Path | None = None,
    ledger: Any = None,
) -> Duplicates:
    """Duplicates between ``train`` and ``other`` (and inside each).

    Texts (a sequence of str): MinHash LSH over word ``shingle_words``-grams with ``num_perm``
    permutations; ``threshold`` is a Jaccard similarity (default 0.7). Arrays or tensors (one
    row per example, any shape after it): exact by content hash, near by cosine similarity
    (default 0.98) after subtracting the mean row of both splits (``centre``). ``exact`` marks
    identical texts (after stripping surrounding whitespace) or identical values (after
    canonicalising dtype and layout). ``engine`` (``"local"`` or ``"ray"``) runs the text
    pipeline's stages; arrays are always compared on this machine.
    """
    from labcoat.extras import require

    if kind == "auto":
        kind = "text" if _is_texts(train) else "tensor"
    if kind == "text":  # before any work
        require("audit", "finding duplicate texts", modules=("datasketch",))
        if engine == "ray":
            require("ray", "engine='ray'")
    if threshold is None:
        threshold = TEXT_THRESHOLD if kind == "text" else TENSOR_THRESHOLD
    if kind == "text":
        a = _texts(train, "train")
        b = [] if other is None else _texts(other, "other")
        result = _text_duplicates(
            a, b, float(threshold), num_perm, shingle_words, engine, n_jobs, address, workdir
        )
    else:
        a = canonical_rows(train, "train")
        b = None if other is None else canonical_rows(other, "other")
        if b is not None and a.shape[1] != b.shape[1]:
            raise InputError(
                f"other: rows have {b.shape[1]} values but train's have {a.shape[1]}; the splits "
                "must share a shape"
            )
        result = _tensor_duplicates(a, b, float(threshold), n_jobs, centre)
    if ledger is not False:
        result.record(ledger)
    return result


# -- text -------------------------------------------------------------------------------------


def _text_duplicates(
    a, b, threshold, num_perm, shingle_words, engine, n_jobs, address, workdir
) -> Duplicates:
    from labcoat.extras import import_module

    MinHashLSH = import_module("datasketch", "audit", "finding duplicate texts").MinHashLSH

    check_int(num_perm, "num_perm", minimum=16)
    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)  # picks bands x rows for the threshold
    bands, rows = lsh.b, lsh.r
    texts = a + b
    runner = make_engine(engine, n_jobs=n_jobs, address=address)
    with make_workdir(workdir) as work:
        shard_files = []
        for k, start in enumerate(range(0, len(texts), DOCS_PER_SHARD)):
            path = work / f"texts-{k:05d}.json"
            path.write_text(
                json.dumps([start, texts[start : start + DOCS_PER_SHARD]]), encoding="utf-8"
            )
            shard_files.append(str(path))
        sig_files = runner.map(
            signature_shard,
            [
                (f, str(work / f"signatures-{k:05d}.npz"), num_perm, shingle_words)
                for k, f in enumerate(shard_files)
            ],
        )
        groups = max(1, min(bands, runner.n_jobs, len(sig_files)))  # small inputs: one task
        band_sets = [list(range(bands))[g::groups] for g in range(groups)]
        pair_files = runner.map(
            bucket_pairs,
            [
                (sig_files, bs, rows, str(work / f"candidates-{g:03d}.npy"))
                for g, bs in enumerate(band_sets)
            ],
        )
        signatures, exact_keys = _load_signatures(sig_files, len(texts), num_perm)
        candidates = np.unique(
            np.concatenate([np.load(f) for f in pair_files]).reshape(-1, 2), axis=0
        )
    if len(candidates):
        sim = (signatures[candidates[:, 0]] == signatures[candidates[:, 1]]).mean(axis=1)
        exact = exact_keys[candidates[:, 0]] == exact_keys[candidates[:, 1]]
        keep = (sim >= threshold) | exact
        candidates, sim, exact = (
            candidates[keep],
            np.where(exact[keep], 1.0, sim[keep]),
            exact[keep],
        )
    else:
        sim, exact = np.empty(0), np.empty(0, bool)
    return _report(
        candidates,
        sim,
        exact,
        len(a),
        len(b),
        "text",
        threshold,
        {
            "num_perm": num_perm,
            "bands": bands,
            "rows_per_band": rows,
            "shingle_words": shingle_words,
            "engine": runner.name,
        },
    )


def shingles(text: str, size: int) -> set[bytes]:
    """Word ``size``-grams of the normalised text (the whole text when it is shorter)."""
    ws = words(text)
    if len(ws) <= size:
        return {" ".join(ws).encode()} if ws else set()
    return {" ".join(ws[i : i + size]).encode() for i in range(len(ws) - size + 1)}


def signature_shard(in_file: str, out_file: str, num_perm: int, shingle_words: int) -> str:
    """Stage task: MinHash signatures and exact-match keys of one shard of texts."""
    from datasketch import MinHash

    start, texts = json.loads(Path(in_file).read_text(encoding="utf-8"))
    grams = [list(shingles(text, shingle_words)) for text in texts]
    sigs = np.array(
        [m.hashvalues for m in MinHash.bulk(grams, num_perm=num_perm, seed=1)], np.uint64
    )
    sigs = sigs.reshape(len(texts), num_perm)
    keys = np.array(
        [
            int.from_bytes(hashlib.blake2b(t.strip().encode(), digest_size=8).digest(), "little")
            for t in texts
        ],
        np.uint64,
    )
    np.savez(out_file, start=start, signatures=sigs, keys=keys)
    return out_file


def bucket_pairs(sig_files: list[str], bands: list[int], rows: int, out_file: str) -> str:
    """Stage task: pairs of texts that agree on all ``rows`` values of one of ``bands``."""
    parts = [np.load(f) for f in sig_files]
    ids = np.concatenate([p["start"] + np.arange(len(p["signatures"])) for p in parts])
    sigs = np.concatenate([p["signatures"] for p in parts])
    empty = np.all(sigs == np.iinfo(np.uint64).max, axis=1)  # texts with no words match nothing
    sigs, ids = sigs[~empty], ids[~empty]
    found: list[np.ndarray] = []
    for band in bands:
        block = np.ascontiguousarray(sigs[:, band * rows : (band + 1) * rows])
        _, bucket = np.unique(
            block.view(np.dtype((np.void, block.dtype.itemsize * rows))).ravel(),
            return_inverse=True,
        )
        order = np.argsort(bucket, kind="stable")
        bounds = np.flatnonzero(np.diff(bucket[order])) + 1
        for members in np.split(ids[order], bounds):
            if len(members) < 2:
                continue
            if len(members) > MAX_BUCKET_PAIRS:
                found.append(np.stack([np.full(len(members) - 1, members[0]), members[1:]], axis=1))
            else:
                i, j = np.triu_indices(len(members), 1)
                found.append(np.stack([members[i], members[j]], axis=1))
    pairs = np.concatenate(found) if found else np.empty((0, 2), np.int64)
    np.save(out_file, np.sort(pairs, axis=1).astype(np.int64))
    return out_file


def _load_signatures(sig_files: list[str], n: int, num_perm: int) -> tuple[np.ndarray, np.ndarray]:
    sigs = np.empty((n, num_perm), np.uint64)
    keys = np.empty(n, np.uint64)
    for f in sig_files:
        part = np.load(f)
        start = int(part["start"])
        sigs[start : start + len(part["signatures"])] = part["signatures"]
        keys[start : start + len(part["keys"])] = part["keys"]
    return sigs, keys


# -- arrays and tensors -----------------------------------------------------------------------


def canonical_rows(data: Any, name: str) -> np.ndarray:
    """One row per example, flattened, contiguous, in one dtype per kind (int64, float64), so
    the same values hash alike whatever dtype or layout they came in."""
    if hasattr(data, "detach"):
        data = data.detach().cpu().numpy()
    try:
        arr = np.asarray(data)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name}: could not be read as an array ({exc})") from None
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise InputError(
            f"{name}: expected numbers (an array or tensor); got dtype {arr.dtype}; pass texts as "
            "a list of str"
        )
    if arr.ndim == 0 or len(arr) == 0:
        raise InputError(f"{name}: expected one row per example; got shape {arr.shape}")
    arr = arr.reshape(len(arr), -1)
    if arr.dtype.kind == "f":
        return np.ascontiguousarray(arr, dtype=np.float64) + 0.0  # -0.0 becomes 0.0
    return np.ascontiguousarray(arr, dtype=np.int64)


def _tensor_duplicates(
    a: np.ndarray, b: np.ndarray | None, threshold: float, n_jobs: int | None, centre: bool
) -> Duplicates:
    from sklearn.neighbors import NearestNeighbors

    both = a if b is None else np.concatenate([a, b.astype(np.result_type(a, b))])
    keys = np.array(
        [
            hashlib.blake2b(row.tobytes(), digest_size=16).hexdigest()
            for row in both.astype(both.dtype)
        ]
    )
    vectors = both.astype(np.float64)
    if centre:  # the direction every example shares would make unrelated ones look alike
        vectors = vectors - vectors.mean(axis=0)
    norms = np.linalg.norm(vectors, axis=1)
    usable = np.flatnonzero(norms > 0)  # all-zero rows have no direction; only exact matches
    pairs = [np.empty((0, 2), np.int64)]
    if len(usable) > 1:
        unit = (vectors[usable] / norms[usable, None]).astype(np.float32)
        nn = NearestNeighbors(
            radius=1 - threshold + 1e-6, metric="cosine", algorithm="brute", n_jobs=n_jobs
        ).fit(unit)
        for i, neighbours in enumerate(nn.radius_neighbors(unit, return_distance=False)):
            neighbours = neighbours[neighbours > i]
            pairs.append(
                np.stack([np.full(len(neighbours), usable[i]), usable[neighbours]], axis=1)
            )
    _, key_codes = np.unique(keys, return_inverse=True)
    same = np.flatnonzero(np.bincount(key_codes) > 1)
    for code in same:  # exact copies, zero rows included
        members = np.flatnonzero(key_codes == code)
        i, j = np.triu_indices(len(members), 1)
        pairs.append(np.stack([members[i], members[j]], axis=1))
    candidates = np.unique(np.concatenate(pairs).astype(np.int64), axis=0)
    exact = key_codes[candidates[:, 0]] == key_codes[candidates[:, 1]]
    unit_all = vectors / np.where(norms > 0, norms, 1)[:, None]
    sim = (
        np.einsum("ij,ij->i", unit_all[candidates[:, 0]], unit_all[candidates[:, 1]])
        if len(candidates)
        else np.empty(0)
    )
    sim = np.where(exact, 1.0, np.clip(sim, -1, 1))
    return _report(
        candidates,
        sim,
        exact,
        len(a),
        0 if b is None else len(b),
        "tensor",
        threshold,
        {"centre": centre},
    )


# -- report -----------------------------------------------------------------------------------


def _report(pairs, sim, exact, n_a, n_b, kind, threshold, extras) -> Duplicates:
    """Cross pairs as (row in a, row in b); within-split pairs joined into groups by connected
    components."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    pairs = np.asarray(pairs, np.int64).reshape(-1, 2)
    cross = (pairs[:, 0] < n_a) & (pairs[:, 1] >= n_a)
    out = [
        Pair(int(i), int(j - n_a), float(s), bool(e))
        for (i, j), s, e in zip(pairs[cross], sim[cross], exact[cross])
    ]
    out.sort(key=lambda p: (-p.similarity, p.a, p.b))
    within: dict[str, list[list[int]]] = {}
    n = n_a + n_b
    for split, lo, hi in (("a", 0, n_a), ("b", n_a, n)):
        if split == "b" and n_b == 0:
            continue
        inside = pairs[(pairs[:, 0] >= lo) & (pairs[:, 1] < hi) & ~cross]
        if len(inside) == 0:
            within[split] = []
            continue
        graph = coo_matrix(
            (np.ones(len(inside)), (inside[:, 0] - lo, inside[:, 1] - lo)), shape=(hi - lo, hi - lo)
        )
        _, label = connected_components(graph, directed=False)
        linked = np.unique(inside - lo)
        groups: dict[int, list[int]] = {}
        for row in linked:
            groups.setdefault(int(label[row]), []).append(int(row))
        within[split] = sorted(groups.values())
    return Duplicates(out, within, n_a, n_b, kind, threshold, extras)


def _is_texts(data: Any) -> bool:
    if isinstance(data, (str, bytes)):
        return False
    if isinstance(data, np.ndarray):
        return (
            data.dtype.kind in "UO"
            and data.ndim == 1
            and all(isinstance(x, str) for x in data[:100])
        )
    if isinstance(data, (list, tuple)):
        return len(data) > 0 and all(isinstance(x, str) for x in data)
    return False


def _texts(data: Any, name: str) -> list[str]:
    if isinstance(data, str) or not isinstance(data, (list, tuple, np.ndarray)):
        raise InputError(f"{name}: expected a list of texts; got {type(data).__name__}")
    texts = list(data)
    bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
    if bad:
        raise InputError(
            f"{name}: row {bad[0]} is {type(texts[bad[0]]).__name__}, not text; pass strings (or "
            "kind='tensor')"
        )
    if not texts:
        raise InputError(f"{name}: no rows")
    return texts
