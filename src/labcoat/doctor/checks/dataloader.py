"""The data layer, as the user's loader delivers it: worker processes and batch order.

The doctor reads a map-style dataset in its own process, so bugs that live in a DataLoader's
workers (each worker forked with one RNG state, an IterableDataset every worker yields whole, a
``worker_init_fn`` that changes rows) never show in its own copy of the data; these checks pull
batches through the loader as configured. A loader that does not shuffle sorted data hands the
model one class per batch, which only the order of its batches shows.
"""

from __future__ import annotations

import numpy as np
import torch

from labcoat.doctor.case import Case
from labcoat.doctor.loader_batches import (
    batch_slices,
    deterministic_items,
    example_hashes,
    identical_batches,
    is_iterable_dataset,
    label_mixing,
    pull_through_workers,
    read_in_one_process,
    repeated_share,
    same_rows_per_worker,
    uses_workers,
)
from labcoat.doctor.losses import ignore_index
from labcoat.doctor.registry import check
from labcoat.findings import Outcome, failed, passed, skipped, warned

#: rows pulled through the workers (an epoch of a small dataset, the start of a large one)
WORKER_ROWS = {"fast": 1024, "full": 4096}
#: the share of rows repeating within the pulled epoch may exceed the in-process read's by this
#: much before it counts as workers duplicating samples (two workers yielding the same rows
#: repeat half of them; sampling with replacement in one process repeats about a third)
EXTRA_REPEATS = 0.2
#: rows from the workers that do not occur in the dataset read in one process (a deterministic
#: dataset gives none; the threshold leaves room for a worker reading a file that changed)
FOREIGN_ROWS = 0.1
#: batches read from the start of the data to judge how labels are mixed, and the permutation
#: p-value below which they mix less than at random; tuned on the corpus's unshuffled healthy
#: loader (dataloader_no_shuffle_natural_order) and the imbalanced batch-of-8 twin in
#: tests/doctor/test_loader_checks.py, where most batches hold one class by chance alone
ORDER_BATCHES = 32
ORDER_PERMUTATIONS = 199
ORDER_P = 0.01
#: rows each worker reads in the shared-random-state probe
PROBE_ROWS = 8


def _loader_with_workers(case: Case) -> str | None:
    if case.loader is None:
        return "data is not a DataLoader"
    if not uses_workers(case.loader):
        return "the DataLoader has num_workers=0: the doctor's own read is the loader's"
    return None


@check(
    "data.loader.workers",
    layer="data",
    falsifies="the DataLoader's worker processes duplicate or change samples (workers forked with "
    "one RNG state, an IterableDataset every worker yields whole, a worker_init_fn that edits "
    "rows)",
    predicts="batches pulled through the workers repeat no more rows than one process reads, no "
    "two workers deliver the same batch, and the rows are the dataset's",
    applies=_loader_with_workers,
)
def loader_workers(case: Case) -> Outcome:
    loader = case.loader
    epoch = pull_through_workers(loader, min(WORKER_ROWS[case.effort], len(case.read)))
    pulled = example_hashes(epoch.examples)
    # an IterableDataset was read through the workers already; read it again in one process
    one_process = (
        read_in_one_process(loader, len(pulled)) if is_iterable_dataset(loader) else case.read
    )
    own = example_hashes(one_process)[: len(pulled)]
    repeats, baseline = repeated_share(pulled), repeated_share(own)
    evidence = {
        "workers": loader.num_workers,
        "rows_pulled": len(pulled),
        "batches_pulled": len(batch_slices(epoch.examples)),
        "repeated_share_workers": repeats,
        "repeated_share_one_process": baseline,
    }
    pairs = epoch.identical_batches()
    if pairs and not identical_batches(
        one_process
    ):  # data whose batches repeat anyway says nothing
        a, b = pairs[0]
        return failed(
            f"batches {a} and {b}, from workers {epoch.worker_of(a)} and {epoch.worker_of(b)}, are "
            "identical: the workers share one random state (seed each from torch.initial_seed() "
            "in worker_init_fn, or create the dataset's RNG there) or each yields the whole "
            "dataset",
            identical_batches=pairs[:10],
            **evidence,
        )
    if repeats - baseline >= EXTRA_REPEATS:
        fix = (
            "an IterableDataset must split its stream by torch.utils.data.get_worker_info()"
            if is_iterable_dataset(loader)
            else "the workers draw the same samples: seed each worker's RNG in worker_init_fn"
        )
        return failed(
            f"{repeats:.0%} of {len(pulled)} rows pulled through {loader.num_workers} workers "
            f"repeat an earlier row within the epoch, against {baseline:.0%} read in one process: "
            f"{fix}",
            **evidence,
        )
    random_items = not is_iterable_dataset(loader) and not deterministic_items(loader)
    if random_items and loader.num_workers >= 2:
        try:
            copies = same_rows_per_worker(loader, PROBE_ROWS, case.seed)
        except Exception:  # noqa: BLE001 - a dataset the probe's sampler cannot index: no probe
            copies = []
        equal = [w for w in range(1, len(copies)) if torch.equal(copies[0].x, copies[w].x)]
        evidence["random_augmentation"] = True
        evidence["workers_with_identical_augmentation"] = len(equal) + 1 if equal else 0
        if equal:
            return failed(
                "the dataset augments at random (two reads of one item differ), yet workers 0 and "
                f"{equal[0]} turn the same {len(copies[0])} items into identical inputs: every "
                "worker draws from one copied random state (create the dataset's RNG in "
                "worker_init_fn, seeded from torch.initial_seed(), or draw with torch's RNG, "
                "which DataLoader seeds per worker)",
                **evidence,
            )
    if (
        not is_iterable_dataset(loader)
        and len(loader.dataset) <= len(case.read)
        and not random_items
    ):  # type: ignore[arg-type]
        known = set(example_hashes(case.read))
        foreign = [i for i, h in enumerate(pulled) if h not in known]
        evidence["rows_not_in_dataset"] = len(foreign)
        if len(foreign) > FOREIGN_ROWS * len(pulled):
            return failed(
                f"{len(foreign)} of {len(pulled)} rows pulled through the workers occur nowhere in "
                "the dataset read in one process: something that runs only in the workers "
                "(worker_init_fn) changes them",
                **evidence,
            )
    return passed(
        f"{len(pulled)} rows through {loader.num_workers} workers: {repeats:.0%} repeat within the "
        f"epoch ({baseline:.0%} in one process), no two workers deliver the same batch",
        **evidence,
    )


