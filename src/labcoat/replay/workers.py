"""A recorded DataLoader that draws exactly what the bare one draws, and skips batches exactly.

What a bare ``DataLoader`` draws, in order (torch's ``_BaseDataLoaderIter`` and
``RandomSampler``): when its iterator is made, the workers' ``base_seed`` (one int64 from the
loader's ``generator``, else torch's default generator); when the first index is asked for
(while the iterator is made, with workers, which prefetch; at the first ``next`` without), the
sampler's seed (``RandomSampler`` without a generator draws one int64 from the default
generator and shuffles with a private generator seeded by it). Worker ``w`` seeds ``random``
and torch with ``base_seed + w`` and NumPy from both, then loads batches ``w, w + N, w + 2N, …``
(the iterator hands batches out round robin, in order), its RNGs advancing with every item.

:class:`RecordedSampler` wraps the loader's batch sampler without drawing anything itself: its
iterator starts the wrapped sampler lazily, as the bare loader does, so the recorded run draws
the same order and the same seeds as the bare run. With workers, every batch's indices carry a
mark (they unpickle in the worker as the plain list, setting the worker's RNGs first on
replay), and the worker's ``collate_fn`` sends back with the batch its RNG states after loading
it (:class:`Carried`, unwrapped by ``rec.loop``); the dataset stays the user's object. The main
process keeps each worker's states after its last batches, and a checkpoint stores them
(:class:`WorkerStates`).

A replay from a checkpoint taken after ``k`` batches restores the RNGs the loop had when it
was entered (so ``base_seed`` and the order come out the same), skips the first ``k - k mod N``
batches' indices without loading them (a multiple of ``N``: each remaining batch goes to the
worker that loaded it when recorded), fetches and drops the ``k mod N`` after them, and gives
the first batch each worker gets the RNG states that worker had after its previous batch; each
worker then carries on as it did in the recording. Persistent workers keep their RNGs from
one epoch to the next and a reset iterator draws no ``base_seed``: their states are kept across
epochs (the first batches of an epoch start from the last epoch's), the start states wait for
the batch each worker gets next (maybe in the next epoch), and a replay's new iterator puts the
loop's entry RNGs back just before the sampler draws, as the reset iterator drew. Without
workers the dataset draws from the main process's RNGs, which the checkpoint restores: the
skipped batches are simply not loaded.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any, Iterator

_END = object()
AHEAD = 4  # batches a trainer may fetch ahead of its steps whose fetch states are kept
_PENDING: list[bool] = [False]  # in a worker: the batch being fetched is marked


def _arrive(index: Any, start: Any) -> Any:
    """A marked batch's indices arriving in a worker (unpickled from the index queue, right
    before the worker loads them): put its start states in place (on replay), flag the batch
    for :class:`TrackedCollate`, and hand the dataset the plain indices."""
    from torch.utils.data import get_worker_info

    if get_worker_info() is not None:
        if start is not None:
            restore_worker(start)
        _PENDING[0] = True
    return index


class Batch(list):
    """A batch's indices with its position in the epoch and, on replay, the RNG states its
    worker takes before loading it; unpickles in the worker as a plain list (:func:`_arrive`)."""

    labcoat_pos: int = 0
    labcoat_start: Any = None

    def __reduce__(self) -> Any:
        return _arrive, (list(self), self.labcoat_start)


class Index(int):
    """One index so marked (a DataLoader with ``batch_size=None``); unpickles as an int."""

    labcoat_pos: int = 0
    labcoat_start: Any = None

    def __reduce__(self) -> Any:
        return _arrive, (int(self), self.labcoat_start)


class Carried:
    """A batch as a worker returns it, with the worker's RNG states after loading it."""

    __slots__ = ("value", "state", "worker")

    def __init__(self, value: Any, state: Any, worker: int):
        self.value, self.state, self.worker = value, state, worker

    def pin_memory(self, *args: Any) -> "Carried":  # the pin-memory thread pins what it holds
        from torch.utils.data._utils.pin_memory import pin_memory

        return Carried(pin_memory(self.value, *args), self.state, self.worker)


def capture_worker() -> dict[str, Any]:
    """This worker's RNG states, compact: torch's as bytes (a tensor would travel to the main
    process through shared memory, which costs more than the batch)."""
    import random

    import torch

    state: dict[str, Any] = {"python": random.getstate()}
    np = sys.modules.get("numpy")
    if np is not None:
        state["numpy"] = np.random.get_state()
    state["torch"] = torch.get_rng_state().numpy().tobytes()
    return state


def restore_worker(state: dict[str, Any]) -> None:
    """Put back what :func:`capture_worker` returned."""
    import random

    import torch

    random.setstate(state["python"])
    if "numpy" in state:
        import numpy as np

        np.random.set_state(state["numpy"])
    torch.set_rng_state(torch.frombuffer(bytearray(state["torch"]), dtype=torch.uint8))


