"""``rec.loop(name, iterable)``: nestable loops whose positions are recorded and replayed.

A *step* is one iteration of a loop that opened no loop inside it (the innermost loop: the
batches, not the epochs); ``rec.step`` counts the steps finished so far, so inside a step it is
that step's index. Between two iterations (before the next item is fetched) the recorder may
take a checkpoint: the position it stores is, for every open loop, its name, how many items it
has fetched, the RNG states when it was entered and, for a loop with loops inside it, right
after it fetched its current item.

On replay the same script runs again and each loop, until the checkpoint's position is reached,
skips what came before it without running it: the RNGs are set to what they were when the loop
was entered, the iterator is made and advanced past the items already fetched, and the rest of
the state is restored from the checkpoint. A DataLoader over a map-style dataset skips batches
by advancing its batch sampler's indices (:class:`RecordedSampler`): the skipped batches are
never loaded. Any other iterable (an ``IterableDataset``, a generator) is advanced by fetching
and dropping its items.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator

from labcoat.errors import InputError
from labcoat.replay import rng

if TYPE_CHECKING:
    from labcoat.replay.record import Recorder


class RecordedSampler:
    """A DataLoader's batch sampler (or sampler) under ``labcoat.record``: draws the epoch's
    seed when iteration starts, gives each batch its seed, and can skip the first ``skip``
    batches' indices without anything being loaded.

    All its random draws happen in ``iter()``, when the DataLoader makes its iterator, so a
    replay that sets the RNGs to the loop's entry state draws the same seeds."""

    def __init__(self, inner: Any, generator: Any, batched: bool):
        self.inner = inner
        self.generator = generator
        self.batched = batched
        self.skip = 0

    def __len__(self) -> int:
        return len(self.inner)

    def __iter__(self) -> Iterator[Any]:
        import torch

        skip = self.skip  # read, not reset: a DataLoader iterator may call iter() twice
        epoch_seed = int(torch.empty((), dtype=torch.int64).random_(generator=self.generator))
        it = iter(self.inner)
        for _ in range(skip):
            if next(it, _END) is _END:
                break
        first = next(it, _END)  # the sampler draws its permutation now, not at the first fetch
        return self._rest(it, first, epoch_seed, skip)

    def _rest(self, it: Iterator[Any], first: Any, epoch_seed: int, index: int) -> Iterator[Any]:
        item = first
        while item is not _END:
            seed = rng.mix(epoch_seed, index)
            if self.batched:
                out: Any = rng.SeededBatch(item)
            else:
                out = rng.SeededIndex(item)
            out.labcoat_seed = seed
            yield out
            index += 1
            item = next(it, _END)

    def __getattr__(self, name: str) -> Any:
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)


_END = object()


def is_dataloader(iterable: Any) -> bool:
    import sys

    torch = sys.modules.get("torch")
    if torch is None:
        return False
    from torch.utils.data import DataLoader

    return isinstance(iterable, DataLoader)


def is_map_style(loader: Any) -> bool:
    from torch.utils.data import IterableDataset

    dataset = loader.dataset
    if isinstance(dataset, rng.SeededDataset):
        return True
    return not isinstance(dataset, IterableDataset)


def install(loader: Any) -> RecordedSampler | None:
    """Put a :class:`RecordedSampler` and a :class:`~labcoat.replay.rng.SeededDataset` into a
    map-style DataLoader (once); returns the sampler, or None for an IterableDataset."""
    # accelerate's prepared loader (DataLoaderShard) iterates the DataLoader it wraps
    loader = getattr(loader, "base_dataloader", None) or loader
    if not is_map_style(loader):
        return None
    current = loader.batch_sampler if loader.batch_sampler is not None else loader.sampler
    if isinstance(current, RecordedSampler):
        return current
    if getattr(loader, "_iterator", None) is not None:
        raise InputError(
            "loader: this DataLoader keeps persistent workers that started before "
            "labcoat.record saw it; pass it to rec.loop from its first epoch"
        )
    # DataLoader refuses these assignments after __init__ to protect users; the wrapper keeps
    # every behaviour (length, indices, attributes) and only adds the per-batch seeds
    batched = loader.batch_sampler is not None
    wrapper = RecordedSampler(current, loader.generator, batched)
    object.__setattr__(loader, "batch_sampler" if batched else "sampler", wrapper)
    object.__setattr__(loader, "dataset", rng.SeededDataset(loader.dataset))
    return wrapper