def _batched_class_labels(case: Case) -> str | None:
    read = case.read
    if read is None or read.batch_ends is None:
        return (
            "data given as (X, y): the doctor makes the batches, so their order is not the user's"
        )
    if case.inferred_task != "classification" or read.y.ndim != 1:
        return "needs one class label per example"
    if len(batch_slices(read)) < 4:
        return "fewer than 4 batches to judge their order"
    return None


@check(
    "data.loader.order",
    layer="data",
    falsifies="batches each hold one class (data sorted by label and a loader that does not "
    "shuffle)",
    predicts="the first batches mix classes as batches dealt at random from the same rows do",
    applies=_batched_class_labels,
)
def loader_order(case: Case) -> Outcome:
    read = case.read
    assert read is not None
    slices = batch_slices(read)[:ORDER_BATCHES]
    labels = read.y.clone()
    skip = ignore_index(case.loss_fn)
    if bool((labels == skip).any()):
        return skipped(f"some labels are {skip}, which the loss skips")
    observed, null = label_mixing(labels, slices, ORDER_PERMUTATIONS, case.seed)
    p = float((np.sum(null <= observed) + 1) / (len(null) + 1))
    single = [
        b
        for b, s in enumerate(slices)
        if len(torch.unique(labels[s])) == 1 and s.stop - s.start > 1
    ]
    evidence = {
        "batches": len(slices),
        "distinct_labels_per_batch": observed,
        "at_random": float(null.mean()),
        "pvalue": p,
        "single_class_batches": len(single),
        "first_batch_labels": {b: int(labels[slices[b]][0]) for b in single[:10]},
    }
    if p <= ORDER_P and len(single) >= len(slices) / 2:
        shuffle = " (shuffle=True)" if case.loader is not None else ""
        return failed(
            f"{len(single)} of the first {len(slices)} batches hold a single class ({observed:.2f} "
            f"classes per batch; {null.mean():.2f} when dealt at random, p={p:.2g}): the data is "
            f"sorted by label and the batches are not shuffled{shuffle}",
            **evidence,
        )
    if p <= ORDER_P and observed < 0.5 * null.mean():
        return warned(
            f"batches mix classes less than at random ({observed:.2f} classes per batch vs "
            f"{null.mean():.2f}, p={p:.2g}): is the data ordered by label?",
            **evidence,
        )
    return passed(
        f"batches mix classes as at random ({observed:.2f} classes per batch vs {null.mean():.2f})",
        **evidence,
    )