class TrackedCollate:
    """The loader's ``collate_fn``; after a flagged batch, wraps it with the worker's states."""

    def __init__(self, fn: Any):
        self.fn = fn

    def __call__(self, data: Any) -> Any:
        out = self.fn(data)
        if _PENDING[0]:
            from torch.utils.data import get_worker_info

            _PENDING[0] = False
            return Carried(out, capture_worker(), get_worker_info().id)
        return out

    def __getattr__(self, name: str) -> Any:
        if name == "fn":
            raise AttributeError(name)
        return getattr(self.fn, name)


class SamplerIter:
    """One epoch's indices: starts the wrapped sampler on the first request (or on
    :meth:`prime`), skips ``skip`` batches' indices, and marks each batch."""

    def __init__(self, inner: Any, batched: bool, plan: dict[str, Any]):
        self.inner = inner
        self.batched = batched
        self.skip = int(plan.get("skip", 0))
        self.mark = bool(plan.get("mark"))
        # worker -> the states its next batch starts from (shared: a persistent loader's
        # workers may get their first batch only in the next epoch)
        self.start: dict[int, Any] = plan.get("start") or {}
        self.n = int(plan.get("workers") or 1)
        self.reenter = plan.get("reenter")  # puts back the loop's entry RNGs (see replay_plan)
        # without workers the dataset draws from the main process's RNGs as each batch is
        # fetched: their states right before the last few fetches (a loader wrapped by a
        # trainer fetches ahead of its steps), and on replay the states to fetch some from
        self.main = bool(plan.get("main"))
        self.fetch: dict[int, Any] = {int(p): v for p, v in (plan.get("fetch") or {}).items()}
        self.before: dict[int, Any] = {}
        self.it: Iterator[Any] | None = None
        self.pos = self.skip
        self.ahead: Any = _END

    def prime(self) -> None:
        """Start the wrapped sampler now (its draws happen here, as in the recording)."""
        if self.it is None:
            if self.reenter is not None:
                # once only, and dropped: it holds the loader, which holds this iterator; a
                # loader left in a reference cycle is freed only by the garbage collector, and
                # torch's shutdown of persistent workers from there waits out a 5 s join per
                # worker (the bare loader is freed, its workers stopped, when it goes)
                reenter, self.reenter = self.reenter, None
                reenter()
            self.it = iter(self.inner)
            for _ in range(self.skip):
                if next(self.it, _END) is _END:
                    break
            self.ahead = next(self.it, _END)

    def __iter__(self) -> "SamplerIter":
        return self

    def fetch_states(self, used: int) -> dict[int, Any]:
        """The main process's RNG states right before each batch fetched past the ``used``
        ones (a prefetching wrapper's): a replay fetches them from the same states."""
        return {p: s for p, s in self.before.items() if p >= used}

    def __next__(self) -> Any:
        self.prime()
        item, self.ahead = self.ahead, _END
        if item is _END:
            assert self.it is not None
            item = next(self.it, _END)
            if item is _END:
                raise StopIteration
        pos = self.pos
        self.pos += 1
        if self.main or self.fetch:
            from labcoat.replay import rng

            if pos in self.fetch:
                rng.restore_global(self.fetch.pop(pos))
            if self.main:
                self.before[pos] = rng.capture_global()
                self.before.pop(pos - AHEAD, None)
        if not self.mark:
            return item
        out: Any = Batch(item) if self.batched else Index(item)
        out.labcoat_pos = pos
        out.labcoat_start = self.start.pop(pos % self.n, None) if self.start else None
        return out


class RecordedSampler:
    """A DataLoader's batch sampler (or sampler) under ``labcoat.replayable``; draws nothing of its
    own. ``rec.loop`` sets :attr:`plan` around ``iter(loader)``: how many batches to skip,
    whether to mark batches for their workers' states, and the start states on replay."""

    def __init__(self, inner: Any, batched: bool):
        self.inner = inner
        self.batched = batched
        self.plan: dict[str, Any] = {}
        self.current: SamplerIter | None = None

    def __len__(self) -> int:
        return len(self.inner)

    def __iter__(self) -> SamplerIter:
        # a DataLoader iterator with workers calls iter() twice (its __init__, then _reset)
        self.current = SamplerIter(self.inner, self.batched, self.plan)
        return self.current

    def __getattr__(self, name: str) -> Any:
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)