def _iterate(iterable: Any) -> Iterator[Any]:
    """``iter(iterable)``; a DataLoader wrapper whose ``__iter__`` is a generator (accelerate's
    DataLoaderShard) draws its order and makes its DataLoader iterator only at the first
    ``next``: that item is fetched now, so the order is drawn from the loop's entry state (as
    a DataLoader's is) and a replay's skip applies."""
    it = iter(iterable)
    if not (inspect.isgenerator(it) and is_dataloader(iterable)):
        return it
    first = next(it, _END)

    def primed() -> Iterator[Any]:
        if first is not _END:
            yield first
            yield from it

    return primed()


def length(iterable: Any) -> int | None:
    try:
        return len(iterable)
    except Exception:  # noqa: BLE001 - any iterable without a length
        return None


@dataclass
class Frame:
    """One open loop."""

    name: str
    depth: int
    length: int | None
    index: int = 0  # items fetched so far
    open: bool = False  # an item was yielded and its iteration has not finished
    had_child: bool = False  # a loop was opened inside the current iteration
    entry: Any = None  # RNG states when the loop was entered
    at_item: Any = None  # RNG states right after the current item was fetched
    extra: dict[str, Any] = field(default_factory=dict)

    def position(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "index": self.index,
            "entry": self.entry,
            "at_item": self.at_item,
        }


def run_loop(rec: "Recorder", name: str, iterable: Any, *, steps: bool = True) -> Iterator[Any]:
    """The generator behind ``rec.loop``; see the module docstring."""
    depth = len(rec.frames)
    frame = Frame(name, depth, length(iterable))
    if not steps:
        frame.extra["steps"] = False
    if rec.frames:
        rec.frames[-1].had_child = True
    rec.check_loop(frame)
    rec.frames.append(frame)
    try:
        target = rec.seek_target(frame)
        sampler = install(iterable) if is_dataloader(iterable) else None
        arriving = target is not None and rec.is_arrival(frame)
        if target is not None:
            rec.restore_rng(target["entry"], iterable)
        frame.entry = rec.capture_rng(iterable)
        # the deepest open loop of the checkpoint stopped between items: skip what it fetched;
        # an outer one is inside an item: skip the items before it, then fetch that one
        skip = 0 if target is None else target["index"] - (0 if arriving else 1)
        workers = is_dataloader(iterable) and getattr(iterable, "num_workers", 0) > 0
        if workers:
            rec.wait_for_writes()  # no background write in flight while workers fork
        if skip and sampler is not None:
            sampler.skip = skip
            try:
                it = _iterate(iterable)
            finally:
                sampler.skip = 0
        else:
            it = _iterate(iterable)
            for i in range(skip):
                if next(it, _END) is _END:
                    rec.loop_too_short(frame, skip, i)
        frame.index = skip
        if arriving:
            rec.arrive(frame)
            target = None
        while True:
            rec.boundary(frame)
            try:
                item = next(it)
            except StopIteration:
                if target is not None:
                    rec.loop_too_short(frame, frame.index + 1, frame.index)
                break
            frame.index += 1
            frame.open = True
            frame.had_child = False
            if target is not None:  # an outer loop reaching the checkpoint's position
                if target.get("at_item") is not None:
                    rec.restore_rng(target["at_item"], None)
                target = None
            elif depth < rec.deepest and rec.recording:
                frame.at_item = rec.capture_rng(None)
            yield item
    finally:
        rec.finish_iteration(frame, abandoned=True)
        rec.frames.pop()
