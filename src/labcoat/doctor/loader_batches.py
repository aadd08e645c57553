"""Batches pulled through the user's DataLoader as it is configured: its workers,
``worker_init_fn``, ``collate_fn`` and sampler, which the doctor's own in-process read of a
map-style dataset never runs. Bugs that live only in worker processes (workers forked with one
RNG state, an IterableDataset every worker yields whole) show up here and nowhere else.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset

from labcoat.doctor.inputs import Examples, from_batches, kept_generator


def example_hashes(examples: Examples) -> list[bytes]:
    """A digest per example of its input and its target together."""
    x = np.ascontiguousarray(examples.x.reshape(len(examples), -1).cpu().numpy())
    y = np.ascontiguousarray(examples.y.reshape(len(examples), -1).cpu().numpy())
    return [
        hashlib.blake2b(a.tobytes() + b"|" + b.tobytes(), digest_size=16).digest()
        for a, b in zip(x, y)
    ]


def batch_slices(examples: Examples) -> list[slice]:
    """Each batch's rows, in the order the data yielded them."""
    ends = examples.batch_ends or (len(examples),)
    starts = (0,) + ends[:-1]
    return [slice(a, b) for a, b in zip(starts, ends) if b > a]


def repeated_share(hashes: list[bytes]) -> float:
    """The share of rows that repeat an earlier row."""
    return 1 - len(set(hashes)) / len(hashes) if hashes else 0.0


@dataclass
class WorkerEpoch:
    """Rows pulled through the loader's worker processes, batch by batch."""

    examples: Examples
    workers: int

    def worker_of(self, batch: int) -> int:
        """Workers take batches in turn (DataLoader's in-order default)."""
        return batch % self.workers

    def identical_batches(self) -> list[tuple[int, int]]:
        """Pairs of batches from different workers with identical inputs and targets."""
        return [
            (a, b)
            for a, b in identical_batches(self.examples)
            if self.worker_of(a) != self.worker_of(b)
        ]


def identical_batches(examples: Examples) -> list[tuple[int, int]]:
    """Pairs (earlier, later) of batches with identical inputs and targets."""
    seen: dict[bytes, int] = {}
    pairs = []
    hashes = example_hashes(examples)
    for b, rows in enumerate(batch_slices(examples)):
        key = hashlib.blake2b(b"".join(hashes[rows]), digest_size=16).digest()
        if key in seen:
            pairs.append((seen[key], b))
        seen.setdefault(key, b)
    return pairs


def uses_workers(loader: object) -> bool:
    return isinstance(loader, DataLoader) and loader.num_workers > 0


def pull_through_workers(loader: DataLoader, limit: int) -> WorkerEpoch:
    """Up to ``limit`` rows of one epoch, from the loader's own iterator (workers included);
    the loader's generator is left where it was."""
    with kept_generator(loader):
        batches = iter(loader)
        try:
            examples = from_batches(batches, "data", limit)
        finally:
            shutdown = getattr(batches, "_shutdown_workers", None)
            if shutdown is not None and not loader.persistent_workers:
                shutdown()
    return WorkerEpoch(examples, loader.num_workers)


def read_in_one_process(loader: DataLoader, limit: int) -> Examples:
    """The loader's batches read with no worker processes (same dataset, batching and collate)."""
    single = DataLoader(
        loader.dataset,
        batch_size=loader.batch_size,
        collate_fn=loader.collate_fn,
        drop_last=loader.drop_last,
    )
    return from_batches(iter(single), "data", limit)


def is_iterable_dataset(loader: DataLoader) -> bool:
    return isinstance(loader.dataset, IterableDataset)


def deterministic_items(loader: DataLoader, probe: int = 4) -> bool:
    """True when reading the same items of a map-style dataset twice gives the same rows (no
    random augmentation), so rows from the workers can be looked up among rows read here."""
    if is_iterable_dataset(loader) or not hasattr(loader.dataset, "__getitem__"):
        return False
    n = min(probe, len(loader.dataset))  # type: ignore[arg-type]
    try:
        first = [loader.collate_fn([loader.dataset[i]]) for i in range(n)]
        again = [loader.collate_fn([loader.dataset[i]]) for i in range(n)]
    except Exception:  # noqa: BLE001 - a dataset that cannot be read item by item here
        return False
    return all(_same(a, b) for a, b in zip(first, again))


def _same(a: object, b: object) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and bool(torch.equal(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return bool(np.array_equal(np.asarray(a), np.asarray(b)))


def same_rows_per_worker(loader: DataLoader, rows: int, seed: int) -> list[Examples]:
    """The same ``rows`` items read once by each of the loader's workers (its dataset,
    ``worker_init_fn``, ``collate_fn`` and start method), one batch each: independent random
    augmentation makes the copies differ; a random state copied into every worker makes them
    equal."""
    workers = loader.num_workers
    indices = list(range(min(rows, len(loader.dataset)))) * workers  # type: ignore[arg-type]
    probe = DataLoader(
        loader.dataset,
        batch_size=len(indices) // workers,
        sampler=indices,
        num_workers=workers,
        worker_init_fn=loader.worker_init_fn,
        collate_fn=loader.collate_fn,
        multiprocessing_context=loader.multiprocessing_context,
        generator=torch.Generator().manual_seed(seed),
    )
    batches = iter(probe)
    try:
        read = from_batches(batches, "data", len(indices))
    finally:
        shutdown = getattr(batches, "_shutdown_workers", None)
        if shutdown is not None:
            shutdown()
    return [Examples(read.x[s], read.y[s], read.index[s]) for s in batch_slices(read)]


def label_mixing(
    y: torch.Tensor, slices: list[slice], permutations: int, seed: int
) -> tuple[float, np.ndarray]:
    """Mean distinct labels per batch in the order given, and the same statistic for the same
    rows dealt into batches of the same sizes at random (the null of a shuffling loader)."""
    labels = y.reshape(len(y)).numpy()
    used = np.concatenate([labels[s] for s in slices])
    sizes = np.cumsum([s.stop - s.start for s in slices])[:-1]

    def distinct(order: np.ndarray) -> float:
        return float(np.mean([len(np.unique(part)) for part in np.split(order, sizes)]))

    rng = np.random.default_rng(seed)
    null = np.array([distinct(rng.permutation(used)) for _ in range(permutations)])
    return distinct(used), null
