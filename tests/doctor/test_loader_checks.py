"""Loader checks: batches pulled through the user's DataLoader (workers, worker_init_fn,
sampler)."""

import numpy as np
import pytest
import torch
from torch.utils.data import (
    DataLoader,
    Dataset,
    IterableDataset,
    TensorDataset,
    get_worker_info,
)

from tests.doctor.helpers import diagnose, digits, mlp


def loader_report(loader, **kw):
    return diagnose(mlp(), loader, layers=("data",), **kw)


class Stream(IterableDataset):
    """Digits as a stream; ``shard=False`` plants the bug: every worker yields all of it."""

    def __init__(self, x, y, shard=True):
        self.x, self.y, self.shard = x, y, shard

    def __iter__(self):
        info = get_worker_info()
        rows = range(len(self.y))
        if self.shard and info is not None:
            rows = rows[info.id :: info.num_workers]
        for i in rows:
            yield self.x[i], self.y[i]


def test_iterable_dataset_every_worker_yields_whole_fails_and_sharded_twin_passes():
    x, y = digits()
    bad = loader_report(
        DataLoader(Stream(x[:400], y[:400], shard=False), batch_size=32, num_workers=2)
    )
    f = bad["data.loader.workers"]
    assert f.status == "fail", f.message
    good = loader_report(DataLoader(Stream(x[:400], y[:400]), batch_size=32, num_workers=2))
    assert good["data.loader.workers"].status == "pass", good["data.loader.workers"].message


class Sampled(Dataset):
    """Draws a random example per item (a sampling dataset) from its own numpy Generator."""

    def __init__(self, x, y):
        self.x, self.y = x, y
        self.rng = np.random.default_rng(0)  # forked into every worker with the same state

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        j = int(self.rng.integers(len(self.y)))
        return self.x[j], self.y[j]


def reseed_dataset_rng(worker_id):
    info = get_worker_info()
    info.dataset.rng = np.random.default_rng(torch.initial_seed() % 2**32)


def test_workers_forked_with_one_rng_deliver_identical_batches_and_reseeded_twin_passes():
    x, y = digits()
    bad = loader_report(DataLoader(Sampled(x[:400], y[:400]), batch_size=32, num_workers=2))
    f = bad["data.loader.workers"]
    assert f.status == "fail" and "identical" in f.message, f.message
    good = loader_report(
        DataLoader(
            Sampled(x[:400], y[:400]),
            batch_size=32,
            num_workers=2,
            worker_init_fn=reseed_dataset_rng,
        )
    )
    assert good["data.loader.workers"].status == "pass", good["data.loader.workers"].message


class Scaled(Dataset):
    def __init__(self, x, y):
        self.x, self.y, self.scale = x, y, 1.0

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i] * self.scale, self.y[i]


def raw_pixels_in_workers(worker_id):  # undoes the normalisation, in the workers only
    get_worker_info().dataset.scale = 16.0


def seed_numpy(worker_id):
    np.random.seed(torch.initial_seed() % 2**32)


def test_worker_init_fn_that_changes_rows_fails_and_seeding_twin_passes():
    x, y = digits()
    bad = loader_report(
        DataLoader(
            Scaled(x[:300], y[:300]),
            batch_size=32,
            shuffle=True,
            num_workers=2,
            worker_init_fn=raw_pixels_in_workers,
        )
    )
    assert bad["data.loader.workers"].status == "fail", bad["data.loader.workers"].message
    good = loader_report(
        DataLoader(
            Scaled(x[:300], y[:300]),
            batch_size=32,
            shuffle=True,
            num_workers=2,
            worker_init_fn=seed_numpy,
        )
    )
    f = good["data.loader.workers"]
    assert f.status == "pass" and f.evidence["rows_not_in_dataset"] == 0, f.message


def test_loader_without_workers_is_not_pulled_again():
    x, y = digits()
    report = loader_report(DataLoader(TensorDataset(x, y), batch_size=32))
    assert report["data.loader.workers"].status == "skip"


def sorted_digits():
    x, y = digits()
    order = torch.argsort(y, stable=True)
    return x[order], y[order]


@pytest.mark.check("doctor.data.loader.order", planted=True)
def test_sorted_labels_behind_shuffle_false_fail_and_shuffled_twin_passes():
    x, y = sorted_digits()
    bad = loader_report(DataLoader(TensorDataset(x, y), batch_size=32, shuffle=False))
    f = bad["data.loader.order"]
    assert f.status == "fail" and "shuffle=True" in f.message, f.message
    good = loader_report(DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True))
    assert good["data.loader.order"].status == "pass", good["data.loader.order"].message


