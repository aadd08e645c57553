"""Benchmark of the contamination pipeline, measured within one run.

Corpus throughput (MB/s) of ``labcoat.audit.contamination`` (GPT-3's method: 13-grams, the
10-document cap) on a generated JSONL corpus: the local engine with 2 workers, a local Ray with
2 workers, and a plain Python loop (lower-cased regex words, a set of 13-gram tuples per
document intersected with the eval set's), all on the same corpus and eval set; then the ratio
of each engine to the loop. Each figure is taken on an idle machine and again with two
CPU-bound processes beside it (started here), and every engine's dirty items are checked
against the loop's.

Run: python bench/audit.py [--mb 40]   (about two minutes on two cores, most of it Ray starting)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from _load import cpu_load  # noqa: E402

from labcoat.audit.benchmark_contamination import contamination  # noqa: E402

N = 13
WORD = re.compile(r"[^\W_]+")


def make_corpus(path: Path, megabytes: float, items: list[str], rng: np.random.Generator) -> None:
    """Documents of Zipf-distributed words; every 500th hosts one eval item."""
    vocab = np.array([f"w{i}" for i in range(20_000)])
    p = 1 / np.arange(1, len(vocab) + 1)
    p /= p.sum()
    written, k = 0, 0
    with path.open("w") as fh:
        while written < megabytes * 1e6:
            words = rng.choice(vocab, size=(200, 150), p=p)
            for row in words:
                text = " ".join(row)
                if k % 500 == 0:
                    text += " " + items[(k // 500) % len(items)].upper()
                line = json.dumps({"text": text}) + "\n"
                fh.write(line)
                written += len(line)
                k += 1


def plain_loop(path: Path, items: list[str]) -> tuple[set[int], float]:
    """The baseline: one set of 13-gram tuples per document, intersected with the eval set's."""
    start = time.perf_counter()
    owner: dict[tuple, list[int]] = {}
    for i, item in enumerate(items):
        ws = WORD.findall(item.lower())
        for g in zip(*[ws[j:] for j in range(N)]):
            owner.setdefault(g, []).append(i)
    docs: Counter = Counter()
    with path.open() as fh:
        for line in fh:
            ws = WORD.findall(json.loads(line)["text"].lower())
            docs.update(set(zip(*[ws[j:] for j in range(N)])) & owner.keys())
    dirty = {i for g, c in docs.items() if c <= 10 for i in owner[g]}
    return dirty, time.perf_counter() - start


def measure(path: Path, items: list[str], mb: float) -> dict[str, tuple[float, set]]:
    out = {}
    dirty, seconds = plain_loop(path, items)
    out["plain loop"] = (mb / seconds, dirty)
    for name, kwargs in (
        ("local, 2 workers", {"engine": "local", "workers": 2}),
        ("ray, 2 workers", {"engine": "ray"}),
    ):
        start = time.perf_counter()  # the whole call: eval index, corpus pass and report
        result = contamination([path], items, ledger=False, **kwargs)
        out[name] = (mb / (time.perf_counter() - start), set(result.dirty_ids))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, default=40.0, help="corpus size in MB")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    vocab = [f"w{i}" for i in range(20_000)]
    items = [" ".join(rng.choice(vocab, 40)) for _ in range(1000)]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "corpus.jsonl"
        make_corpus(path, args.mb, items, rng)
        mb = path.stat().st_size / 1e6
        import ray

        t = time.perf_counter()
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            runtime_env={
                "env_vars": {"PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
            },
        )
        print(
            f"corpus {mb:.1f} MB, {len(items)} eval items; Ray started in "
            f"{time.perf_counter() - t:.1f} s "
            f"(not counted); {os.cpu_count()} cores"
        )
        rows = {}
        rows["idle"] = measure(path, items, mb)
        with cpu_load(2):
            rows["busy (2 spinning processes)"] = measure(path, items, mb)
        ray.shutdown()
    for condition, figures in rows.items():
        base, truth = figures["plain loop"]
        print(f"\n{condition}:")
        for name, (speed, dirty) in figures.items():
            agree = (
                "same dirty items"
                if dirty == truth
                else f"DIFFERENT dirty items ({len(dirty)} vs {len(truth)})"
            )
            print(f"  {name:18s} {speed:7.2f} MB/s  {speed / base:5.2f}x the plain loop  {agree}")


if __name__ == "__main__":
    main()