class WorkerStates:
    """For one epoch of a loader with ``N`` workers: each worker's RNG states after its last
    two batches the training took, and a check that batch ``p`` came from worker ``p mod N``."""

    def __init__(self, loader: Any, name: str):
        self.n = int(loader.num_workers)
        self.name = name
        self.slots: dict[int, list[Any]] = {}  # worker -> [after its batch before last, after last]
        self.warned = False
        # persistent workers: the iterator of this epoch is the last epoch's, reset (no new
        # base_seed, and the workers' RNGs run on from their last batches)
        self.reset = False
        self.pending: dict[int, Any] = {}  # on replay: worker -> the states it starts from

    def enter(self, loader: Any) -> None:
        """The loop starts an epoch of ``loader``."""
        self.reset = getattr(loader, "_iterator", None) is not None

    def take(self, item: Any, pos: int) -> Any:
        """The batch the training gets; keeps the state it carried."""
        if not isinstance(item, Carried):
            return item
        if item.worker != pos % self.n and not self.warned:
            self.warned = True
            warnings.warn(
                f"labcoat.replayable: loop {self.name!r}: batch {pos} came from worker "
                f"{item.worker}, not {pos % self.n} (in_order=False, or a worker stopped "
                "early?); a replay from a checkpoint inside this epoch may load its batches with "
                "other random numbers",
                RuntimeWarning,
                stacklevel=3,
            )
        last = self.slots.get(item.worker, [None, None])[1]
        self.slots[item.worker] = [last, item.state]
        return item.value

    def position(self) -> dict[str, Any]:
        slots = {w: list(v) for w, v in self.slots.items()}
        return {"n": self.n, "slots": slots, "reset": self.reset}


def replay_plan(
    saved: dict[str, Any] | None, fetched: int, arriving: bool, reenter: Any = None
) -> dict[str, Any]:
    """What the sampler does on a replay of a loop that had fetched ``fetched`` batches at the
    checkpoint: ``skip`` (never loaded), ``drop`` (fetched and dropped) and the start states
    of the first batch each worker gets (batch ``p`` starts from its worker's state after batch
    ``p - N``, which for ``p < N`` of a persistent loader's later epoch is its last epoch's).

    A persistent loader's later epoch reused its iterator, drawing no ``base_seed``; the
    replay makes a new one, which does: ``reenter`` (putting back the loop's entry RNGs) runs
    just before the sampler draws, so the order comes out as recorded."""
    target = fetched if arriving else fetched - 1  # an outer loop refetches its current item
    if not saved:
        return {"skip": target, "drop": 0}
    n = int(saved["n"])
    slots = saved["slots"]
    base = target - target % n
    start = {}
    reset = bool(saved.get("reset"))
    if base or reset:
        for p in range(base, base + n):
            prev, last = slots.get(p % n, [None, None])
            state = prev if p < fetched else last  # batch p itself was taken: the one before
            if state is not None:
                start[p % n] = state
    plan = {"skip": base, "drop": target - base, "mark": True, "start": start, "workers": n}
    if reset:
        plan["reenter"] = reenter
    return plan


def install(loader: Any) -> RecordedSampler | None:
    """Wrap a map-style DataLoader's batch sampler and collate_fn (once; the dataset stays
    the user's); returns the sampler, or None for an IterableDataset."""
    from torch.utils.data import IterableDataset

    from labcoat.errors import InputError

    # accelerate's prepared loader (DataLoaderShard) iterates the DataLoader it wraps
    loader = getattr(loader, "base_dataloader", None) or loader
    if isinstance(loader.dataset, IterableDataset):
        return None
    current = loader.batch_sampler if loader.batch_sampler is not None else loader.sampler
    if isinstance(current, RecordedSampler):
        return current
    if getattr(loader, "_iterator", None) is not None:
        raise InputError(
            "loader: this DataLoader keeps persistent workers that started before "
            "labcoat.replayable saw it; pass it to rec.loop from its first epoch"
        )
    # DataLoader refuses these assignments after __init__ to protect users; the wrappers keep
    # every behaviour (length, indices, attributes) and only carry the workers' states
    batched = loader.batch_sampler is not None
    wrapper = RecordedSampler(current, batched)
    object.__setattr__(loader, "batch_sampler" if batched else "sampler", wrapper)
    loader.collate_fn = TrackedCollate(loader.collate_fn)
    return wrapper


def note_unskippable(name: str, iterable: Any) -> None:
    """Say once that ``iterable`` draws from the main process's global RNGs while its items are
    fetched (so a replay, which fetches and drops the items before the checkpoint without the
    training's draws in between, is exact only if its later items do not depend on them)."""
    what = type(getattr(iterable, "dataset", iterable)).__name__
    warnings.warn(
        f"labcoat.replayable: loop {name!r}: IterableDataset {what} draws from the global random "
        "number generators in the main process while its items are fetched; a replay fetches and "
        "drops the items before its checkpoint without the training's draws in between, so it "
        "is exact only if what it yields later does not depend on those numbers (a shuffle "
        "buffer does); load it in DataLoader workers (num_workers > 0), or give it a "
        "generator of its own",
        RuntimeWarning,
        stacklevel=4,
    )


def same_global(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two :func:`~labcoat.replay.rng.capture_global` states are equal."""
    if a["python"] != b["python"]:
        return False
    np = sys.modules.get("numpy")
    if "numpy" in a and np is not None:
        if not all(np.array_equal(x, y) for x, y in zip(a["numpy"], b.get("numpy", ()))):
            return False
    if "torch" in a:
        import torch

        if not torch.equal(a["torch"], b["torch"]):
            return False
    return True
