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
by advancing its batch sampler's indices (:mod:`labcoat.replay.workers`): the skipped batches
are never loaded. Any other iterable (an ``IterableDataset``, a generator) is advanced by fetching
and dropping its items.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator

from labcoat.replay import rng, workers

if TYPE_CHECKING:
    from labcoat.replay.record import Recorder


_END = object()


def is_dataloader(iterable: Any) -> bool:
    import sys

    torch = sys.modules.get("torch")
    if torch is None:
        return False
    from torch.utils.data import DataLoader

    return isinstance(iterable, DataLoader)


def _may_draw(iterable: Any) -> bool:
    """Whether ``iterable`` is an IterableDataset read in the main process (directly, or by a
    DataLoader without workers), whose first items are checked for draws from the global RNGs
    (a generator or a zip of loaders is not: a replay of one is exact unless it keeps state
    built from those numbers, which is an IterableDataset's way, a shuffle buffer's)."""
    import sys

    data = sys.modules.get("torch.utils.data")
    if data is None:
        return False
    if is_dataloader(iterable):
        in_main = not getattr(iterable, "num_workers", 0)
        return in_main and isinstance(iterable.dataset, data.IterableDataset)
    return isinstance(iterable, data.IterableDataset)


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


def fetches_ahead(loader: Any) -> bool:
    """Whether ``loader`` may fetch batches ahead of the loop: a DataLoader subclass with an
    ``__iter__`` of its own (a plain DataLoader without workers fetches each batch when asked;
    keeping the RNG states before each fetch costs tens of microseconds a batch)."""
    from torch.utils.data import DataLoader

    return type(loader).__iter__ is not DataLoader.__iter__


def ahead_plan(rec: "Recorder", target: dict[str, Any]) -> dict[int, Any]:
    """The fetch states of a replay of a loop whose loader had fetched batches ahead at the
    checkpoint: each such batch's recorded state, and for the next one the checkpoint's own
    (the recording fetched it right after the checkpoint, when the loop asked for an item)."""
    fetch = {int(p): s for p, s in target["fetched"].items()}
    state = rec._state or {}
    if target.get("next") is not None and "rng" in state:
        fetch.setdefault(int(target["next"]), state["rng"]["global"])
    return fetch


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
    workers: Any = None  # a DataLoader's workers' RNG states (workers.WorkerStates)
    feed: Any = None  # a DataLoader's sampler iterator without workers (workers.SamplerIter)
    extra: dict[str, Any] = field(default_factory=dict)

    def position(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "index": self.index,
            "entry": self.entry,
            "at_item": self.at_item,
            "workers": None if self.workers is None else self.workers.position(),
            # a wrapper that fetched batches ahead of the loop (accelerate's DataLoaderShard):
            # the main process's RNG states before those fetches, and the next batch's position
            "fetched": None if self.feed is None else self.feed.fetch_states(self.index) or None,
            "next": None if self.feed is None else self.feed.pos,
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
        loader = is_dataloader(iterable)
        sampler = workers.install(iterable) if loader else None
        if loader:
            rec.note_loader(name, iterable)
        arriving = target is not None and rec.is_arrival(frame)
        if target is not None:
            rec.restore_rng(target["entry"], iterable)
        frame.entry = rec.capture_rng(iterable)
        n_workers = getattr(iterable, "num_workers", 0) if loader else 0
        if sampler is not None and n_workers > 0:
            frame.workers = rec.worker_states(iterable, name)
            frame.workers.enter(iterable)
        # the deepest open loop of the checkpoint stopped between items: skip what it fetched;
        # an outer one is inside an item: skip the items before it, then fetch that one
        fetched = 0 if target is None else int(target["index"])
        skip = 0 if target is None else fetched - (0 if arriving else 1)
        if n_workers:
            rec.wait_for_writes()  # no background write in flight while workers fork
        after_fetch: Any = None
        if sampler is not None:
            if target is None:
                plan: dict[str, Any] = {"mark": frame.workers is not None}
                if frame.workers is not None:  # start states a persistent worker still awaits
                    plan.update(start=frame.workers.pending, workers=n_workers)
            elif frame.workers is not None:
                entry = target["entry"]
                plan = workers.replay_plan(
                    target.get("workers"),
                    fetched,
                    arriving,
                    lambda: rec.restore_rng(entry, iterable),
                )
                frame.workers.pending = plan["start"]
            else:
                plan = {"skip": skip}
                if arriving and target.get("fetched"):
                    plan["fetch"] = ahead_plan(rec, target)
            if not n_workers:  # a wrapper's own __iter__ may fetch ahead (DataLoaderShard)
                plan["main"] = rec.recording and fetches_ahead(iterable)
            sampler.plan = plan
            try:
                it = _iterate(iterable)
            finally:
                sampler.plan = {}
            if plan.get("skip") and sampler.current is not None:
                sampler.current.prime()  # the sampler's draws, before the state is restored
            drop = int(plan.get("drop", 0))
            if not n_workers:
                frame.feed = sampler.current
            current = sampler.current
            if plan.get("fetch") and current is not None and not current.fetch:
                # the wrapper fetched, from the checkpoint's RNG states, the batch the
                # recording fetched right after the checkpoint: the steps go on from there
                after_fetch = rng.capture_global()
        else:
            it = _iterate(iterable)
            drop = skip
        for i in range(drop):
            item = next(it, _END)
            if item is _END:
                rec.loop_too_short(frame, skip, i)
            if frame.workers is not None:
                frame.workers.take(item, skip - drop + i)
        check = rec.recording and rec.unskippable_unchecked(name) and _may_draw(iterable)
        frame.index = skip
        if arriving:
            rec.arrive(frame)
            if after_fetch is not None:
                rng.restore_global(after_fetch)
            target = None
        while True:
            rec.boundary(frame)
            before = rng.capture_global() if check else None
            try:
                item = next(it)
            except StopIteration:
                if target is not None:
                    rec.loop_too_short(frame, frame.index + 1, frame.index)
                break
            if before is not None:
                check = rec.note_draws(name, iterable, before, frame.index)
            if frame.workers is not None:
                item = frame.workers.take(item, frame.index)
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