@pytest.mark.check("doctor.data.loader.order", healthy=True)
def test_unshuffled_loader_over_unsorted_imbalanced_data_passes():
    x, y = digits()
    y = (y == 3).long()  # one positive in ten: most small batches hold one class by chance
    report = loader_report(DataLoader(TensorDataset(x, y), batch_size=8, shuffle=False))
    assert report["data.loader.order"].status == "pass", report["data.loader.order"].message


def test_reading_a_loader_leaves_its_generator_where_it_was():
    x, y = digits()
    g = torch.Generator().manual_seed(3)
    loader = DataLoader(
        TensorDataset(x, y), batch_size=32, shuffle=True, generator=g, num_workers=2
    )
    state = g.get_state()
    loader_report(loader)
    assert torch.equal(g.get_state(), state)


@pytest.mark.check("doctor.data.loader.workers", healthy=True)
def test_data_whose_batches_repeat_in_one_process_too_passes_through_workers():
    x, y = digits()
    x, y = x[:64].repeat(4, 1), y[:64].repeat(4)  # an epoch made of four copies of 64 rows
    loader = DataLoader(TensorDataset(x, y), batch_size=32, num_workers=2)
    f = loader_report(loader)["data.loader.workers"]
    assert f.status == "pass", f.message


class Augmented(Dataset):
    """Adds random noise per read; ``source="numpy"`` plants the bug: a RandomState made once in
    the dataset is copied into every worker, so every worker draws the same noise sequence."""

    def __init__(self, x, y, source="numpy"):
        self.x, self.y, self.source = x, y, source
        self.rng = np.random.RandomState(0)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        if self.source == "numpy":
            noise = torch.tensor(self.rng.normal(0, 0.1, self.x.shape[1]), dtype=torch.float32)
        else:  # torch's RNG, which DataLoader seeds differently in each worker
            noise = torch.randn(self.x.shape[1]) * 0.1
        return self.x[i] + noise, self.y[i]


def reseed_numpy_state(worker_id):
    info = get_worker_info()
    info.dataset.rng = np.random.RandomState(torch.initial_seed() % 2**32)


@pytest.mark.check("doctor.data.loader.workers", planted=True)
def test_augmentation_from_a_random_state_copied_into_every_worker_fails():
    x, y = digits()
    bad = loader_report(
        DataLoader(Augmented(x[:300], y[:300]), batch_size=32, shuffle=True, num_workers=2)
    )
    f = bad["data.loader.workers"]
    assert f.status == "fail" and "copied" in f.message, f.message
    assert f.evidence["random_augmentation"] is True


def test_augmentation_seeded_per_worker_or_drawn_from_torch_passes():
    x, y = digits()
    for loader in (
        DataLoader(
            Augmented(x[:300], y[:300], "torch"), batch_size=32, shuffle=True, num_workers=2
        ),
        DataLoader(
            Augmented(x[:300], y[:300]),
            batch_size=32,
            shuffle=True,
            num_workers=2,
            worker_init_fn=reseed_numpy_state,
        ),
    ):
        f = loader_report(loader)["data.loader.workers"]
        assert f.status == "pass", f.message
        assert (
            f.evidence["random_augmentation"] is True
            and f.evidence["workers_with_identical_augmentation"] == 0
        )


class Epochs(Stream):
    """A stream that passes over its (sharded) rows several times: repeats across epochs."""

    def __iter__(self):
        for _ in range(3):
            yield from super().__iter__()


@pytest.mark.check("doctor.data.loader.workers", healthy=True)
def test_a_sharded_stream_repeating_its_rows_across_epochs_passes():
    x, y = digits()
    f = loader_report(DataLoader(Epochs(x[:200], y[:200]), batch_size=32, num_workers=2))[
        "data.loader.workers"
    ]
    assert f.status == "pass", f.message
    assert f.evidence["repeated_share_workers"] > 0.5  # the epochs repeat, in one process too


@pytest.mark.check("doctor.data.loader.workers", planted=True)
def test_the_same_stream_unsharded_duplicates_rows_within_an_epoch_and_fails():
    x, y = digits()
    loader = DataLoader(Epochs(x[:200], y[:200], shard=False), batch_size=32, num_workers=2)
    f = loader_report(loader)["data.loader.workers"]
    assert f.status == "fail", f.message
